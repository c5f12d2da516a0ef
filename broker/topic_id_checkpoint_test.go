package broker

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
)

// TestTopicIDCheckpoint: the ids written read back; a missing file is empty, a
// malformed or truncated one an error (the start then reads every partition.metadata).
func TestTopicIDCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), topicIDCheckpointFile)
	if ids, err := readTopicIDCheckpoint(path); err != nil || len(ids) != 0 {
		t.Fatalf("missing file: %v, %v", ids, err)
	}
	ids := map[segment.TopicPartition]metadata.Uuid{
		{Topic: "a", Partition: 0}:     {1, 2, 3},
		{Topic: "a", Partition: 7}:     {4},
		{Topic: "b.c-d", Partition: 2}: {255, 254},
	}
	if err := writeTopicIDCheckpoint(path, ids); err != nil {
		t.Fatal(err)
	}
	got, err := readTopicIDCheckpoint(path)
	if err != nil || !maps.Equal(got, ids) {
		t.Fatalf("read back %v, %v; wrote %v", got, err, ids)
	}
	data, _ := os.ReadFile(path)
	for _, bad := range []string{"", "1\n0\n", "0\n2\na 0 AQIDAAAAAAAAAAAAAAAAAA\n", "0\n1\na x AQIDAAAAAAAAAAAAAAAAAA\n", "0\n1\na 0 not-a-uuid\n", string(data[:len(data)-5])} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := readTopicIDCheckpoint(path); err == nil {
			t.Errorf("%q read as %v", bad, got)
		}
	}
}
