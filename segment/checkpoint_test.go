package segment

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// checkpointDirEntries lists the names in dir.
func checkpointDirEntries(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestOffsetCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ReplicationOffsetCheckpointFile)

	// Topics with '-', '.' and '_', partitions whose decimal order differs from their
	// string order, offsets up to int64's limits.
	offsets := map[TopicPartition]int64{}
	topics := []string{"orders", "orders-eu", "orders.eu", "a", "__consumer_offsets", "x-1", "my.topic-with_mixed.chars"}
	for ti, topic := range topics {
		for p := range int32(40) {
			offsets[TopicPartition{topic, p}] = int64(ti)*1_000_000 + int64(p)*37
		}
	}
	offsets[TopicPartition{"big", 2147483647}] = 9223372036854775807
	offsets[TopicPartition{"big", 0}] = 0
	offsets[TopicPartition{"neg", 0}] = -1 // Kafka writes -1 for an unknown offset

	if err := WriteOffsetCheckpoint(path, offsets); err != nil {
		t.Fatal(err)
	}
	got, err := ReadOffsetCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, offsets) {
		t.Fatalf("read back %d entries, wrote %d; differ", len(got), len(offsets))
	}

	// The exact text: version 0, the count, then "topic partition offset" lines sorted by
	// topic (bytewise) and partition (numerically), each ending in '\n'.
	keys := slices.SortedFunc(maps.Keys(offsets), func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return int(a.Partition) - int(b.Partition)
	})
	var want strings.Builder
	fmt.Fprintf(&want, "0\n%d\n", len(offsets))
	for _, k := range keys {
		fmt.Fprintf(&want, "%s %d %d\n", k.Topic, k.Partition, offsets[k])
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != want.String() {
		t.Fatalf("checkpoint text:\n%s\nwant:\n%s", data, want.String())
	}
	lines := strings.Split(string(data), "\n")
	if lines[2] != "__consumer_offsets 0 4000000" || lines[3] != "__consumer_offsets 1 4000037" || lines[11] != "__consumer_offsets 9 4000333" || lines[12] != "__consumer_offsets 10 4000370" {
		t.Fatalf("not sorted by topic then partition number: %q", lines[2:13])
	}
	if names := checkpointDirEntries(t, dir); !slices.Equal(names, []string{ReplicationOffsetCheckpointFile}) {
		t.Fatalf("files after write: %v", names)
	}

	// A second write replaces the first entirely, over a stale temporary file left by a
	// crash, and leaves no temporary file.
	if err := os.WriteFile(path+".tmp", []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	small := map[TopicPartition]int64{{"t", 3}: 42, {"t", 1}: 7}
	if err := WriteOffsetCheckpoint(path, small); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "0\n2\nt 1 7\nt 3 42\n" {
		t.Fatalf("rewritten checkpoint %q", data)
	}
	if got, err := ReadOffsetCheckpoint(path); err != nil || !maps.Equal(got, small) {
		t.Fatalf("read %v %v", got, err)
	}
	if names := checkpointDirEntries(t, dir); !slices.Equal(names, []string{ReplicationOffsetCheckpointFile}) {
		t.Fatalf("files after rewrite: %v", names)
	}

	// An empty map is "0\n0\n" and reads back empty.
	if err := WriteOffsetCheckpoint(path, nil); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "0\n0\n" {
		t.Fatalf("empty checkpoint %q", data)
	}
	if got, err := ReadOffsetCheckpoint(path); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("empty checkpoint read as %v %v", got, err)
	}
}

func TestOffsetCheckpointMissingFileIsEmpty(t *testing.T) {
	got, err := ReadOffsetCheckpoint(filepath.Join(t.TempDir(), RecoveryPointOffsetCheckpointFile))
	if err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v %v", got, err)
	}
}

func TestOffsetCheckpointAcceptsKafkaFiles(t *testing.T) {
	// Kafka does not sort its lines; any order reads.
	path := filepath.Join(t.TempDir(), LogStartOffsetCheckpointFile)
	if err := os.WriteFile(path, []byte("0\n3\nb-topic 2 100\na.topic 0 5\nb-topic 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadOffsetCheckpoint(path)
	want := map[TopicPartition]int64{{"b-topic", 2}: 100, {"a.topic", 0}: 5, {"b-topic", 0}: 0}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("read %v %v, want %v", got, err, want)
	}
}

// A 0-byte file reads as an empty checkpoint, as Kafka's CheckpointFile reads it.
func TestOffsetCheckpointEmptyFileIsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), ReplicationOffsetCheckpointFile)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadOffsetCheckpoint(path); err != nil || len(got) != 0 {
		t.Fatalf("empty file read as %v %v", got, err)
	}
}

