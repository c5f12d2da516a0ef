package segment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteSortedOffsetCheckpoint: the sorted writer writes the very file
// WriteOffsetCheckpoint writes from a map, which ReadOffsetCheckpoint reads back, and
// refuses the topic names WriteOffsetCheckpoint refuses.
func TestWriteSortedOffsetCheckpoint(t *testing.T) {
	dir := t.TempDir()
	offsets := map[TopicPartition]int64{{"b", 2}: 7, {"a", 10}: -1, {"a", 9}: 1 << 40, {"b.c_d-e", 0}: 0}
	keys := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		keys = append(keys, tp)
	}
	SortTopicPartitions(keys)
	vals := make([]int64, len(keys))
	for i, tp := range keys {
		vals[i] = offsets[tp]
	}
	fromMap, sorted := filepath.Join(dir, "map"), filepath.Join(dir, "sorted")
	if err := WriteOffsetCheckpoint(fromMap, offsets); err != nil {
		t.Fatal(err)
	}
	if err := WriteSortedOffsetCheckpoint(sorted, keys, vals); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(fromMap)
	got, _ := os.ReadFile(sorted)
	if !bytes.Equal(got, want) {
		t.Fatalf("sorted writer wrote\n%s\nthe map writer\n%s", got, want)
	}
	back, err := ReadOffsetCheckpoint(sorted)
	if err != nil || len(back) != len(offsets) {
		t.Fatalf("read back %v, %v", back, err)
	}
	for tp, o := range offsets {
		if back[tp] != o {
			t.Fatalf("%v: read %d, wrote %d", tp, back[tp], o)
		}
	}
	for _, bad := range []string{"", "a b", "a\nb"} {
		err := WriteSortedOffsetCheckpoint(filepath.Join(dir, "bad"), []TopicPartition{{bad, 0}}, []int64{1})
		if !errors.Is(err, ErrInvalidName) {
			t.Fatalf("topic %q: %v, want ErrInvalidName", bad, err)
		}
	}
	if err := WriteSortedOffsetCheckpoint(filepath.Join(dir, "empty"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadOffsetCheckpoint(filepath.Join(dir, "empty")); err != nil || len(back) != 0 {
		t.Fatalf("empty: %v, %v", back, err)
	}
}
