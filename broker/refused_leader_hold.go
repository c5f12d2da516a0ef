package broker

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// While the controller fences a broker that refused this broker's connections (a
// round trip after the report: controller/evidence.go), answers that would send a client to
// it wait: a Metadata answer naming it as a leader, and a Produce for a partition this
// broker's image still has it lead (the client found the new leader here before this
// broker applied the change; NOT_LEADER_OR_FOLLOWER would send it to a metadata refresh
// that franz-go makes at most every 5 s). The wait ends when the image no longer has
// the broker unfenced at that epoch (and, for Produce, this broker's replicas follow
// the new image), at most refusedLeaderHold after its first refusal, or when the
// connection or the broker stops. A Produce also waits, briefly, for metadata entries
// this node holds but has not applied. The waits run on the connection's reader
// goroutine, like the start-up readiness wait, so the connection's order is kept.

// refusedLeaderHold bounds how long answers wait, after a broker first refused this
// broker's connection, for the controller to fence it (awaitRefusedBrokers). A fence
// normally lands within a round trip of the report; the bound covers a controller
// election too, since the dead broker may have been the controller (its successor
// fences it as its term starts: controller/evidence.go).
const refusedLeaderHold = 3 * time.Second

// holdUntil returns the time until which an answer from im should wait: the latest end
// of the hold window of any broker that refused a connection at the epoch im still has
// for it, unfenced; ok is false when there is none.
func (r *peerRefusals) holdUntil(im *metadata.Image, now time.Time) (until time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, first := range r.firstRefused {
		end := first.Add(refusedLeaderHold)
		if !end.After(now) {
			continue
		}
		if br, found := im.Brokers[key.BrokerID]; found && !br.Fenced && br.Epoch == key.BrokerEpoch && end.After(until) {
			until, ok = end, true
		}
	}
	return until, ok
}

// holdingRecently reports whether any refusal is recent enough to hold an answer: one
// atomic load, the Produce path's cost when nothing failed.
func (r *peerRefusals) holdingRecently(now time.Time) bool {
	return now.UnixNano()-r.latestFirst.Load() < int64(refusedLeaderHold)
}

// holds reports whether broker id, at the epoch im has for it, is a refused broker an
// answer should wait for.
func (r *peerRefusals) holds(im *metadata.Image, id int32, now time.Time) bool {
	br, ok := im.Brokers[id]
	if !ok || br.Fenced {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	first, ok := r.firstRefused[peerRefusal{BrokerID: id, BrokerEpoch: br.Epoch}]
	return ok && now.Sub(first) < refusedLeaderHold
}

// awaitRefusedBrokers holds a Metadata answer while this broker's image still names, as
// an unfenced broker, one whose listener refused this broker's connection less than
// refusedLeaderHold ago: the controller fences such a broker within a round trip of
// the report. The wait ends at the fence (the answer then names the new leaders), at
// the window's end, or when the connection or the broker stops.
func (b *Broker) awaitRefusedBrokers(ctx context.Context) {
	for {
		changed := b.machine.Changed()
		until, ok := b.refusals.holdUntil(b.Image(), time.Now())
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
// its image is about to change.
func (b *Broker) metadataBehind() bool {
	return b.raft.raft.AppliedIndex() < b.raft.raft.LastIndex()
}

// awaitMetadataApplied waits until this node has applied the Raft entries its log
// holds now, at most metadataApplyWait (an entry that is never committed is truncated
// instead).
func (b *Broker) awaitMetadataApplied(ctx context.Context) {
	last := b.raft.raft.LastIndex()
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
	refusals := b.refusals.holdingRecently(now)
	if !refusals && !b.metadataBehind() {
		return
	}
	im := b.Image()
	elsewhere, refused := false, false
	for _, rt := range r.Topics {
		t := im.Topic(rt.Topic)
		if t == nil {
			elsewhere = true // a topic this image does not have yet
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
				elsewhere = true
				continue
			}
			if l := t.Partitions[rp.Partition].Leader; l != b.cfg.NodeID {
				elsewhere = true
				refused = refused || (refusals && l >= 0 && b.refusals.holds(im, l, now))
			}
		}
	}
	if !elsewhere {
		return
	}
	if refused {
		b.awaitRefusedBrokers(ctx)
	}
	b.awaitMetadataApplied(ctx)
	wctx, cancel := b.waitTimeout(ctx, refusedLeaderHold)
	defer cancel()
	b.partitions.waitReconciled(wctx, b.Image().Offset)
}
