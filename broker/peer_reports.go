package broker

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// peerReportInterval is how often one refused peer (broker id and epoch) is reported
// again while its connections keep being refused: each report makes the controller
// probe it, and a fetcher's reconnects come every 50 ms to 1 s.
const peerReportInterval = 250 * time.Millisecond

// peerRefusals are the refused connections this broker met on other brokers'
// inter-broker listeners (its follower fetchers' reconnects, and the probes of the
// leaders a Metadata answer names: metadata_leader_probes.go), waiting to be reported
// to the controller. A refusal is reported at once in an extra BrokerHeartbeat (the
// lifecycle loop watches notify) carrying refusedPeersTag; the controller decides
// (controller/evidence.go). Only refusals count: a connection refused on a listener's address
// means no process listens there, while a timeout or a stalled connection (a paused
// process, a slow disk, a lossy link) proves nothing and is never reported. A reset or
// an end of stream on an open connection makes the fetcher reconnect, so a dead
// process's reset becomes a refusal on the next dial. Safe for concurrent use; mu is a
// leaf.
type peerRefusals struct {
	mu sync.Mutex
	// pending holds the refusals not reported yet: broker id → the epoch this broker's
	// image had for it. Guarded by mu.
	pending map[int32]int64
	// reportedAt is when each (broker, epoch) was last taken for a heartbeat. Guarded
	// by mu.
	reportedAt map[peerRefusal]time.Time
	// firstRefused is when each (broker, epoch) first refused a connection: answers
	// naming it wait for its fencing until refusedLeaderHold after it
	// (refused_leader_hold.go). Guarded by mu.
	firstRefused map[peerRefusal]time.Time
	// latestFirst is the latest firstRefused time (Unix nanoseconds), read without mu
	// on every Produce request: no hold can apply long after it.
	latestFirst atomic.Int64
	// notify (capacity 1) wakes the lifecycle loop to heartbeat now.
	notify chan struct{}
}

func newPeerRefusals() *peerRefusals {
	return &peerRefusals{pending: map[int32]int64{}, reportedAt: map[peerRefusal]time.Time{},
		firstRefused: map[peerRefusal]time.Time{}, notify: make(chan struct{}, 1)}
}

// isConnectionRefused reports whether err is a dial refused by the peer's host: no
// process listens on the address.
func isConnectionRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// refused records that broker id, registered at epoch in this broker's image, refused
// a connection now. It wakes the lifecycle loop unless the same refusal was reported
// within peerReportInterval.
func (r *peerRefusals) refused(id int32, epoch int64, now time.Time) {
	r.mu.Lock()
	key := peerRefusal{BrokerID: id, BrokerEpoch: epoch}
	if _, ok := r.firstRefused[key]; !ok {
		r.firstRefused[key] = now
		r.latestFirst.Store(now.UnixNano())
	}
	if at, ok := r.reportedAt[key]; ok && now.Sub(at) < peerReportInterval {
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

// take returns the refusals to report in the heartbeat being sent, sorted by broker id,
// and forgets reports older than a few intervals.
func (r *peerRefusals) take(now time.Time) []peerRefusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, at := range r.reportedAt {
		if now.Sub(at) > 4*peerReportInterval {
			delete(r.reportedAt, k)
		}
	}
	for k, at := range r.firstRefused {
		if now.Sub(at) > refusedLeaderHold+time.Minute {
			delete(r.firstRefused, k) // a broker refusing that long is fenced or restarted
		}
	}
	if len(r.pending) == 0 {
		return nil
	}
	out := make([]peerRefusal, 0, len(r.pending))
	for id, epoch := range r.pending {
		out = append(out, peerRefusal{BrokerID: id, BrokerEpoch: epoch})
		r.reportedAt[peerRefusal{BrokerID: id, BrokerEpoch: epoch}] = now
	}
	clear(r.pending)
	slices.SortFunc(out, func(a, b peerRefusal) int { return cmp.Compare(a.BrokerID, b.BrokerID) })
	return out
}

// requeue puts back refusals whose heartbeat failed, unless a newer one came meanwhile.
func (r *peerRefusals) requeue(refused []peerRefusal) {
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

// noteDialError records err, the failed dial of broker id's inter-broker listener, if it
// is a refusal of a broker this broker's image holds registered and unfenced (a fenced
// one leads nothing and is nobody's concern).
func (b *Broker) noteDialError(id int32, err error) {
	if err == nil || !isConnectionRefused(err) || id == b.cfg.NodeID {
		return
	}
	br, ok := b.Image().Brokers[id]
	if !ok || br.Fenced {
		return
	}
	b.refusals.refused(id, br.Epoch, time.Now())
}
