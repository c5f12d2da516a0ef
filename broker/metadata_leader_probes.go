package broker

// The broker's side of the probes of the leaders a Metadata answer names
// (controller/leader_probes.go decides which to probe, coalesces and bounds the wait):
// the dial and ApiVersions of one probe, and the Metadata request's topics.

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newLeaderProbes returns the Metadata path's probes; b.refusals is set.
func newLeaderProbes(b *Broker) *controller.LeaderProbes {
	return controller.NewLeaderProbes(b.probeLeaderAnswers, func(fn func()) { b.goLoop("leader probe", fn) }, b.refusals)
}

// metadataTopics returns the topics of im that r asks for (every topic for a null
// list).
func metadataTopics(im *metadata.Image, r *kmsg.MetadataRequest) []*metadata.Topic {
	var topics []*metadata.Topic
	if r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0) {
		for _, t := range im.Topics {
			topics = append(topics, t)
		}
		return topics
	}
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
	return topics
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
	im := b.Image()
	b.leaderProbes.Await(ctx, controller.ProbeTargets(im, metadataTopics(im, r), b.cfg.NodeID))
	b.awaitRefusedBrokers(ctx)
}

// probeLeaderAnswers is the Metadata path's probe of br. A connect is not enough there:
// a process being killed closes its connections before its listener, and in between
// its kernel still completes connects (the connection waits in the accept queue until
// the listener goes, then is reset), which is exactly when the clients that saw the
// connections close ask for metadata. So on a plaintext inter-broker listener the
// probe sends ApiVersions, again until it is refused, answered or
// controller.LeaderProbeAnswerWait has passed (controller.ProbeUntilAnswered). On a
// TLS or SASL listener the probe is the connect alone (a handshake per Metadata
// request would cost too much).
func (b *Broker) probeLeaderAnswers(br *metadata.Broker) controller.ProbeResult {
	if b.interBroker == nil || b.interBroker.tls != nil || b.interBroker.mechanism != "" {
		return b.probeBroker(br)
	}
	addr, ok := b.interBrokerAddr(br)
	if !ok {
		return controller.ProbeUnanswered
	}
	ctx, cancel := b.waitTimeout(context.Background(), controller.LeaderProbeAnswerWait)
	defer cancel()
	clientID := fmt.Sprintf("%s%d", forwardedClientPrefix, b.cfg.NodeID)
	return controller.ProbeUntilAnswered(ctx, func(ctx context.Context) controller.ProbeResult {
		return b.askApiVersions(ctx, addr, clientID)
	})
}

// askApiVersions connects to addr and asks ApiVersions: controller.ProbeRefused when
// the connect is refused, controller.ProbeConnected when answered,
// controller.ProbeUnanswered otherwise (the connection dropped, or ctx ended).
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
