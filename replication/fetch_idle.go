package replication

// An idle follower's incremental fetch reads only what changed. A leader answers its
// followers' fetches every replica.fetch.wait.max.ms even when nothing is produced; a
// read of each of a session's tens of thousands of partitions at every fetch (its lock,
// the follower's progress, an empty answer the session then filters out) was most of
// an idle cluster's CPU. A partition whose last read the answer left out, with nothing
// to tell (no records, no error, the high watermark at the follower's fetch offset,
// the follower in the ISR), is marked idle with the replica and its Changes() as of
// that read; the next reads of the session skip it, without its lock, while the
// follower's fetch parameters for it and its Changes() stay the same. Any append,
// high watermark, log start, ISR or role change moves Changes(), and new parameters
// clear the mark, so the read after either reads it as before. The fetch still parks
// on every partition of the session: an append to a skipped partition wakes it, and
// that read finds Changes() moved.
//
// What a skipped read would have recorded is already recorded: the follower's fetch
// offset and log start are the same as at the marked read, and a follower at the
// leader's log end offset never lags (MaybeShrinkISR), whatever time passes.

import "github.com/twmb/franz-go/pkg/kmsg"

// idleMark is a session partition's last idle read: the replica read (nil: none) and
// its Changes() as of the read.
type idleMark struct {
	replica *Partition
	changes uint64
}

// readMark is what a follower read of one partition leaves for its session's Finish:
// the mark it would make, or that the read skipped the partition.
type readMark struct {
	idle    idleMark // replica nil: the read cannot mark it idle
	skipped bool
}

// idleReads is a SessionAnswer that knows its reads' marks (FetchAnswer).
type idleReads interface {
	skipped(i int) bool
	idleAfter(i int, cp *cachedFetchPartition, sp *kmsg.FetchResponseTopicPartition, recordBytes int) idleMark
}

// skipped reports whether the read skipped the i-th partition (response order).
func (a *FetchAnswer) skipped(i int) bool {
	return i < len(a.marks) && a.marks[i].skipped
}

// idleAfter is the i-th partition's mark once the answer left it out: the read's, when
// it told nothing at all (no records, no error, a high watermark at the fetch offset)
// and no replication quota left records out.
func (a *FetchAnswer) idleAfter(i int, cp *cachedFetchPartition, sp *kmsg.FetchResponseTopicPartition, recordBytes int) idleMark {
	if i >= len(a.marks) || a.throttled || recordBytes > 0 || sp.ErrorCode != 0 || sp.HighWatermark != cp.fetchOffset ||
		sp.DivergingEpoch.Epoch >= 0 || sp.DivergingEpoch.EndOffset >= 0 {
		return idleMark{}
	}
	return a.marks[i].idle
}

// skipIdle reports whether a follower's read of lp, the partition at plan index i,
// skips it: its mark names lp and lp has not changed since. It then adds the
// partition's Changes() to a's, as a read would.
func (a *FetchAnswer) skipIdle(idle []idleMark, i int, lp *Partition) bool {
	if i >= len(idle) || idle[i].replica != lp || lp.Changes() != idle[i].changes {
		return false
	}
	a.changes += idle[i].changes
	return true
}
