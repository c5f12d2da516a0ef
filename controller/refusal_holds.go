package controller

// While the controller fences a broker that refused this broker's connections (a
// round trip after the report: evidence.go), answers that would send a client to it
// wait: a Metadata answer naming it as a leader, and a Produce for a partition this
// broker's image still has it lead (the client found the new leader here before this
// broker applied the change; NOT_LEADER_OR_FOLLOWER would send it to a metadata refresh
// that franz-go makes at most every 5 s). These are the decisions, given the image; the
// broker waits (broker/refused_leader_hold.go).

import (
	"iter"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// RefusedLeaderHold bounds how long answers wait, after a broker first refused this
// broker's connection, for the controller to fence it. A fence normally lands within a
// round trip of the report; the bound covers a controller election too, since the dead
// broker may have been the controller (its successor fences it as its term starts:
// evidence.go).
const RefusedLeaderHold = 3 * time.Second

// HoldUntil returns the time until which an answer from im should wait: the latest end
// of the hold window of any broker that refused a connection at the epoch im still has
// for it, unfenced; ok is false when there is none.
func (r *Refusals) HoldUntil(im *metadata.Image, now time.Time) (until time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, first := range r.firstRefused {
		end := first.Add(RefusedLeaderHold)
		if !end.After(now) {
			continue
		}
		if br, found := im.Brokers[key.BrokerID]; found && !br.Fenced && br.Epoch == key.BrokerEpoch && end.After(until) {
			until, ok = end, true
		}
	}
	return until, ok
}

// HoldingRecently reports whether any refusal is recent enough to hold an answer: one
// atomic load, the Produce path's cost when nothing failed.
func (r *Refusals) HoldingRecently(now time.Time) bool {
	return now.UnixNano()-r.latestFirst.Load() < int64(RefusedLeaderHold)
}

// Holds reports whether broker id, at the epoch im has for it, is a refused broker an
// answer should wait for.
func (r *Refusals) Holds(im *metadata.Image, id int32, now time.Time) bool {
	br, ok := im.Brokers[id]
	if !ok || br.Fenced {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	first, ok := r.firstRefused[PeerRefusal{BrokerID: id, BrokerEpoch: br.Epoch}]
	return ok && now.Sub(first) < RefusedLeaderHold
}

// ProduceHold decides for a Produce naming topics and their partitions whether it
// names a partition that im has another broker than self lead, or a topic or partition
// im does not have (elsewhere: the image may be about to change), and whether such a
// leader is a refused broker not fenced yet (refused: wait for its fence). refusals
// says HoldingRecently was true.
func (r *Refusals) ProduceHold(im *metadata.Image, self int32, topics iter.Seq2[string, []int32], refusals bool, now time.Time) (elsewhere, refused bool) {
	for topic, partitions := range topics {
		t := im.Topic(topic)
		if t == nil {
			elsewhere = true // a topic this image does not have yet
			continue
		}
		for _, p := range partitions {
			if p < 0 || int(p) >= len(t.Partitions) {
				elsewhere = true
				continue
			}
			if l := t.Partitions[p].Leader; l != self {
				elsewhere = true
				refused = refused || (refusals && l >= 0 && r.Holds(im, l, now))
			}
		}
	}
	return elsewhere, refused
}
