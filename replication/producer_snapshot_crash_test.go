package replication

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// snapshotCrashConfig has segments of a few batches, so that appends roll.
func snapshotCrashConfig() segment.Config {
	cfg := segment.DefaultConfig()
	cfg.SegmentBytes = 400
	return cfg
}

// rolledLeader appends idempotent batches of three producers until the log has rolled a
// few times, and returns the directory, the state, the roll snapshots' offsets and the
// high watermark. No shutdown snapshot is written: the next open is that of a crash.
func rolledLeader(tb testing.TB) (dir string, want []ProducerEntry, offs []int64, hw int64) {
	tb.Helper()
	dir = tb.TempDir()
	log, _, err := segment.Open(dir, snapshotCrashConfig(), segment.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	p := NewPartition("t", 0, log, 0, Options{BrokerID: 0})
	if err := p.BecomeLeaderOf(0, 0, []int32{0}, []int32{0}); err != nil {
		tb.Fatal(err)
	}
	for seq := int32(0); seq < 40; seq += 2 {
		if _, err := p.AppendAsLeader(idempotentBatch(2, int64(seq%3), 0, seqFor(seq)), 0); err != nil {
			tb.Fatal(err)
		}
	}
	offs, err = ProducerSnapshotOffsets(dir)
	if err != nil || len(offs) < 3 {
		tb.Fatalf("roll snapshots %v %v", offs, err)
	}
	want, hw = p.producers.Entries(), p.State().HighWatermark
	if err := p.Stop(false); err != nil { // closes the log; writes no snapshot
		tb.Fatal(err)
	}
	return dir, want, offs, hw
}

// reopenAfterCrash opens dir as a restarted broker does and loads the producer state.
func reopenAfterCrash(tb testing.TB, dir string, hw int64) (*Partition, ProducerLoadReport, error) {
	tb.Helper()
	log, _, err := segment.Open(dir, snapshotCrashConfig(), segment.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	q := NewPartition("t", 0, log, hw, Options{BrokerID: 0})
	tb.Cleanup(func() { q.Stop(false) })
	report, err := q.LoadProducerState(0, 0)
	return q, report, err
}

// After a crash the snapshot of the last roll is there and used; a torn or otherwise
// damaged newest snapshot is ignored and deleted, the state rebuilt from the previous one
// and the log, the same as before the crash: never a failed open.
func TestTornProducerSnapshotIsIgnoredAtOpen(t *testing.T) {
	dir, want, offs, hw := rolledLeader(t)
	q, report, err := reopenAfterCrash(t, dir, hw)
	if err != nil || report.SnapshotOffset != offs[len(offs)-1] {
		t.Fatalf("intact: %+v %v, want the last roll snapshot %d", report, err, offs[len(offs)-1])
	}
	if got := q.producers.Entries(); !slices.EqualFunc(got, want, entriesEqual) {
		t.Fatalf("intact: state\n%+v\nwant\n%+v", got, want)
	}
	q.Stop(false)
	// The state of the whole log, encoded at an earlier offset: valid CRC, wrong place.
	full := EncodeProducerSnapshot(q.producers)
	for _, tc := range []struct {
		name   string
		damage func(path string, b []byte) error
	}{
		{"cut in half", func(path string, b []byte) error { return os.Truncate(path, int64(len(b)/2)) }},
		{"empty", func(path string, b []byte) error { return os.Truncate(path, 0) }},
		{"flipped byte", func(path string, b []byte) error {
			c := slices.Clone(b)
			c[len(c)-3] ^= 1
			return os.WriteFile(path, c, 0o644)
		}},
		{"state past its offset", func(path string, b []byte) error { return os.WriteFile(path, full, 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, want, offs, hw := rolledLeader(t)
			last := ProducerSnapshotPath(dir, offs[len(offs)-1])
			b, err := os.ReadFile(last)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.damage(last, b); err != nil {
				t.Fatal(err)
			}
			// A leftover temporary file of an interrupted write is removed by the open.
			if err := os.WriteFile(ProducerSnapshotPath(dir, offs[0])+".tmp", b[:5], 0o644); err != nil {
				t.Fatal(err)
			}
			q, report, err := reopenAfterCrash(t, dir, hw)
			if err != nil {
				t.Fatalf("open failed: %v", err)
			}
			if !slices.Equal(report.CorruptSnapshots, offs[len(offs)-1:]) || report.SnapshotOffset != offs[len(offs)-2] {
				t.Fatalf("report %+v, want %d ignored and %d used", report, offs[len(offs)-1], offs[len(offs)-2])
			}
			if _, err := os.Stat(last); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("damaged snapshot kept: %v", err)
			}
			if got := q.producers.Entries(); !slices.EqualFunc(got, want, entriesEqual) {
				t.Fatalf("state\n%+v\nwant\n%+v", got, want)
			}
			if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) != 0 {
				t.Fatalf("temporary files left: %v", tmps)
			}
		})
	}
}

// FuzzProducerSnapshotAtOpen puts arbitrary bytes where the newest snapshot is and opens
// the partition: the open never fails or panics, and bytes that are not a snapshot of
// that offset leave exactly the state the log gives.
func FuzzProducerSnapshotAtOpen(f *testing.F) {
	tmpl, want, offs, hw := rolledLeader(f)
	last := offs[len(offs)-1]
	good, err := os.ReadFile(ProducerSnapshotPath(tmpl, last))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add([]byte{0, 3, 0, 0, 0, 0, 0, 0, 0, 1})
	ents, err := os.ReadDir(tmpl)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		for _, e := range ents {
			data, err := os.ReadFile(filepath.Join(tmpl, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(ProducerSnapshotPath(dir, last), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, readErr := readProducerSnapshot(dir, last)
		q, report, err := reopenAfterCrash(t, dir, hw)
		if err != nil {
			t.Fatalf("open failed: %v", err)
		}
		if readErr != nil {
			if !slices.Contains(report.CorruptSnapshots, last) {
				t.Fatalf("rejected snapshot not reported: %+v (%v)", report, readErr)
			}
			if got := q.producers.Entries(); !slices.EqualFunc(got, want, entriesEqual) {
				t.Fatalf("state\n%+v\nwant\n%+v", got, want)
			}
		}
	})
}
