package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// Failure detection faster than the session (the controller's side; the brokers' side
// is peer_refusals.go, fed by broker/peer_reports.go). A broker whose peers' connections
// are refused is fenced on that evidence instead of after broker.session.timeout.ms:
//
//   - a report of a refusal makes the controller probe the suspect itself: a TCP
//     connect to its inter-broker listener. REFUSED proves that no process listens
//     there: the broker is fenced at once. A connect that succeeds proves the process
//     is there (a paused process's kernel still accepts), so its session decides, as
//     before. No answer within PeerProbeTimeout proves nothing by itself;
//   - then a majority of the suspect's peers (the other unfenced brokers) having
//     reported refusals within one session timeout fences it: the controller cannot
//     see it, and most of the cluster cannot reach it. One reporter cut off from the
//     others, or from the suspect, never fences a healthy broker on its own.
//
// A report names the broker epoch the reporter's image had, so a report about a dead
// incarnation never fences the restarted one. Fencing is always safe for data (the
// ISR keeps a last member); a live broker that was fenced is unfenced by its next
// caught-up heartbeat.

// PeerProbeTimeout bounds the controller's connect to a suspect's listener. A refusal
// comes back at once; a connect that has not completed by then proves nothing.
const PeerProbeTimeout = 500 * time.Millisecond

// peerProbeInterval is the least time between two probes of one suspect.
const peerProbeInterval = 200 * time.Millisecond

// ProbeResult is what a connect to a broker's inter-broker listener showed.
type ProbeResult int

const (
	// ProbeUnanswered is no connection and no refusal (timeout, unreachable network,
	// no known address): it proves nothing.
	ProbeUnanswered ProbeResult = iota
	// ProbeRefused is a refused connection: no process listens on the address.
	ProbeRefused
	// ProbeConnected is a listener that accepted the connection: the process is there.
	ProbeConnected
)

// String names the result for logs.
func (r ProbeResult) String() string {
	switch r {
	case ProbeRefused:
		return "refused"
	case ProbeConnected:
		return "connected"
	}
	return "unanswered"
}

// PeerRefusal names a broker, at the epoch the reporter's image had for it, whose
// inter-broker listener refused the reporter's connection.
type PeerRefusal struct {
	BrokerID    int32
	BrokerEpoch int64
}

// fencesOnPeerEvidence is the evidence rule: the controller's probe was refused, or it
// did not connect and more than half of the suspect's peers (the unfenced brokers other
// than the suspect) reported refusals. A probe that connected fences nothing: the
// process is alive and its session decides. Pure.
func fencesOnPeerEvidence(probe ProbeResult, reporters, peers []int32) bool {
	switch probe {
	case ProbeRefused:
		return true
	case ProbeConnected:
		return false
	}
	n := 0
	for _, r := range reporters {
		if slices.Contains(peers, r) {
			n++
		}
	}
	return len(peers) > 0 && 2*n > len(peers)
}

// peerEvidence is the controller's record, for this term, of the refusals brokers
// reported and of its probes. Safe for concurrent use; mu is a leaf.
type peerEvidence struct {
	mu sync.Mutex
	// suspects by broker id; guarded by mu.
	suspects map[int32]*suspectEvidence
}

// suspectEvidence is what is known against one incarnation (epoch) of a broker.
type suspectEvidence struct {
	epoch     int64
	reporters map[int32]time.Time // reporter → its last report
	probing   bool                // a probe is in flight
	probedAt  time.Time           // when the last probe started
	probed    bool                // a probe ended, with result
	result    ProbeResult         // the last probe's result
}

func newPeerEvidence() *peerEvidence {
	return &peerEvidence{suspects: map[int32]*suspectEvidence{}}
}

// reset forgets everything (a new controller term).
func (e *peerEvidence) reset() {
	e.mu.Lock()
	clear(e.suspects)
	e.mu.Unlock()
}

