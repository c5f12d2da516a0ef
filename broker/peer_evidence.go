package broker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// Failure detection faster than the session (the controller's side; the brokers' side
// is peer_reports.go). A broker whose peers' connections are refused is fenced on that
// evidence instead of after broker.session.timeout.ms:
//
//   - a report of a refusal makes the controller probe the suspect itself: a TCP
//     connect to its inter-broker listener. REFUSED proves that no process listens
//     there: the broker is fenced at once. A connect that succeeds proves the process
//     is there (a paused process's kernel still accepts), so its session decides, as
//     before. No answer within peerProbeTimeout proves nothing by itself;
//   - then a majority of the suspect's peers (the other unfenced brokers) having
//     reported refusals within one session timeout fences it: the controller cannot
//     see it, and most of the cluster cannot reach it. One reporter cut off from the
//     others, or from the suspect, never fences a healthy broker on its own.
//
// A report names the broker epoch the reporter's image had, so a report about a dead
// incarnation never fences the restarted one. Fencing is always safe for data (the
// ISR keeps a last member); a live broker that was fenced is unfenced by its next
// caught-up heartbeat.

// peerProbeTimeout bounds the controller's connect to a suspect's listener. A refusal
// comes back at once; a connect that has not completed by then proves nothing.
const peerProbeTimeout = 500 * time.Millisecond

// peerProbeInterval is the least time between two probes of one suspect.
const peerProbeInterval = 200 * time.Millisecond

// probeResult is what a connect to a broker's inter-broker listener showed.
type probeResult int

const (
	// probeUnanswered: no connection and no refusal (timeout, unreachable network, no
	// known address): proves nothing.
	probeUnanswered probeResult = iota
	// probeRefused: the connection was refused: no process listens on the address.
	probeRefused
	// probeConnected: the listener accepted the connection: the process is there.
	probeConnected
)

func (r probeResult) String() string {
	switch r {
	case probeRefused:
		return "refused"
	case probeConnected:
		return "connected"
	}
	return "unanswered"
}

// fencesOnPeerEvidence is the evidence rule: the controller's probe was refused, or it
// did not connect and more than half of the suspect's peers (the unfenced brokers other
// than the suspect) reported refusals. A probe that connected fences nothing: the
// process is alive and its session decides. Pure.
func fencesOnPeerEvidence(probe probeResult, reporters, peers []int32) bool {
	switch probe {
	case probeRefused:
		return true
	case probeConnected:
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
	result    probeResult         // the last probe's result
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
// when not, the last probe's result (probeConnected before any).
func (e *peerEvidence) report(reporter, suspect int32, epoch int64, now time.Time) (probe bool, last probeResult) {
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
			return false, probeConnected
		}
		return false, s.result
	}
	s.probing, s.probedAt = true, now
	return true, 0
}

// probeDone ends suspect's probe in flight with its result.
func (e *peerEvidence) probeDone(suspect int32, epoch int64, result probeResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.suspects[suspect]; s != nil && s.epoch == epoch {
		s.probing, s.probed, s.result = false, true, result
	}
}

