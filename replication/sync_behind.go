package replication

import (
	"errors"

	"github.com/petrel-broker/petrel/segment"
)

// AppendForAcksAll is the produce handler's acks=all append (AppendValidatedAsLeader,
// or AppendAsLeaderVerified when verify is set): the same checks and write, but with
// SyncEveryAppend the append returns once the records are written to the page cache,
// and their fsync runs behind it on the partition's flusher goroutine (syncBehind).
// The caller answers when the high watermark passes the records, and the high
// watermark counts the leader's log only up to what is fsynced, so nothing is
// acknowledged before its fsync; meanwhile the connection reads and appends the
// client's next requests, which the next fsync covers together (group commit across
// the requests in flight, not only across connections). With wakes, the parked
// follower fetches the append woke are answered when the caller runs wakes, once it
// has appended its request's other partitions; nil answers them before returning.
func (p *Partition) AppendForAcksAll(records []byte, minInsync int, verify bool, guard *TxnVerification, wakes *Wakes) (segment.AppendInfo, error) {
	return p.appendAsLeader(records, leaderAppend{leaderEpoch: -1, minInsync: minInsync, verify: verify, guard: guard,
		crcChecked: true, inlineWake: true, syncBehind: true, wakes: wakes})
}

// syncBehindLocked asks the flusher goroutine to make the offsets below end durable,
// starting it when none runs. Callers hold mu.
func (p *Partition) syncBehindLocked(end int64) {
	if end <= p.durableEnd {
		return
	}
	p.syncWanted = max(p.syncWanted, end)
	if p.flusherRunning {
		return
	}
	p.flusherRunning = true
	go p.runFlusher()
}

// maxParallelLeaderSyncs bounds the flusher goroutines of a process that are in an
// fsync at once. A goroutine blocked in fsync(2) holds an OS thread; one acks=all
// produce of thousands of partitions would otherwise start as many fsyncs at once
// (Go stops the process at 10,000 threads), where the handler's own fsyncs were
// bounded by the connections. Flushers waiting for a slot hold no thread, and the
// fsync a slot finally runs covers every append made while it waited.
const maxParallelLeaderSyncs = 32

// leaderSyncSlots is the semaphore of maxParallelLeaderSyncs.
var leaderSyncSlots = make(chan struct{}, maxParallelLeaderSyncs)

// runFlusher is the partition's flusher goroutine: it fsyncs (syncTo, one group commit
// at a time under flushMu) until everything asked of it is durable, then exits; an
// append that finds it running only raises syncWanted, and the next fsync covers it.
// The fsync that moves the high watermark answers the acks=all waiters it releases on
// this goroutine. It exits when the replica stops (syncTo's ErrPartitionStopped) and
// when an fsync fails: the log is failed then (sticky), the high watermark stays below
// the records, and syncTo answers the waiters it leaves short with a storage error
// (AcksAllOutcome's OutcomeStorageError, KAFKA_STORAGE_ERROR) on this goroutine; the
// broker's maintenance loop then takes the replica offline.
func (p *Partition) runFlusher() {
	for {
		p.mu.Lock()
		// A truncation may have cut the log below what was asked: syncTo cannot make
		// offsets durable that are no longer there.
		want := min(p.syncWanted, p.log.LogEndOffset())
		if p.role == Stopped || p.durableEnd >= want || p.log.Failure() != nil {
			p.flusherRunning = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		leaderSyncSlots <- struct{}{}
		err := p.syncTo(want)
		<-leaderSyncSlots
		if err != nil {
			if !errors.Is(err, ErrPartitionStopped) {
				p.opts.Logger.Error("fsync behind acks=all appends failed", "topic", p.Topic, "partition", p.ID, "error", err)
			}
			p.mu.Lock()
			p.flusherRunning = false
			p.mu.Unlock()
			return
		}
	}
}
