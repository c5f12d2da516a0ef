package replication

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/segment"
)

// AppendForAcksOne is the produce handler's acks=1 append: AppendForAcksAll without
// the min.insync.replicas check. With SyncEveryAppend (flush.messages=1) it returns
// once the records are written to the page cache and their fsync runs behind it on the
// partition's flusher goroutine, as for acks=all: the connection reads its next request
// meanwhile, and the caller answers once an fsync has covered the records
// (Purgatory.WaitFsynced). Without it the records are answerable at once. wakes is
// AppendForAcksAll's.
func (p *Partition) AppendForAcksOne(records []byte, verify bool, guard *TxnVerification, wakes *Wakes) (segment.AppendInfo, error) {
	return p.AppendForAcksAll(records, 0, verify, guard, wakes)
}

// SyncsEveryAppend reports whether the replica is in the fsync-per-append mode
// (flush.messages=1): an acks=1 append's answer then waits for WaitFsynced.
func (p *Partition) SyncsEveryAppend() bool { return p.syncEveryAppend.Load() }

// AcksOneOutcome is the acks=1 rule with fsync before acknowledging, Kafka's
// flush.messages=1 (where the append fsyncs before the handler answers): a replica
// whose log failed before its own log counted end fails the write with a storage error
// (the fsync behind the append failed); a replica that no longer leads fails it (the
// records may be truncated away: the client retries, and an idempotent producer's
// retry finds them); a leader whose fsynced end (WakeState.LocalEnd) is short of end
// keeps it waiting; else it is committed. Followers are not waited for. Pure, as
// AcksAllOutcome.
func AcksOneOutcome(ws WakeState, end int64) Outcome {
	switch {
	case ws.LogFailed && ws.LocalEnd < end:
		return OutcomeStorageError
	case ws.Role != Leader:
		return OutcomeNotLeader
	case ws.LocalEnd < end:
		return OutcomeWaiting
	}
	return OutcomeCommitted
}

// WaitFsynced parks acks=1 writes appended with AppendForAcksOne in the
// fsync-per-append mode until the leader's own fsync covers each (AcksOneOutcome),
// timeout passes or ctx ends, and calls done once with every write's outcome, as
// WaitAcksAll does (MinISR is ignored). The flusher goroutine whose fsync decides last
// runs done. At the timeout a write whose records are not yet fsynced is
// OutcomeTimedOut.
func (pg *Purgatory) WaitFsynced(ctx context.Context, writes []AcksAllWrite, timeout time.Duration, done func([]Outcome)) {
	pg.waitWrites(ctx, writes, timeout, true, done)
}

// localEndLocked is the leader's own log end as the high watermark counts it: the log
// end offset, or, with SyncEveryAppend, only what is fsynced. Callers hold mu.
func (p *Partition) localEndLocked() int64 {
	end := p.log.LogEndOffset()
	if p.syncEveryAppend.Load() {
		end = min(end, p.durableEnd)
	}
	return end
}

// wakeFsyncedLocked wakes the waiters of acks=1 writes (WaitFsynced) after an fsync
// that moved the leader's local end without moving the high watermark (a replicated
// partition whose followers have not fetched the records yet); the fsync that moves the
// high watermark wakes them with everyone else. Callers hold mu.
func (p *Partition) wakeFsyncedLocked() {
	var ws WakeState
	haveState := false
	for w := range p.watchers {
		if !w.fsynced || w.after == nil {
			continue
		}
		if !haveState {
			ws, haveState = p.wakeStateLocked(), true
			ws.Progress = true
		}
		p.callWaiterLocked(w, ws)
	}
}
