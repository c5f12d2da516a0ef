package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// TestChangedCheckpoints: a file is written again when one of its offsets moved, all
// three when a replica came or went or nothing was written yet, none when nothing
// changed.
func TestChangedCheckpoints(t *testing.T) {
	a := segment.TopicPartition{Topic: "t", Partition: 0}
	b := segment.TopicPartition{Topic: "t", Partition: 1}
	off := replication.CloseOffsets{HighWatermark: 10, RecoveryPoint: 5, LogStartOffset: 2}
	entries := []checkpointEntry{{tp: a, off: off}, {tp: b, off: off}}
	if got := changedCheckpoints(nil, entries); got != everyOffsetCheckpoint {
		t.Fatalf("first write: %b, want every file", got)
	}
	written := rememberCheckpoints(nil, entries, everyOffsetCheckpoint)
	if got := changedCheckpoints(written, entries); got != 0 {
		t.Fatalf("nothing moved: %b, want none", got)
	}
	for _, c := range []struct {
		name    string
		entries []checkpointEntry
		want    offsetCheckpoints
	}{
		{"high watermark moved", []checkpointEntry{{tp: a, off: off}, {tp: b, off: replication.CloseOffsets{HighWatermark: 11, RecoveryPoint: 5, LogStartOffset: 2}}}, highWatermarkCheckpoint},
		{"recovery point moved", []checkpointEntry{{tp: a, off: replication.CloseOffsets{HighWatermark: 10, RecoveryPoint: 6, LogStartOffset: 2}}, {tp: b, off: off}}, recoveryPointCheckpoint},
		{"log start moved", []checkpointEntry{{tp: a, off: off}, {tp: b, off: replication.CloseOffsets{HighWatermark: 10, RecoveryPoint: 5, LogStartOffset: 3}}}, logStartCheckpoint},
		{"a replica went", []checkpointEntry{{tp: a, off: off}}, everyOffsetCheckpoint},
		{"a replica came", append(entries[:2:2], checkpointEntry{tp: segment.TopicPartition{Topic: "u", Partition: 0}}), everyOffsetCheckpoint},
		{"a replica replaced", []checkpointEntry{{tp: a, off: off}, {tp: segment.TopicPartition{Topic: "u", Partition: 0}, off: off}}, everyOffsetCheckpoint},
	} {
		if got := changedCheckpoints(written, c.entries); got != c.want {
			t.Errorf("%s: %b, want %b", c.name, got, c.want)
		}
	}
	moved := []checkpointEntry{{tp: a, off: off}, {tp: b, off: replication.CloseOffsets{HighWatermark: 12, RecoveryPoint: 5, LogStartOffset: 2}}}
	written = rememberCheckpoints(written, moved, highWatermarkCheckpoint)
	if got := changedCheckpoints(written, moved); got != 0 {
		t.Fatalf("after the moved offset's write: %b, want none", got)
	}
}

// TestPeriodicCheckpointSkipsUnchangedFiles: at idle the maintenance loop's periodic
// checkpoint rewrites no file (same inode, same modification time); a moved high
// watermark is in the file within the interval, and only that file is rewritten; a
// moved log start likewise; and a crash after the skipped writes restarts with the
// log start and every record still there.
func TestPeriodicCheckpointSkipsUnchangedFiles(t *testing.T) {
	const topic = "skip-unchanged"
	const interval = 100 * time.Millisecond
	dir := t.TempDir()
	props := restartProps()
	props["replica.high.watermark.checkpoint.interval.ms"] = fmt.Sprint(interval.Milliseconds())
	b := startTestBroker(t, dir, props)
	mustCreateTopic(t, newAdmin(t, b), topic, 1, nil)
	logs := filepath.Join(dir, "logs")
	tp := segment.TopicPartition{Topic: topic, Partition: 0}
	checkpointed := func(name string, want int64) func() error {
		return func() error {
			m, err := segment.ReadOffsetCheckpoint(filepath.Join(logs, name))
			if err != nil {
				return err
			}
			if got, ok := m[tp]; !ok || got != want {
				return fmt.Errorf("%s holds %d (present %v), want %d", name, got, ok, want)
			}
			return nil
		}
	}
	produceN(t, b, topic, 20)
	testwait.For(t, 10*time.Second, checkpointed(segment.ReplicationOffsetCheckpointFile, 20))
	testwait.For(t, 10*time.Second, checkpointed(segment.LogStartOffsetCheckpointFile, 0))
	testwait.For(t, 10*time.Second, checkpointed(segment.RecoveryPointOffsetCheckpointFile, 20))
	// The loop's write may still be in flight (it renames its files one by one): a
	// checkpoint under the same lock waits for it to end.
	if err := b.partitions.checkpoint(); err != nil {
		t.Fatal(err)
	}

	// Idle: neither the loop (over 10 intervals) nor a direct call rewrites a file.
	idle := checkpointFiles(t, logs)
	for deadline := time.Now().Add(10 * interval); time.Now().Before(deadline); {
		if err := b.partitions.checkpoint(); err != nil {
			t.Fatal(err)
		}
		if now := checkpointFiles(t, logs); !sameFiles(idle, now) {
			t.Fatalf("an idle checkpoint rewrote a file:\nbefore %v\nafter  %v", idle, now)
		}
		time.Sleep(interval / 4) // pacing the observation window, not synchronising
	}

	// A moved high watermark reaches its file within the interval; the log start
	// offset's file, unchanged, is not rewritten.
	produceN(t, b, topic, 5)
	testwait.For(t, 10*time.Second, checkpointed(segment.ReplicationOffsetCheckpointFile, 25))
	after := checkpointFiles(t, logs)
	name := segment.LogStartOffsetCheckpointFile
	if !sameFiles(map[string]os.FileInfo{name: idle[name]}, map[string]os.FileInfo{name: after[name]}) {
		t.Errorf("%s rewritten although no log start moved", name)
	}

	// A moved log start reaches its file (DeleteRecords writes before it answers).
	deleteRecordsBefore(t, b, topic, 10)
	if err := checkpointed(segment.LogStartOffsetCheckpointFile, 10)(); err != nil {
		t.Fatal(err)
	}

	// A crash after the skipped writes: the restart recovers the log from the files.
	b.Kill()
	b = startTestBroker(t, dir, props)
	checkLogStart(t, b, topic, 10)
	listed, err := newAdmin(t, b).ListEndOffsets(testContext(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if lo, ok := listed.Lookup(topic, 0); !ok || lo.Err != nil || lo.Offset != 25 {
		t.Fatalf("end offset after the restart %+v, want 25", lo)
	}
	testwait.For(t, 10*time.Second, checkpointed(segment.ReplicationOffsetCheckpointFile, 25))
}
