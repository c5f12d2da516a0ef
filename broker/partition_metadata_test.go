package broker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partition.metadata in Kafka's format parses; anything else (empty, cut short, another
// version, a bad or zero id, trailing garbage) is malformed, never a panic.
func TestParsePartitionMetadata(t *testing.T) {
	id := metadata.Uuid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	good := partitionMetadata(id)
	for _, ok := range []string{string(good), "version: 0\ntopic_id: " + id.String(), "version:  0\ntopic_id:\t" + id.String() + "\n\n"} {
		if got, err := parsePartitionMetadata("d", []byte(ok)); err != nil || got != id {
			t.Errorf("%q: %v %v", ok, got, err)
		}
	}
	bad := []string{"", "\n", "version: 0\n", "version: 1\ntopic_id: " + id.String() + "\n",
		"topic_id: " + id.String() + "\nversion: 0\n", "version: 0\ntopic_id: " + metadata.ZeroUuid.String() + "\n",
		"version: 0\ntopic_id: not-a-uuid\n", "version: 0\ntopic_id: " + id.String() + "\nextra\n"}
	for n := 1; n < len(good)-1; n++ {
		bad = append(bad, string(good[:n])) // every cut of a torn write
	}
	for _, b := range bad {
		if got, err := parsePartitionMetadata("d", []byte(b)); !errors.Is(err, errMalformedPartitionMetadata) {
			t.Errorf("%q: %v %v, want malformed", b, got, err)
		}
	}
}

func FuzzParsePartitionMetadata(f *testing.F) {
	f.Add(partitionMetadata(metadata.Uuid{7, 7, 7}))
	f.Add([]byte("version: 0\ntopic_id: "))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := parsePartitionMetadata("d", b)
		if err != nil {
			if !errors.Is(err, errMalformedPartitionMetadata) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		if again, err := parsePartitionMetadata("d", partitionMetadata(id)); err != nil || again != id || id == metadata.ZeroUuid {
			t.Fatalf("%v parsed from %q does not round-trip: %v %v", id, b, again, err)
		}
	})
}

// partition.metadata costs a new replica no write of its own: it is written with the
// first segment, before the first record. After a crash, a replica whose file is
// missing, empty, torn or garbage opens (never offline) with its records, its topic id
// taken from the metadata and the file rewritten; a valid id of another topic still
// marks the directory an earlier topic's, which is removed.
func TestPartitionMetadataAtFirstAppendAndMalformedAtOpen(t *testing.T) {
	const topic = "pmeta"
	damages := []struct {
		name   string
		damage func(path string, good []byte) error
	}{
		{"missing", func(path string, _ []byte) error { return os.Remove(path) }},
		{"empty", func(path string, _ []byte) error { return os.Truncate(path, 0) }},
		{"torn", func(path string, good []byte) error { return os.Truncate(path, int64(len(good))-6) }},
		{"garbage", func(path string, _ []byte) error { return os.WriteFile(path, []byte("\x00\x00\x00\x00"), 0o644) }},
		{"another topic's id", func(path string, _ []byte) error {
			return os.WriteFile(path, partitionMetadata(metadata.Uuid{9, 9, 9}), 0o644)
		}},
	}
	written, partitions := int32(len(damages)), int32(len(damages)+1) // the last one stays empty
	dir := t.TempDir()
	props := map[string]string{"broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "200"}
	b := startTestBroker(t, dir, props)
	mustCreateTopic(t, newAdmin(t, b), topic, partitions, nil)
	waitReplicas(t, b, int(partitions))
	pmPath := func(p int32) string {
		return filepath.Join(dir, "logs", segment.PartitionDirName(topic, p), partitionMetadataFile)
	}
	for p := int32(0); p < partitions; p++ {
		if _, err := os.Stat(pmPath(p)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("partition %d: partition.metadata written at creation: %v", p, err)
		}
	}
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < written; p++ {
		if err := cl.ProduceSync(testContext(t), &kgo.Record{Topic: topic, Partition: p, Value: []byte("0")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	id := b.machine.Image().Topic(topic).ID
	good := partitionMetadata(id)
	for p := int32(0); p < written; p++ {
		if got, err := os.ReadFile(pmPath(p)); err != nil || string(got) != string(good) {
			t.Fatalf("partition %d: partition.metadata after the first append: %q %v, want %q", p, got, err, good)
		}
	}
	if _, err := os.Stat(pmPath(written)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a partition without records has a partition.metadata: %v", err)
	}
	b.Kill() // no clean shutdown: every partition.metadata is read at the next start
	for p, d := range damages {
		if err := d.damage(pmPath(int32(p)), good); err != nil {
			t.Fatal(err)
		}
	}
	b = startTestBroker(t, dir, props)
	waitReplicas(t, b, int(partitions))
	for p, d := range damages {
		if _, off := b.offline.get(topic, int32(p)); off {
			t.Fatalf("%s: the replica is offline", d.name)
		}
		leo := b.partitions.get(topic, int32(p)).State().LogEndOffset
		if want := int64(1); d.name == "another topic's id" {
			if leo != 0 {
				t.Fatalf("%s: the earlier topic's directory was kept: log end offset %d", d.name, leo)
			}
			continue
		} else if leo != want {
			t.Fatalf("%s: log end offset %d, want %d", d.name, leo, want)
		}
		if got, err := os.ReadFile(pmPath(int32(p))); err != nil || string(got) != string(good) {
			t.Fatalf("%s: partition.metadata not rewritten: %q %v", d.name, got, err)
		}
	}
	consumeN(t, b, topic, 1) // partition 0, whose file was missing, reads back
}

// A replica no offset checkpoint names is opened as a new one (its directory made
// first, nothing looked up) only when its directory does not exist: after a crash before
// the first checkpoint, a directory with records is still recovered, and one of an
// earlier topic of the same name (another topic id) is still removed.
func TestReplicaWithoutCheckpointLineKeepsItsDirectory(t *testing.T) {
	const topic = "noline"
	dir := t.TempDir()
	props := map[string]string{"broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "200"}
	b := startTestBroker(t, dir, props)
	mustCreateTopic(t, newAdmin(t, b), topic, 2, nil)
	waitReplicas(t, b, 2)
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 2; p++ {
		if err := cl.ProduceSync(testContext(t), &kgo.Record{Topic: topic, Partition: p, Value: []byte("0")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	b.Kill()
	logs := filepath.Join(dir, "logs")
	ents, err := os.ReadDir(logs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents { // no checkpoint line names any replica: a crash before the first
		if !e.IsDir() && strings.HasSuffix(e.Name(), "checkpoint") {
			if err := os.Remove(filepath.Join(logs, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	earlier := filepath.Join(logs, segment.PartitionDirName(topic, 1), partitionMetadataFile)
	if err := os.WriteFile(earlier, partitionMetadata(metadata.Uuid{9, 9, 9}), 0o644); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, props)
	waitReplicas(t, b, 2)
	if leo := b.partitions.get(topic, 0).State().LogEndOffset; leo != 1 {
		t.Fatalf("a replica's records without a checkpoint line: log end offset %d, want 1", leo)
	}
	if leo := b.partitions.get(topic, 1).State().LogEndOffset; leo != 0 {
		t.Fatalf("an earlier topic's directory was kept: log end offset %d, want 0", leo)
	}
	consumeN(t, b, topic, 1)
}
