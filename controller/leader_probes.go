package controller

// A Metadata answer must not send clients to a leader that is already dead. A client
// that saw a broker die (its produce connection ended) asks another broker for
// metadata within a millisecond or two, before that broker's own fetchers and the
// controller have noticed; an answer naming the dead leader then costs the client far
// more than one answer's delay, since franz-go refreshes metadata at most every
// MetadataMinAge (5 s) and others back off similarly. So before answering, a broker
// probes the other brokers that the answer names as partition leaders (ProbeTargets),
// coalesced across concurrent requests (one probe in flight per broker) and waited for
// at most MetadataProbeWait (LeaderProbes.Await). A refusal is recorded in Refusals and
// reported like a fetcher's (peer_refusals.go), and the answer waits, at most
// RefusedLeaderHold after that broker's first refusal, until the controller has fenced
// it and elected new leaders (evidence.go). A probe that is answered, or not in time,
// changes nothing. Live brokers answer a probe in one round trip; the answer's cost is
// that. The broker dials (broker/metadata_leader_probes.go).

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// MetadataProbeWait bounds a Metadata answer's wait for its leaders' probes.
const MetadataProbeWait = 100 * time.Millisecond

// LeaderProbeAnswerWait bounds the wait for a probed leader's answer
// (ProbeUntilAnswered).
const LeaderProbeAnswerWait = 50 * time.Millisecond

// probeRetryInterval is how soon a probe whose connection dropped before any answer
// connects again: a dying process's listener goes within milliseconds.
const probeRetryInterval = 2 * time.Millisecond

// LeaderProbes are the probes in flight, one per broker, shared by the Metadata
// requests that need them. Safe for concurrent use; mu is a leaf.
type LeaderProbes struct {
	probe    func(*metadata.Broker) ProbeResult
	spawn    func(fn func())
	refusals *Refusals

	mu sync.Mutex
	// inflight by broker id; guarded by mu.
	inflight map[int32]*leaderProbe
}

// leaderProbe is one probe; result is set before done is closed.
type leaderProbe struct {
	done   chan struct{}
	result ProbeResult
}

// NewLeaderProbes returns probes that run probe on a goroutine started by spawn and
// record a refusal in refusals before the probe's waiters wake.
func NewLeaderProbes(probe func(*metadata.Broker) ProbeResult, spawn func(fn func()), refusals *Refusals) *LeaderProbes {
	return &LeaderProbes{probe: probe, spawn: spawn, refusals: refusals, inflight: map[int32]*leaderProbe{}}
}

// start returns the probe of br in flight, starting one if there is none.
func (lp *LeaderProbes) start(br *metadata.Broker) *leaderProbe {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if p := lp.inflight[br.ID]; p != nil {
		return p
	}
	p := &leaderProbe{done: make(chan struct{})}
	lp.inflight[br.ID] = p
	lp.spawn(func() {
		p.result = lp.probe(br)
		if p.result == ProbeRefused {
			lp.refusals.Refused(br.ID, br.Epoch, time.Now())
		}
		lp.mu.Lock()
		delete(lp.inflight, br.ID)
		lp.mu.Unlock()
		close(p.done)
	})
	return p
}

// Await probes leaders (joining the probes in flight) and waits for their results, at
// most MetadataProbeWait or until ctx ends.
func (lp *LeaderProbes) Await(ctx context.Context, leaders []*metadata.Broker) {
	if len(leaders) == 0 {
		return
	}
	probes := make([]*leaderProbe, len(leaders))
	for i, br := range leaders {
		probes[i] = lp.start(br)
	}
	timer := time.NewTimer(MetadataProbeWait)
	defer timer.Stop()
	for _, p := range probes {
		select {
		case <-p.done:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// ProbeTargets returns the registered, unfenced brokers other than self that lead a
// partition of topics: the leaders a Metadata answer naming topics should probe.
func ProbeTargets(im *metadata.Image, topics []*metadata.Topic, self int32) []*metadata.Broker {
	var ids []int32
	for _, t := range topics {
		for _, p := range t.Partitions {
			if p.Leader >= 0 && p.Leader != self && !slices.Contains(ids, p.Leader) {
				ids = append(ids, p.Leader)
			}
		}
	}
	var out []*metadata.Broker
	for _, id := range ids {
		if br, ok := im.Brokers[id]; ok && !br.Fenced {
			out = append(out, br)
		}
	}
	return out
}

// ProbeUntilAnswered repeats ask (one connect and request) until it is refused
// (ProbeRefused: a dying process) or answered (ProbeConnected: alive), every
// probeRetryInterval, until ctx ends (ProbeUnanswered: slow, paused or shedding, its
// session decides). A connection dropped before any answer means a dying process (its
// listener goes within milliseconds) or one shedding connections.
func ProbeUntilAnswered(ctx context.Context, ask func(ctx context.Context) ProbeResult) ProbeResult {
	for {
		if r := ask(ctx); r != ProbeUnanswered {
			return r
		}
		select {
		case <-ctx.Done():
			return ProbeUnanswered
		case <-time.After(probeRetryInterval):
		}
	}
}
