package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Metadata answer must not send clients to a leader that is already dead. A client
// that saw a broker die (its produce connection ended) asks another broker for
// metadata within a millisecond or two, before that broker's own fetchers and the
// controller have noticed; an answer naming the dead leader then costs the client far
// more than one answer's delay, since franz-go refreshes metadata at most every
// MetadataMinAge (5 s) and others back off similarly. So before answering, a broker
// probes the other brokers that the answer names as partition leaders, coalesced across
// concurrent requests and waited for at most metadataProbeWait (probeLeaderAnswers). A
// refusal is recorded and reported like a fetcher's (peer_reports.go) and the answer
// waits, at most refusedLeaderHold after that broker's first refusal, until the
// controller has fenced it and elected new leaders (controller/evidence.go). A probe that
// is answered, or not in time, changes nothing. Live brokers answer a probe in one
// round trip; the answer's cost is that.

// metadataProbeWait bounds a Metadata answer's wait for its leaders' probes.
const metadataProbeWait = 100 * time.Millisecond

// leaderProbeAnswerWait bounds the wait for a probed leader's ApiVersions answer.
const leaderProbeAnswerWait = 50 * time.Millisecond

// leaderProbes are the probes in flight, one per broker, shared by the Metadata
// requests that need them. Safe for concurrent use; mu is a leaf.
type leaderProbes struct {
	mu sync.Mutex
	// inflight by broker id; guarded by mu.
	inflight map[int32]*leaderProbe
}

// leaderProbe is one probe; result is set before done is closed.
type leaderProbe struct {
	done   chan struct{}
	result controller.ProbeResult
}

func newLeaderProbes() *leaderProbes {
	return &leaderProbes{inflight: map[int32]*leaderProbe{}}
}

// probeLeader returns the probe of br in flight, starting one if there is none. A
// refusal is recorded in b.refusals before done is closed.
func (b *Broker) probeLeader(br *metadata.Broker) *leaderProbe {
	lp := b.leaderProbes
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if p := lp.inflight[br.ID]; p != nil {
		return p
	}
	p := &leaderProbe{done: make(chan struct{})}
	lp.inflight[br.ID] = p
	b.goLoop("leader probe", func() {
		p.result = b.probeLeaderAnswers(br)
		if p.result == controller.ProbeRefused {
			b.refusals.refused(br.ID, br.Epoch, time.Now())
		}
		lp.mu.Lock()
		delete(lp.inflight, br.ID)
		lp.mu.Unlock()
		close(p.done)
	})
	return p
}

// metadataLeaders returns the registered, unfenced brokers other than self that lead a
// partition of the topics r asks for (every topic for a null list).
func metadataLeaders(im *metadata.Image, r *kmsg.MetadataRequest, self int32) []*metadata.Broker {
	var topics []*metadata.Topic
	if r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0) {
		for _, t := range im.Topics {
			topics = append(topics, t)
		}
	} else {
		for _, rt := range r.Topics {
			var t *metadata.Topic
			if rt.Topic != nil {
				t = im.Topic(*rt.Topic)
			} else {
				t = im.TopicByID(metadata.Uuid(rt.TopicID))
			}
			if t != nil {
				topics = append(topics, t)
			}
		}
	}
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

// checkMetadataLeaders probes the leaders a Metadata answer would name, then holds the
// answer while a leader that refused is not fenced yet (awaitRefusedBrokers), and while
// this node's Raft log holds entries it has not applied (a topic created a moment ago
// would otherwise be UNKNOWN_TOPIC_OR_PARTITION here, and franz-go asks again only 5 s
// later). It runs on the connection's reader goroutine before the answer is built, like
// the start-up readiness wait, so the connection's order is kept.
func (b *Broker) checkMetadataLeaders(ctx context.Context, r *kmsg.MetadataRequest) {
	if b.metadataBehind() {
		b.awaitMetadataApplied(ctx)
	}
	leaders := metadataLeaders(b.Image(), r, b.cfg.NodeID)
	if len(leaders) > 0 {
		probes := make([]*leaderProbe, len(leaders))
		for i, br := range leaders {
			probes[i] = b.probeLeader(br)
		}
		timer := time.NewTimer(metadataProbeWait)
	wait:
		for _, p := range probes {
			select {
			case <-p.done:
			case <-timer.C:
				break wait
			case <-ctx.Done():
				break wait
			}
		}
		timer.Stop()
	}
	b.awaitRefusedBrokers(ctx)
}

// probeLeaderAnswers is the Metadata path's probe of br. A connect is not enough there:
// a process being killed closes its connections before its listener, and in between
// its kernel still completes connects (the connection waits in the accept queue until
// the listener goes, then is reset), which is exactly when the clients that saw the
// connections close ask for metadata. So on a plaintext inter-broker listener the
// probe sends ApiVersions: an answer proves a live broker; a connection dropped before
// any answer means a dying process (its listener goes within milliseconds) or one
// shedding connections, and the probe connects again, every millisecond or two, until
// it is refused (dying), answered (alive) or leaderProbeAnswerWait has passed. No
// answer in time (a loaded or paused process) proves nothing. On a TLS or SASL
// listener the probe is the connect alone (a handshake per Metadata request would cost
// too much).
func (b *Broker) probeLeaderAnswers(br *metadata.Broker) controller.ProbeResult {
	if b.interBroker == nil || b.interBroker.tls != nil || b.interBroker.mechanism != "" {
		return b.probeBroker(br)
	}
	addr, ok := b.interBrokerAddr(br)
	if !ok {
		return controller.ProbeUnanswered
	}
	ctx, cancel := b.waitTimeout(context.Background(), leaderProbeAnswerWait)
	defer cancel()
	clientID := fmt.Sprintf("%s%d", forwardedClientPrefix, b.cfg.NodeID)
	for {
		switch b.askApiVersions(ctx, addr, clientID) {
		case controller.ProbeRefused:
			return controller.ProbeRefused
		case controller.ProbeConnected:
			return controller.ProbeConnected
		}
		select {
		case <-ctx.Done():
			return controller.ProbeUnanswered // slow, paused or shedding: its session decides
		case <-time.After(2 * time.Millisecond): // the dying listener goes in ms
		}
	}
}

// askApiVersions connects to addr and asks ApiVersions: controller.ProbeRefused when the connect
// is refused, controller.ProbeConnected when answered, controller.ProbeUnanswered otherwise (the connection
// dropped, or ctx ended).
func (b *Broker) askApiVersions(ctx context.Context, addr, clientID string) controller.ProbeResult {
	cl, err := rpc.DialInline(ctx, b.dial, addr, clientID)
	switch {
	case isConnectionRefused(err):
		return controller.ProbeRefused
	case err != nil:
		return controller.ProbeUnanswered
	}
	defer cl.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	if _, err := cl.Do(ctx, req); err != nil {
		return controller.ProbeUnanswered
	}
	return controller.ProbeConnected
}
