package broker

import (
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// startupTrace times the parts of metadata_catch_up (the "broker ready" line): Raft's
// start (the snapshot restore), the replay of the log entries that were on disk after
// the snapshot, the registration, and the heartbeats until this broker is unfenced in
// its own image. It is logged once, as "metadata caught up", when the broker is
// unfenced. Each mark is the first time its step was reached, from startedAt.
type startupTrace struct {
	mu            sync.Mutex
	marks         []startupMark
	snapshotIndex uint64 // the snapshot Raft restored at start (0: none)
	logIndex      uint64 // the last log entry on disk at start
	heartbeats    int    // heartbeats sent before the first unfenced answer
	replayEntries int64  // entries applied by the time the replay was done
	replayBytes   int64
}

type startupMark struct {
	name string
	at   time.Time
}

// mark records the first time step name was reached.
func (t *startupTrace) mark(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.marks {
		if m.name == name {
			return
		}
	}
	t.marks = append(t.marks, startupMark{name, time.Now()})
}

// raftStarted records Raft's state once NewRaft (and so the snapshot restore) returned.
func (b *Broker) traceRaftStarted() {
	b.trace.mark("raft_started")
	stats := b.raft.raft.Stats()
	snapshot, _ := strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
	last, _ := strconv.ParseUint(stats["last_log_index"], 10, 64)
	// The replay is done when the image holds the last command on disk: entries of
	// other types (the no-op of an election, configurations) never reach the image.
	for i := 0; i < 64 && last > snapshot; i++ {
		var l raft.Log
		if err := b.raft.store.GetLog(last, &l); err != nil || l.Type == raft.LogCommand {
			break
		}
		last--
	}
	b.trace.mu.Lock()
	b.trace.snapshotIndex, b.trace.logIndex = snapshot, last
	b.trace.mu.Unlock()
}

// traceReplay marks when the first entry after the snapshot was applied and when every
// command that was on disk at start was. It polls the image's offset (it ends then, or
// at readiness or stop, so it runs during start-up only).
func (b *Broker) traceReplay() {
	b.trace.mu.Lock()
	snapshot, last := b.trace.snapshotIndex, b.trace.logIndex
	b.trace.mu.Unlock()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		applied := b.Image().Offset
		if applied > snapshot {
			b.trace.mark("first_entry_applied")
		}
		if applied >= last {
			st := b.machine.Stats()
			b.trace.mark("log_replayed")
			b.trace.mu.Lock()
			b.trace.replayEntries, b.trace.replayBytes = st.Entries, st.EntryBytes
			b.trace.mu.Unlock()
			return
		}
		select {
		case <-tick.C:
		case <-b.readyCh:
			return
		case <-b.stop:
			return
		}
	}
}

// logStartupTrace logs the parts of metadata_catch_up once this broker is unfenced.
func (b *Broker) logStartupTrace() {
	b.trace.mark("unfenced_in_image")
	st := b.machine.Stats()
	t := &b.trace
	t.mu.Lock()
	args := []any{"snapshot_index", t.snapshotIndex, "snapshot_bytes", st.SnapshotBytes,
		"snapshot_restore", st.SnapshotRestore.Round(time.Millisecond).String(),
		"log_entries_after_snapshot", t.logIndex - min(t.snapshotIndex, t.logIndex),
		"replayed_entries", t.replayEntries, "replayed_bytes", t.replayBytes,
		"fenced_heartbeats", t.heartbeats}
	for _, m := range t.marks {
		args = append(args, m.name, m.at.Sub(b.startedAt).Round(time.Millisecond).String())
	}
	t.mu.Unlock()
	b.logger.Info("metadata caught up", args...)
}

// countHeartbeat counts a heartbeat answered fenced.
func (t *startupTrace) countHeartbeat() {
	t.mu.Lock()
	t.heartbeats++
	t.mu.Unlock()
}
