package replication

import (
	"context"
	"time"
)

// FetchRead is one read of a parked fetch's partitions: the broker's Fetch answer.
type FetchRead interface {
	// Changes sums the partitions' Changes() as of the read.
	Changes() uint64
	// Release lets go of the record ranges the read holds.
	Release()
}

// DelayedFetch is what ParkFetch needs of a fetch (Kafka's DelayedFetch).
type DelayedFetch struct {
	// Read reads the fetch again and reports whether the read completes it: min_bytes
	// reached, a partition to answer at once (an error, a diverging epoch), or a read
	// falling behind the current segment.
	Read func() (read FetchRead, complete bool)
	// Reusable reports whether a read that does not complete the fetch may be its
	// answer when the wait ends with no partition changed since (it holds no records,
	// and time alone does not change it). The fetch releases the reads it does not keep.
	Reusable func(FetchRead) bool
	// Answer sends the fetch's answer: a read, or nil when the connection closed (the
	// fetch is abandoned). It runs once.
	Answer func(FetchRead)
	// Follower marks a follower's fetch: only new records wake it (a high watermark
	// move alone does not: NewAfterUnlockWaiter), a leadership gained answers it
	// (Purgatory.LeadershipGained), and at the drain it answers Stopping(), read from
	// nothing. A consumer's fetch reads once more at the drain.
	Follower bool
	// Stopping is a follower's fetch's answer at the drain.
	Stopping func() FetchRead
	// StoppingConsumer, when set, is a consumer's fetch's answer at the drain instead
	// of a read once more: the broker's NOT_LEADER_OR_FOLLOWER answer naming the new
	// leaders (KIP-951), its leaderships having moved in the controlled shutdown.
	StoppingConsumer func() FetchRead
}

// ParkFetch parks a fetch whose first read, first, did not complete it, on parts (the
// replicas of its partitions; gone: a partition has gone since the first read). It is
// answered when a read after a change of its partitions completes it, at wait
// (fetch.max.wait.ms: with what there is), when ctx ends (abandoned: Answer(nil)), or
// when the broker drains. No goroutine waits for it: the goroutine whose append, high
// watermark advance or role change woke it reads it again, once the partition's lock
// is released (on the produce handler's goroutine for an append: before its fsync at
// acks=0, after the request's last append at acks=1 and acks=all, Wakes), and answers
// when the read completes it.
func (pg *Purgatory) ParkFetch(ctx context.Context, parts []*Partition, wait time.Duration, first FetchRead, gone bool, f DelayedFetch) {
	pg.parkFetch(ctx, parts, wait, first, gone, f)
}

func (pg *Purgatory) parkFetch(ctx context.Context, parts []*Partition, wait time.Duration, first FetchRead, gone bool, f DelayedFetch) *delayedFetch {
	df := &delayedFetch{f: f}
	df.pg, df.op = pg, df
	changes := first.Changes()
	if !gone && f.Reusable(first) {
		df.last = first
	} else {
		first.Release()
	}
	df.watch(parts, f.Follower)
	// A change between the first read and Watch woke nobody: read once more, or the
	// fetch would wait max_wait_ms for nothing. Unchanged counts prove there was none,
	// and spare the leader that read while the acks=all waiters this fetch may just
	// have released are running.
	if gone || !df.unchanged(changes) {
		df.run()
	}
	if f.Follower {
		df.arm(wait, hookOn{ctx, hookAbandon}, hookOn{pg.drain, hookStop}, hookOn{pg.kick.current(), hookExpire})
	} else if f.StoppingConsumer != nil {
		df.f.Stopping = f.StoppingConsumer
		df.arm(wait, hookOn{ctx, hookAbandon}, hookOn{pg.drain, hookStop})
	} else {
		df.arm(wait, hookOn{ctx, hookAbandon}, hookOn{pg.drain, hookDrainExpire})
	}
	return df
}

// delayedFetch is a parked ParkFetch.
type delayedFetch struct {
	delayed
	f DelayedFetch
	// last is the latest read that did not complete the fetch and may be its answer
	// (Reusable), or nil: when the wait ends with no partition changed since, it is
	// the answer, without a read again of every partition (at idle most of a leader's
	// work for its followers). Only the goroutine holding the fetch touches it.
	last FetchRead
	// answer is try's answer, or nil: abandoned.
	answer FetchRead
}

// woken tries the fetch at every wake-up but Watch's own (ParkFetch reads once more
// when anything changed before it watched).
func (df *delayedFetch) woken(_ int, ws WakeState) (drop, try bool) {
	return false, !ws.Watching
}

// try reads the fetch again; expired, it answers with the kept read when no partition
// changed since it, else with a new read.
func (df *delayedFetch) try(expired bool) bool {
	if expired && df.last != nil && df.unchanged(df.last.Changes()) {
		df.answer, df.last = df.last, nil
		return true
	}
	read, complete := df.f.Read()
	if complete || expired {
		df.dropLast()
		df.answer = read
		return true
	}
	df.dropLast()
	if df.f.Reusable(read) {
		df.last = read
	} else {
		read.Release()
	}
	return false
}

func (df *delayedFetch) complete() { df.f.Answer(df.answer) }

// abandon answers nil (the connection closed) or, stopping, a follower's answer at the
// drain.
func (df *delayedFetch) abandon(stopping bool) {
	df.dropLast()
	if stopping && df.f.Stopping != nil {
		df.f.Answer(df.f.Stopping())
		return
	}
	df.f.Answer(nil)
}

// dropLast releases the kept read; the caller holds the fetch.
func (df *delayedFetch) dropLast() {
	if df.last != nil {
		df.last.Release()
		df.last = nil
	}
}