// report records reporter's refusal by suspect (at epoch) and reports whether a probe
// should start now (none is in flight and none started within peerProbeInterval) and,
// when not, the last probe's result (ProbeConnected before any).
func (e *peerEvidence) report(reporter, suspect int32, epoch int64, now time.Time) (probe bool, last ProbeResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.suspects[suspect]
	if s == nil || s.epoch != epoch {
		s = &suspectEvidence{epoch: epoch, reporters: map[int32]time.Time{}}
		e.suspects[suspect] = s
	}
	s.reporters[reporter] = now
	if s.probing || (!s.probedAt.IsZero() && now.Sub(s.probedAt) < peerProbeInterval) {
		if !s.probed {
			return false, ProbeConnected
		}
		return false, s.result
	}
	s.probing, s.probedAt = true, now
	return true, 0
}

// probeDone ends suspect's probe in flight with its result.
func (e *peerEvidence) probeDone(suspect int32, epoch int64, result ProbeResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.suspects[suspect]; s != nil && s.epoch == epoch {
		s.probing, s.probed, s.result = false, true, result
	}
}

// lastProbe returns the result of suspect's last finished probe at epoch.
func (e *peerEvidence) lastProbe(suspect int32, epoch int64) (ProbeResult, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.suspects[suspect]; s != nil && s.epoch == epoch && s.probed && !s.probing {
		return s.result, true
	}
	return 0, false
}

// reporters returns the brokers that reported suspect at epoch since the given time.
func (e *peerEvidence) reporters(suspect int32, epoch int64, since time.Time) []int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.suspects[suspect]
	if s == nil || s.epoch != epoch {
		return nil
	}
	var out []int32
	for r, at := range s.reporters {
		if !at.Before(since) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// peersOf returns the unfenced brokers other than id: those whose reports count.
func peersOf(im *metadata.Image, id int32) []int32 {
	var out []int32
	for bid, br := range im.Brokers {
		if bid != id && !br.Fenced {
			out = append(out, bid)
		}
	}
	slices.Sort(out)
	return out
}

// RefusedPeersReported handles the refusals a heartbeat from reporter carried (on the
// heartbeat's goroutine: it never waits): each report about a registered, unfenced
// broker at the epoch named, other than the reporter and this controller itself, may
// start a probe on its own goroutine.
func (c *Controller) RefusedPeersReported(reporter int32, refused []PeerRefusal) {
	im := c.cfg.Image()
	now := time.Now()
	for _, p := range refused {
		br, ok := im.Brokers[p.BrokerID]
		if !ok || br.Fenced || br.Epoch != p.BrokerEpoch || p.BrokerID == reporter || p.BrokerID == c.cfg.NodeID {
			continue
		}
		suspect, epoch := p.BrokerID, p.BrokerEpoch
		probe, last := c.evidence.report(reporter, suspect, epoch, now)
		if probe {
			c.log.Info("a broker reports refused connections: probing it", "broker", suspect, "reporter", reporter)
			c.cfg.Go("peer probe", func() { c.probeSuspect(suspect, epoch) })
			continue
		}
		// No new probe yet: a report may still complete a majority the last
		// (unanswered) probe could not decide.
		reporters := c.evidence.reporters(suspect, epoch, now.Add(-c.cfg.SessionTimeout))
		if last == ProbeUnanswered && fencesOnPeerEvidence(last, reporters, peersOf(im, suspect)) {
			c.cfg.Go("peer fence", func() {
				c.fenceOnEvidence(suspect, epoch, "a majority of its peers had connections refused and the controller could not connect", reporters)
			})
		}
	}
}

// probeSuspect probes broker id (at epoch) and fences it if the evidence rule says so.
func (c *Controller) probeSuspect(id int32, epoch int64) {
	result := ProbeConnected // a broker gone or fenced meanwhile: nothing to decide
	defer func() { c.evidence.probeDone(id, epoch, result) }()
	br, ok := c.cfg.Image().Brokers[id]
	if !ok || br.Fenced || br.Epoch != epoch {
		return
	}
	result = c.cfg.Probe(br)
	since := time.Now().Add(-c.cfg.SessionTimeout)
	reporters := c.evidence.reporters(id, epoch, since)
	if !fencesOnPeerEvidence(result, reporters, peersOf(c.cfg.Image(), id)) {
		c.log.Info("a reported broker is not fenced on that evidence: its session decides", "broker", id,
			"probe", result.String(), "reporters", reporters)
		return
	}
	reason := "its listener refused the controller's connection"
	if result != ProbeRefused {
		reason = "a majority of its peers had connections refused and the controller could not connect"
	}
	c.fenceOnEvidence(id, epoch, reason, reporters)
}

// fenceOnEvidence fences broker id at epoch through the controller goroutine, if it is
// still that incarnation and unfenced.
func (c *Controller) fenceOnEvidence(id int32, epoch int64, reason string, reporters []int32) {
	ctx, cancel := c.bounded(context.Background(), 10*time.Second)
	defer cancel()
	var before *metadata.Image
	var records []metadata.Record
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		before, records = nil, nil
		br, ok := im.Brokers[id]
		if !ok || br.Fenced || br.Epoch != epoch {
			return nil, nil
		}
		before, records = im, metadata.FenceBrokerRecords(im, id, c.cfg.UncleanAllowed(im))
		return records, nil
	})
	if err != nil {
		c.log.Debug("fencing a broker on peer evidence not done", "broker", id, "error", err)
		return
	}
	if len(records) == 0 {
		return
	}
	c.LogUncleanElections(before, records)
	if c.absentSinceStart(id) {
		c.notStarted.fenced(id, epoch, time.Now())
		c.log.Info("broker not started yet: fenced until it registers ("+reason+"); removed from every ISR, leaders re-elected",
			"broker", id, "broker_epoch", epoch, "reporters", reporters, "partition_changes", len(records)-1)
		return
	}
	c.log.Warn("broker fenced before its session expired: "+reason+"; removed from every ISR, leaders re-elected",
		"broker", id, "broker_epoch", epoch, "reporters", reporters, "partition_changes", len(records)-1)
}