// lastProbe returns the result of suspect's last finished probe at epoch.
func (e *peerEvidence) lastProbe(suspect int32, epoch int64) (probeResult, bool) {
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

// refusedPeersReported handles the refusals a heartbeat from reporter carried
// (controller side, on the heartbeat's goroutine, which must not wait): each report
// about a registered, unfenced broker at the epoch named, other than the reporter and
// this controller itself, may start a probe on its own goroutine.
func (b *Broker) refusedPeersReported(reporter int32, refused []peerRefusal) {
	im := b.Image()
	now := time.Now()
	for _, p := range refused {
		br, ok := im.Brokers[p.BrokerID]
		if !ok || br.Fenced || br.Epoch != p.BrokerEpoch || p.BrokerID == reporter || p.BrokerID == b.cfg.NodeID {
			continue
		}
		suspect, epoch := p.BrokerID, p.BrokerEpoch
		probe, last := b.evidence.report(reporter, suspect, epoch, now)
		if probe {
			b.logger.Info("a broker reports refused connections: probing it", "broker", suspect, "reporter", reporter)
			b.goLoop("peer probe", func() { b.probeSuspect(suspect, epoch) })
			continue
		}
		// No new probe yet: a report may still complete a majority the last
		// (unanswered) probe could not decide.
		reporters := b.evidence.reporters(suspect, epoch, now.Add(-b.cfg.durationMs("broker.session.timeout.ms")))
		if last == probeUnanswered && fencesOnPeerEvidence(last, reporters, peersOf(im, suspect)) {
			b.goLoop("peer fence", func() {
				b.fenceOnEvidence(suspect, epoch, "a majority of its peers had connections refused and the controller could not connect", reporters)
			})
		}
	}
}

// probeSuspect probes broker id (at epoch) and fences it if the evidence rule says so.
func (b *Broker) probeSuspect(id int32, epoch int64) {
	result := probeConnected // a broker gone or fenced meanwhile: nothing to decide
	defer func() { b.evidence.probeDone(id, epoch, result) }()
	br, ok := b.Image().Brokers[id]
	if !ok || br.Fenced || br.Epoch != epoch {
		return
	}
	result = b.probeBroker(br)
	since := time.Now().Add(-b.cfg.durationMs("broker.session.timeout.ms"))
	reporters := b.evidence.reporters(id, epoch, since)
	if !fencesOnPeerEvidence(result, reporters, peersOf(b.Image(), id)) {
		b.logger.Info("a reported broker is not fenced on that evidence: its session decides", "broker", id,
			"probe", result.String(), "reporters", reporters)
		return
	}
	reason := "its listener refused the controller's connection"
	if result != probeRefused {
		reason = "a majority of its peers had connections refused and the controller could not connect"
	}
	b.fenceOnEvidence(id, epoch, reason, reporters)
}

// probeBroker connects to br's inter-broker listener and closes the connection at once
// (no byte is sent: the broker closes it as an ordinary client end).
func (b *Broker) probeBroker(br *metadata.Broker) probeResult {
	addr, ok := b.interBrokerAddr(br)
	if !ok {
		return probeUnanswered
	}
	ctx, cancel := b.waitTimeout(context.Background(), peerProbeTimeout)
	defer cancel()
	nc, err := b.dial(ctx, "tcp", addr)
	switch {
	case err == nil:
		nc.Close()
		return probeConnected
	case isConnectionRefused(err):
		return probeRefused
	}
	return probeUnanswered
}

// fenceOnEvidence fences broker id at epoch through the controller goroutine, if it is
// still that incarnation and unfenced.
func (b *Broker) fenceOnEvidence(id int32, epoch int64, reason string, reporters []int32) {
	ctx, cancel := b.waitTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var before *metadata.Image
	var records []metadata.Record
	_, err := b.controllerDo(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		before, records = nil, nil
		br, ok := im.Brokers[id]
		if !ok || br.Fenced || br.Epoch != epoch {
			return nil, nil
		}
		before, records = im, metadata.FenceBrokerRecords(im, id, b.uncleanAllowed(im))
		return records, nil
	})
	if err != nil {
		b.logger.Debug("fencing a broker on peer evidence not done", "broker", id, "error", err)
		return
	}
	if len(records) == 0 {
		return
	}
	logUncleanElections(b, before, records)
	b.logger.Warn("broker fenced before its session expired: "+reason+"; removed from every ISR, leaders re-elected",
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
func (b *Broker) fencePreviousController(previous int32) {
	if previous < 0 || previous == b.cfg.NodeID {
		return
	}
	im := b.Image()
	br, ok := im.Brokers[previous]
	if !ok || br.Fenced {
		return
	}
	result := b.probeBroker(br)
	if result == probeConnected {
		b.logger.Info("the previous controller's listener answers: it keeps its registration", "broker", previous)
		return
	}
	records := metadata.FenceBrokerRecords(im, previous, b.uncleanAllowed(im))
	ctx, cancel := b.waitTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.propose(ctx, records...); err != nil {
		b.logger.Debug("fencing the previous controller not done", "broker", previous, "error", err)
		return
	}
	logUncleanElections(b, im, records)
	b.logger.Warn("previous controller unreachable: fenced as this controller starts; removed from every ISR, leaders re-elected",
		"broker", previous, "probe", result.String(), "partition_changes", len(records)-1)
}
