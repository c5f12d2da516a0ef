package broker

// KIP-951's leader discovery hints: a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
// answer to Produce (v10+) or Fetch (v16+) names the partition's current leader and
// epoch (CurrentLeader) as this broker's image has them, and the answer's
// NodeEndpoints carry that leader's endpoint on the listener the request came in on,
// so that a client moves the partition at once instead of waiting for a metadata
// refresh. A partition without a leader, or whose leader is fenced or this broker
// itself, gets no hint (-1, -1): a metadata refresh is the client's only way then.

import (
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderHints collects the hints of one answer.
type leaderHints struct {
	self     int32
	im       *metadata.Image
	listener string
	named    map[int32]bool // the leaders hinted, each named once in NodeEndpoints
	order    []int32
}

func (b *Broker) newLeaderHints(listener string) *leaderHints {
	return &leaderHints{self: b.cfg.NodeID, im: b.Image(), listener: listener}
}

// hintedError reports whether an answer's error code carries a hint (KIP-951).
func hintedError(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}

// leader returns topic-partition's leader and leader epoch to hint, or false.
func (h *leaderHints) leader(topic string, partition int32) (int32, int32, bool) {
	t := h.im.Topic(topic)
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return -1, -1, false
	}
	p := t.Partitions[partition]
	br := h.im.Brokers[p.Leader]
	if p.Leader < 0 || p.Leader == h.self || br == nil || br.Fenced {
		return -1, -1, false
	}
	if _, ok := endpointFor(br, h.listener); !ok {
		return -1, -1, false
	}
	if !h.named[p.Leader] {
		if h.named == nil {
			h.named = map[int32]bool{}
		}
		h.named[p.Leader] = true
		h.order = append(h.order, p.Leader)
	}
	return p.Leader, p.LeaderEpoch, true
}

// fill sets a partition's CurrentLeader (leader, epoch) when its answer's code carries
// a hint and there is one.
func (h *leaderHints) fill(topic string, partition int32, code int16, leader, epoch *int32) {
	if !hintedError(code) {
		return
	}
	if id, e, ok := h.leader(topic, partition); ok {
		*leader, *epoch = id, e
	}
}

// produce fills the hints of resp (v10+).
func (h *leaderHints) produce(resp *kmsg.ProduceResponse) {
	if resp.Version < 10 {
		return
	}
	for _, t := range resp.Topics {
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			h.fill(t.Topic, p.Partition, p.ErrorCode, &p.CurrentLeader.LeaderID, &p.CurrentLeader.LeaderEpoch)
		}
	}
	resp.Brokers = append(resp.Brokers, h.endpoints()...)
}

// fetch fills the hints of resp (v16+; topics by id).
func (h *leaderHints) fetch(resp *kmsg.FetchResponse) {
	if resp.Version < 16 {
		return
	}
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		tp := h.im.TopicByID(metadata.Uuid(t.TopicID))
		if tp == nil {
			continue
		}
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			h.fill(tp.Name, p.Partition, p.ErrorCode, &p.CurrentLeader.LeaderID, &p.CurrentLeader.LeaderEpoch)
		}
	}
	for _, nb := range h.endpoints() {
		resp.Brokers = append(resp.Brokers, kmsg.FetchResponseBroker(nb)) // the same fields
	}
}

// endpoints are the NodeEndpoints of the leaders hinted, in hint order.
func (h *leaderHints) endpoints() []kmsg.ProduceResponseBroker {
	var out []kmsg.ProduceResponseBroker
	for _, id := range h.order {
		e, _ := endpointFor(h.im.Brokers[id], h.listener)
		nb := kmsg.NewProduceResponseBroker()
		nb.NodeID, nb.Host, nb.Port, nb.Rack = id, e.Host, e.Port, rackOf(h.im.Brokers[id])
		out = append(out, nb)
	}
	return out
}

// rackOf is a broker's rack as the protocol's nullable string.
func rackOf(br *metadata.Broker) *string {
	if br.Rack == "" {
		return nil
	}
	rack := br.Rack
	return &rack
}
