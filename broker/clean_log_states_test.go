package broker

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// TestCleanLogStatesFile: the descriptions written read back with the marker's broker
// epoch; a missing file, or one of another close (another epoch: a build without the
// descriptions ran in between), is none; a file cut short, with a byte changed or with
// bytes after it is an error (the start then loads every log from its files).
func TestCleanLogStatesFile(t *testing.T) {
	states := []cleanLogState{
		{segment.TopicPartition{Topic: "a", Partition: 0}, []byte{1, 2, 3}},
		{segment.TopicPartition{Topic: "a", Partition: 7}, []byte{4}},
		{segment.TopicPartition{Topic: "b.c-d", Partition: 1<<31 - 1}, bytes.Repeat([]byte{9}, 300)},
	}
	data := encodeCleanLogStates(42, states)
	epoch, got, err := decodeCleanLogStates(data)
	if err != nil || epoch != 42 || len(got) != len(states) {
		t.Fatalf("read back %v at epoch %d, %v", got, epoch, err)
	}
	for _, s := range states {
		if !bytes.Equal(got[s.tp], s.state) {
			t.Fatalf("%v read back as %v, written %v", s.tp, got[s.tp], s.state)
		}
	}
	path := filepath.Join(t.TempDir(), cleanLogStatesFile)
	if got, err := readCleanLogStates(path, 42); err != nil || got != nil {
		t.Fatalf("missing file: %v, %v", got, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readCleanLogStates(path, 42); err != nil || len(got) != len(states) {
		t.Fatalf("the file of the marker's close: %v, %v", got, err)
	}
	if got, err := readCleanLogStates(path, 43); err != nil || got != nil {
		t.Fatalf("the file of another close: %v, %v", got, err)
	}
	flipped := bytes.Clone(data)
	flipped[len(flipped)/2] ^= 1
	for name, bad := range map[string][]byte{"empty": nil, "cut": data[:len(data)-1], "flipped": flipped,
		"longer": append(bytes.Clone(data), 0), "no logs, bad magic": []byte("PLS0\x00\x00\x00\x00\x00")} {
		if _, got, err := decodeCleanLogStates(bad); err == nil {
			t.Errorf("%s read as %v", name, got)
		}
	}
	if _, got, err := decodeCleanLogStates(encodeCleanLogStates(-1, nil)); err != nil || len(got) != 0 {
		t.Fatalf("no logs: %v, %v", got, err)
	}
}

// FuzzDecodeCleanLogStates: any bytes decode to an error or to descriptions that encode
// and decode to themselves; none panics or allocates beyond its input's size.
func FuzzDecodeCleanLogStates(f *testing.F) {
	f.Add(encodeCleanLogStates(7, []cleanLogState{{segment.TopicPartition{Topic: "t", Partition: 3}, []byte{1, 0, 0}}}))
	f.Add(encodeCleanLogStates(-1, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		epoch, got, err := decodeCleanLogStates(b)
		if err != nil {
			return
		}
		var states []cleanLogState
		for tp, st := range got {
			states = append(states, cleanLogState{tp, st})
		}
		again2, again, err := decodeCleanLogStates(encodeCleanLogStates(epoch, states))
		if err != nil || again2 != epoch || !maps.EqualFunc(again, got, bytes.Equal) {
			t.Fatalf("re-encoded %v decodes to %v, %v", got, again, err)
		}
	})
}

// TestCleanRestartOpensLogsFromTheirDescriptions: a clean shutdown describes every
// written log in one file, and the next start opens those logs from it (the file is
// gone once the start has begun: a crash after it is never taken for clean); the
// records read back, a producer writes on, and a start after a crash loads the same
// logs from their files.
func TestCleanRestartOpensLogsFromTheirDescriptions(t *testing.T) {
	const topic, records = "described", 7
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	mustCreateTopic(t, newAdmin(t, b), topic, 3, nil)
	produceN(t, b, topic, records) // partition 0 only: 1 and 2 are never written
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	states, err := readCleanLogStates(filepath.Join(dir, "logs", cleanLogStatesFile), readCleanShutdownEpoch(filepath.Join(dir, "logs")))
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := states[segment.TopicPartition{Topic: topic, Partition: 0}]
	if !ok {
		t.Fatalf("no description of the written partition among %d", len(states))
	}
	if st, err := segment.ParseShutdownState(raw); err != nil || st.LogEndOffset() != records {
		t.Fatalf("the written partition's description: log end %d, %v; want %d", st.LogEndOffset(), err, records)
	}
	if _, ok := states[segment.TopicPartition{Topic: topic, Partition: 1}]; ok {
		t.Fatal("a partition never written to is described")
	}

	b = startTestBroker(t, dir, nil)
	if n := b.partitions.fromShutdownState.Load(); n != 1 {
		t.Fatalf("%d replicas opened from their descriptions, want the written one", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", cleanLogStatesFile)); !os.IsNotExist(err) {
		t.Fatalf("the descriptions outlive the start that read them: %v", err)
	}
	consumeN(t, b, topic, records)
	produceN(t, b, topic, records)
	if end := b.partitions.get(topic, 0).State().LogEndOffset; end != 2*records {
		t.Fatalf("log end offset %d after writing on, want %d", end, 2*records)
	}

	b.Kill()
	b = startTestBroker(t, dir, nil)
	if n := b.partitions.fromShutdownState.Load(); n != 0 {
		t.Fatalf("%d replicas opened from descriptions after a crash", n)
	}
	if end := b.partitions.get(topic, 0).State().LogEndOffset; end != 2*records {
		t.Fatalf("log end offset %d after the crash, want %d", end, 2*records)
	}
}
