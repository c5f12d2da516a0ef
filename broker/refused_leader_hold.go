package broker

import (
	"context"
	"iter"
	"time"

	"github.com/petrel-broker/petrel/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// While the controller fences a broker that refused this broker's connections (a
// round trip after the report: controller/evidence.go; the decisions are in
// controller/refusal_holds.go), answers that would send a client to it wait: a
// Metadata answer naming it as a leader, and a Produce for a partition this broker's
// image still has it lead (the client found the new leader here before this broker
// applied the change; NOT_LEADER_OR_FOLLOWER would send it to a metadata refresh that
// franz-go makes at most every 5 s). The wait ends when the image no longer has the
// broker unfenced at that epoch (and, for Produce, this broker's replicas follow the
// new image), at most controller.RefusedLeaderHold after its first refusal, or when
// the connection or the broker stops. A Produce also waits, briefly, for metadata entries
// this node holds but has not applied. The waits run on the connection's reader
// goroutine, like the start-up readiness wait, so the connection's order is kept.

// awaitRefusedBrokers holds a Metadata answer while this broker's image still names, as
// an unfenced broker, one whose listener refused this broker's connection less than
// controller.RefusedLeaderHold ago: the controller fences such a broker within a
// round trip of the report. The wait ends at the fence (the answer then names the new leaders), at
// the window's end, or when the connection or the broker stops.
func (b *Broker) awaitRefusedBrokers(ctx context.Context) {
	for {
		changed := b.machine.Changed()
		until, ok := b.refusals.HoldUntil(b.Image(), time.Now())
		if !ok {
			return
		}
		timer := time.NewTimer(time.Until(until))
		select {
		case <-changed:
			timer.Stop()
		case <-timer.C:
			return
		case <-ctx.Done():
			timer.Stop()
			return
		case <-b.draining:
			timer.Stop()
			return
		}
	}
}

// metadataApplyWait bounds the wait for entries this node's Raft log already holds to
// be applied (a follower learns that they are committed one replication round later).
const metadataApplyWait = 200 * time.Millisecond

// metadataBehind reports whether this node's Raft log holds entries it has not applied:
// its image is about to change. Barriers at the end of the log do not count: they
// change nothing, and a follower learns their commit only at the leader's next round
// (raft_commit_nudge.go).
func (b *Broker) metadataBehind() bool {
	return b.raft.raft.AppliedIndex() < b.lastReadableIndex()
}

// lastReadableIndex is the index of the last entry of this node's Raft log that changes
// its image (every entry, for a node built on other stores in tests).
func (b *Broker) lastReadableIndex() uint64 {
	last := b.raft.raft.LastIndex()
	if b.raft.meta == nil {
		return last
	}
	return min(last, b.raft.meta.readable.get())
}

// awaitMetadataApplied waits until this node has applied the Raft entries its log
// holds now, at most metadataApplyWait (an entry that is never committed is truncated
// instead).
func (b *Broker) awaitMetadataApplied(ctx context.Context) {
	last := b.lastReadableIndex()
	deadline := time.NewTimer(metadataApplyWait)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond) // AppliedIndex has no notification of its own
	defer tick.Stop()
	for b.raft.raft.AppliedIndex() < last {
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		case <-b.draining:
			return
		}
	}
}

// awaitProduceLeaders holds a Produce naming a partition that this broker's image has
// another broker lead (or does not have: a topic just created), when that image is
// about to change: the leader is a refused broker not fenced yet, or this node's Raft
// log holds entries it has not applied yet (the client learnt of this broker's
// leadership from a broker that applied them first). Then it waits for this broker's
// replicas to follow the new image, so the request finds a partition this broker now
// leads ready. When the image is current, the client is the one behind and is answered
// at once.
func (b *Broker) awaitProduceLeaders(ctx context.Context, r *kmsg.ProduceRequest) {
	now := time.Now()
	refusals := b.refusals.HoldingRecently(now)
	if !refusals && !b.metadataBehind() {
		return
	}
	elsewhere, refused := b.refusals.ProduceHold(b.Image(), b.cfg.NodeID, produceTopics(r), refusals, now)
	if !elsewhere {
		return
	}
	if refused {
		b.awaitRefusedBrokers(ctx)
	}
	b.awaitMetadataApplied(ctx)
	wctx, cancel := b.waitTimeout(ctx, controller.RefusedLeaderHold)
	defer cancel()
	b.partitions.waitReconciled(wctx, b.Image().Offset)
}

// produceTopics yields the topics of r with the partitions it names.
func produceTopics(r *kmsg.ProduceRequest) iter.Seq2[string, []int32] {
	return func(yield func(string, []int32) bool) {
		for _, rt := range r.Topics {
			ids := make([]int32, len(rt.Partitions))
			for i, rp := range rt.Partitions {
				ids[i] = rp.Partition
			}
			if !yield(rt.Topic, ids) {
				return
			}
		}
	}
}
