package controller

// The reporting side of the evidence rule (evidence.go), kept by every broker: the
// refused connections it met on other brokers' inter-broker listeners (its follower
// fetchers' reconnects, and the probes of the leaders a Metadata answer names:
// leader_probes.go), waiting to be reported to the controller. A refusal is reported
// at once in an extra BrokerHeartbeat (the broker's lifecycle loop watches Notify); the
// controller decides. Only refusals count: a connection refused on a listener's address
// means no process listens there, while a timeout or a stalled connection (a paused
// process, a slow disk, a lossy link) proves nothing and is never reported. A reset or
// an end of stream on an open connection makes the fetcher reconnect, so a dead
// process's reset becomes a refusal on the next dial. The same records decide which
// answers wait for a refused broker's fence (refusal_holds.go).

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// PeerReportInterval is how often one refused peer (broker id and epoch) is reported
// again while its connections keep being refused: each report makes the controller
// probe it, and a fetcher's reconnects come every 50 ms to 1 s.
const PeerReportInterval = 250 * time.Millisecond

// Refusals are a broker's refused connections to its peers, to report and to hold
// answers for. Safe for concurrent use; mu is a leaf.
type Refusals struct {
	mu sync.Mutex
	// pending holds the refusals not reported yet: broker id → the epoch this broker's
	// image had for it. Guarded by mu.
	pending map[int32]int64
	// reportedAt is when each (broker, epoch) was last taken for a heartbeat. Guarded
	// by mu.
	reportedAt map[PeerRefusal]time.Time
	// firstRefused is when each (broker, epoch) first refused a connection: answers
	// naming it wait for its fencing until RefusedLeaderHold after it
	// (refusal_holds.go). Guarded by mu.
	firstRefused map[PeerRefusal]time.Time
	// latestFirst is the latest firstRefused time (Unix nanoseconds), read without mu
	// on every Produce request: no hold can apply long after it.
	latestFirst atomic.Int64
	// notify (capacity 1) wakes the lifecycle loop to heartbeat now.
	notify chan struct{}
}

// NewRefusals returns empty Refusals.
func NewRefusals() *Refusals {
	return &Refusals{pending: map[int32]int64{}, reportedAt: map[PeerRefusal]time.Time{},
		firstRefused: map[PeerRefusal]time.Time{}, notify: make(chan struct{}, 1)}
}

// Notify is signalled when a refusal is to be reported now.
func (r *Refusals) Notify() <-chan struct{} { return r.notify }

// Refused records that broker id, registered at epoch in this broker's image, refused
// a connection now. It signals Notify unless the same refusal was reported within
// PeerReportInterval.
func (r *Refusals) Refused(id int32, epoch int64, now time.Time) {
	r.mu.Lock()
	key := PeerRefusal{BrokerID: id, BrokerEpoch: epoch}
	if _, ok := r.firstRefused[key]; !ok {
		r.firstRefused[key] = now
		r.latestFirst.Store(now.UnixNano())
	}
	if at, ok := r.reportedAt[key]; ok && now.Sub(at) < PeerReportInterval {
		r.mu.Unlock()
		return
	}
	r.pending[id] = epoch
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Take returns the refusals to report in the heartbeat being sent, sorted by broker id,
// and forgets reports older than a few intervals.
func (r *Refusals) Take(now time.Time) []PeerRefusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, at := range r.reportedAt {
		if now.Sub(at) > 4*PeerReportInterval {
			delete(r.reportedAt, k)
		}
	}
	for k, at := range r.firstRefused {
		if now.Sub(at) > RefusedLeaderHold+time.Minute {
			delete(r.firstRefused, k) // a broker refusing that long is fenced or restarted
		}
	}
	if len(r.pending) == 0 {
		return nil
	}
	out := make([]PeerRefusal, 0, len(r.pending))
	for id, epoch := range r.pending {
		out = append(out, PeerRefusal{BrokerID: id, BrokerEpoch: epoch})
		r.reportedAt[PeerRefusal{BrokerID: id, BrokerEpoch: epoch}] = now
	}
	clear(r.pending)
	slices.SortFunc(out, func(a, b PeerRefusal) int { return cmp.Compare(a.BrokerID, b.BrokerID) })
	return out
}

// Requeue puts back refusals whose heartbeat failed, unless a newer one came meanwhile.
func (r *Refusals) Requeue(refused []PeerRefusal) {
	if len(refused) == 0 {
		return
	}
	r.mu.Lock()
	for _, p := range refused {
		delete(r.reportedAt, p)
		if _, ok := r.pending[p.BrokerID]; !ok {
			r.pending[p.BrokerID] = p.BrokerEpoch
		}
	}
	r.mu.Unlock()
}