// fencePreviousController runs on the controller goroutine as a term starts, before
// any decision: the node that was Raft leader before this one lost the quorum, and its
// broker's heartbeats went to itself, so nothing says it is alive. It is probed: a
// listener that accepts keeps it registered (a live node that lost an election or
// handed leadership over; its session counts from its last Raft contact,
// activateSessions); one that refuses or does not answer is fenced at once, so no
// partition is placed on it or led by it after the election. A live node fenced this
// way is unfenced by its next caught-up heartbeat.
func (c *Controller) fencePreviousController(previous int32) {
	if previous < 0 || previous == c.cfg.NodeID {
		return
	}
	im := c.cfg.Image()
	br, ok := im.Brokers[previous]
	if !ok || br.Fenced {
		return
	}
	result := c.cfg.Probe(br)
	if result == ProbeConnected {
		c.log.Info("the previous controller's listener answers: it keeps its registration", "broker", previous)
		return
	}
	records := metadata.FenceBrokerRecords(im, previous, c.cfg.UncleanAllowed(im))
	ctx, cancel := c.bounded(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.propose(ctx, records...); err != nil {
		c.log.Debug("fencing the previous controller not done", "broker", previous, "error", err)
		return
	}
	c.LogUncleanElections(im, records)
	c.log.Warn("previous controller unreachable: fenced as this controller starts; removed from every ISR, leaders re-elected",
		"broker", previous, "probe", result.String(), "partition_changes", len(records)-1)
}

// LastProbe returns the result of the last finished probe of broker id at epoch this
// term, and whether there is one (tests and diagnostics).
func (c *Controller) LastProbe(id int32, epoch int64) (ProbeResult, bool) {
	return c.evidence.lastProbe(id, epoch)
}