func TestOffsetCheckpointCorrupt(t *testing.T) {
	tests := []struct {
		name, data string
	}{
		{"bad version", "1\n0\n"},
		{"non-numeric version", "v0\n0\n"},
		{"version only", "0\n"},
		{"count missing entries", "0\n2\nt 0 1\n"},
		{"count missing extra entry", "0\n1\nt 0 1\nt 1 2\n"},
		{"trailing blank line", "0\n1\nt 0 1\n\n"},
		{"negative count", "0\n-1\n"},
		{"non-numeric count", "0\none\nt 0 1\n"},
		{"non-numeric partition", "0\n1\nt p 1\n"},
		{"non-numeric offset", "0\n1\nt 0 off\n"},
		{"fractional offset", "0\n1\nt 0 1.5\n"},
		{"partition overflows int32", "0\n1\nt 2147483648 1\n"},
		{"negative partition", "0\n1\nt -1 5\n"},
		{"extra field", "0\n1\nt 0 1 2\n"},
		{"missing field", "0\n1\nt 0\n"},
		{"double space", "0\n1\nt  0 1\n"},
		{"empty topic", "0\n1\n 0 1\n"},
		{"tab separated", "0\n1\nt\t0\t1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ReplicationOffsetCheckpointFile)
			if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadOffsetCheckpoint(path)
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("read %q: %v %v, want ErrCorruptCheckpoint", tt.data, got, err)
			}
			if got != nil {
				t.Fatalf("read %q returned entries %v with the error", tt.data, got)
			}
		})
	}
}

func TestOffsetCheckpointRejectsInvalidTopics(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ReplicationOffsetCheckpointFile)
	for _, topic := range []string{"", "has space", "new\nline"} {
		err := WriteOffsetCheckpoint(path, map[TopicPartition]int64{{"ok", 0}: 1, {topic, 0}: 1})
		if !errors.Is(err, ErrInvalidName) {
			t.Fatalf("topic %q: %v, want ErrInvalidName", topic, err)
		}
	}
	if names := checkpointDirEntries(t, dir); len(names) != 0 {
		t.Fatalf("a refused write left files: %v", names)
	}
}

func TestPartitionDirNames(t *testing.T) {
	valid := []struct {
		name      string
		topic     string
		partition int32
	}{
		{"t-0", "t", 0},
		{"orders-12", "orders", 12},
		{"orders-eu-west-3", "orders-eu-west", 3},
		{"a.b_c-d-7", "a.b_c-d", 7},
		{"__consumer_offsets-49", "__consumer_offsets", 49},
		{"t-2147483647", "t", 2147483647},
		// Split at the last '-', as Kafka's parseTopicPartitionName does: this is topic
		// "t-" (a legal topic name), partition 1, not topic "t" with partition -1.
		{"t--1", "t-", 1},
		{"-t-3", "-t", 3},
		{"1-2", "1", 2},
	}
	for _, tt := range valid {
		t.Run(tt.name, func(t *testing.T) {
			topic, partition, err := ParsePartitionDirName(tt.name)
			if err != nil || topic != tt.topic || partition != tt.partition {
				t.Fatalf("ParsePartitionDirName(%q) = %q, %d, %v; want %q, %d", tt.name, topic, partition, err, tt.topic, tt.partition)
			}
			if got := PartitionDirName(tt.topic, tt.partition); got != tt.name {
				t.Fatalf("PartitionDirName(%q, %d) = %q, want %q", tt.topic, tt.partition, got, tt.name)
			}
		})
	}

	invalid := []string{
		"",
		"t",            // no '-'
		"-",            // neither topic nor partition
		"-1",           // no topic
		"t-",           // no partition
		"t-x",          // not a number
		"t-1x",         // trailing garbage
		"t-0x1",        // not decimal
		"t-1.5",        // not an integer
		"t-+1",         // sign
		"t- 1",         // space
		"t-2147483648", // overflows int32
		"t-99999999999999999999",
		"orders-eu", // the last '-' is followed by letters
	}
	for _, name := range invalid {
		t.Run("invalid "+name, func(t *testing.T) {
			topic, partition, err := ParsePartitionDirName(name)
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("ParsePartitionDirName(%q) = %q, %d, %v; want ErrInvalidName", name, topic, partition, err)
			}
		})
	}
}
