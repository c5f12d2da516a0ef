package replication

// A consumer's fetch of an offset in remote storage only (KIP-405, Kafka's
// RemoteLogManager.read through DelayedRemoteFetch). The read of the request's
// partitions marks the first such partition (Kafka reads one partition a request from
// remote storage; the others in remote storage answer no records and are fetched
// again); the fetch then answers deferred, after that partition's read on one of the
// broker's remote reader goroutines, or after remote.fetch.max.wait.ms with the
// partition empty when the read is slow. The read itself ends then too; the object
// store downloads it started run to their end into the remote read caches
// (tiered.Downloads), so the consumer's next fetch makes progress however slow the
// store. The connection's reader never waits on the object store.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RemoteFetcher is what a FetchServer asks of the remote log manager. Safe for
// concurrent use.
type RemoteFetcher interface {
	// Go runs fn on one of the remote reader goroutines (remote.log.reader.threads); it
	// returns false, not running fn, when all are busy and the queue is full.
	Go(fn func()) bool
	// ReadRemote reads lp from remote storage at offset: whole batches up to maxBytes
	// (the first whole even when larger, with minOneMessage), and with readCommitted
	// the aborted transactions of the range read. Bounded by ctx.
	ReadRemote(ctx context.Context, lp *Partition, offset int64, maxBytes int, minOneMessage, readCommitted bool) (records []byte, aborted []AbortedTxn, err error)
	// MaxWait is remote.fetch.max.wait.ms: how long a fetch waits for a remote read
	// before it answers the partition empty.
	MaxWait() time.Duration
}

// pendingRemote is the partition of a fetch answer to read from remote storage.
type pendingRemote struct {
	lp            *Partition
	topic, part   int // its place in the answer: Topics[topic].Partitions[part]
	offset        int64
	maxBytes      int
	minOneMessage bool
	readCommitted bool
}

// markRemote records sp's partition (lp, the fetch at offset) as a's remote read, if a
// has none yet: the answer then waits for it. It reports whether it did.
func (a *FetchAnswer) markRemote(lp *Partition, offset int64, limit int, first, readCommitted bool) bool {
	if a.remote != nil {
		return false
	}
	a.remote = &pendingRemote{lp: lp, topic: -1, offset: offset, maxBytes: max(limit, 1), minOneMessage: first, readCommitted: readCommitted}
	return true
}

// readRemoteThen reads a's remote partition on a remote reader goroutine, fills it in
// and passes a to finish, once: when the read ends or when the remote wait passes,
// whichever comes first (the partition then answers no records). A read error answers
// the partition's code (KAFKA_STORAGE_ERROR for the object store) without failing the
// others.
func (s *FetchServer) readRemoteThen(a *FetchAnswer, finish func(*FetchAnswer)) {
	rr := a.remote
	var done atomic.Bool
	answer := func(records []byte, aborted []AbortedTxn, err error) {
		if !done.CompareAndSwap(false, true) {
			return
		}
		sp := &a.Topics[rr.topic].Partitions[rr.part]
		switch {
		case err != nil:
			sp.ErrorCode = s.Source.ErrorCode(err)
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
		case len(records) > 0:
			sp.RecordBatches = records
			for _, t := range aborted {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = t.ProducerID, t.FirstOffset
				sp.AbortedTransactions = append(sp.AbortedTransactions, at)
			}
		}
		finish(a)
	}
	remote := s.Remote
	deadline := time.Now().Add(remote.MaxWait())
	timer := time.AfterFunc(remote.MaxWait(), func() { answer(nil, nil, nil) })
	ok := remote.Go(func() {
		// The read ends with the fetch's wait: the object store downloads it started go
		// on into the remote read caches, where the consumer's next fetch finds them.
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		records, aborted, err := remote.ReadRemote(ctx, rr.lp, rr.offset, rr.maxBytes, rr.minOneMessage, rr.readCommitted)
		timer.Stop()
		if ctx.Err() != nil {
			records, aborted, err = nil, nil, nil // the wait is over: a slow read, no records
		}
		answer(records, aborted, err)
	})
	if !ok {
		timer.Stop()
		answer(nil, nil, nil) // the readers are saturated: no records this time
	}
}

// LeaderEpochEntries returns the replica's leader-epoch cache entries, ascending (the
// lineage of its remote reads); none when it is stopped.
func (p *Partition) LeaderEpochEntries() []segment.EpochEntry {
	var epochs []segment.EpochEntry
	p.WithLog(func(l *segment.Log) error { epochs = l.LeaderEpochs().Entries(); return nil }) //nolint:errcheck // stopped: none
	return epochs
}

// AbortedTransactions returns the aborted transactions that may hold records in
// [from, to), as known to the replica's producer state (both tiers, above the log
// start offset).
func (p *Partition) AbortedTransactions(from, to int64) []AbortedTxn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.producers.AbortedBetween(from, to)
}
