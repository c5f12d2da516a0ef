package group

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers for the consumer group tests: a group with a clock and a metadata image,
// request builders, and the invariants every state must keep.

type cgHarness struct {
	t      testing.TB
	g      *ConsumerGroup
	now    time.Time
	topics ConsumerTopicMap
	// events are every event the group produced, in order: replaying them into a
	// fresh group must give the same group.
	events []ConsumerEvent
	// noReplay skips the replay check after each step (the property test replays once
	// per run).
	noReplay bool
}

func newCG(t testing.TB, cfg ConsumerConfig, topics ConsumerTopicMap) *cgHarness {
	t.Helper()
	return &cgHarness{t: t, g: NewConsumerGroup("g", cfg), now: time.Unix(1_700_000_000, 0), topics: topics}
}

func testConsumerConfig() ConsumerConfig {
	cfg := DefaultConsumerConfig()
	n := 0
	cfg.NewMemberID = func() string { n++; return fmt.Sprintf("generated-%d", n) }
	return cfg
}

// cgTopics is a metadata image of topics "a", "b", ... with the given partition counts.
func cgTopics(counts ...int32) ConsumerTopicMap {
	m := ConsumerTopicMap{}
	for i, c := range counts {
		name := string(rune('a' + i))
		m[name] = AssignorTopic{ID: testTopicID(i + 1), Name: name, Partitions: c}
	}
	return m
}

func (h *cgHarness) send(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	res := h.g.Heartbeat(req, ConsumerClient{ClientID: "client", ClientHost: "/127.0.0.1"}, h.now, h.topics)
	if res.Response.ErrorCode != 0 && len(res.Events) > 0 {
		h.t.Fatalf("error %d came with events %v", res.Response.ErrorCode, res.Events)
	}
	h.events = append(h.events, res.Events...)
	h.check()
	return res.Response
}

func (h *cgHarness) expire() []ConsumerEvent {
	h.t.Helper()
	evs := h.g.Expire(h.now, h.topics)
	h.events = append(h.events, evs...)
	h.check()
	return evs
}

// join sends a v1 join (epoch 0) subscribing to topics.
func (h *cgHarness) join(member string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	return h.send(cgJoinRequest(member, topics...))
}

// ok sends req and fails the test on an error.
func (h *cgHarness) ok(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	resp := h.send(req)
	if resp.ErrorCode != 0 {
		h.t.Fatalf("heartbeat of %q at epoch %d: %v %s", req.MemberID, req.MemberEpoch, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	return resp
}

func cgJoinRequest(member string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group = "g"
	req.MemberID = member
	req.MemberEpoch = 0
	req.RebalanceTimeoutMillis = 30_000
	req.SubscribedTopicNames = append([]string{}, topics...)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// hbRequest is a regular heartbeat reporting owned (nil owned: not reported).
func cgHBRequest(member string, epoch int32, owned AssignedPartitions) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group = "g"
	req.MemberID = member
	req.MemberEpoch = epoch
	req.RebalanceTimeoutMillis = -1
	if owned != nil {
		req.Topics = ownedTopics(owned)
	}
	return req
}

func staticReq(req *kmsg.ConsumerGroupHeartbeatRequest, instance string) *kmsg.ConsumerGroupHeartbeatRequest {
	req.InstanceID = kmsg.StringPtr(instance)
	return req
}

func ownedTopics(a AssignedPartitions) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, t := range sortedTopics(a) {
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t, Partitions: slices.Clone(a[t])})
	}
	return out
}

// respAssignment is the response's assignment, nil when it carries none.
func respAssignment(resp *kmsg.ConsumerGroupHeartbeatResponse) AssignedPartitions {
	if resp.Assignment == nil {
		return nil
	}
	out := AssignedPartitions{}
	for _, t := range resp.Assignment.Topics {
		out[t.TopicID] = slices.Clone(t.Partitions)
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func countPartitions(a AssignedPartitions) int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// check asserts the invariants: no partition with two members (assigned or pending
// revocation), no member epoch past the group epoch, the target epoch not past the
// group epoch, the ownership index matching the members, and replaying every event
// so far into a fresh group giving the same state.
func (h *cgHarness) check() {
	h.t.Helper()
	if err := consumerInvariants(h.g); err != nil {
		h.t.Fatal(err)
	}
	if !h.noReplay {
		h.checkReplay()
	}
}

func (h *cgHarness) checkReplay() {
	h.t.Helper()
	r := NewConsumerGroup(h.g.id, h.g.cfg)
	for _, ev := range h.events {
		r.Replay(ev)
	}
	if err := sameConsumerGroup(h.g, r); err != nil {
		h.t.Fatalf("replayed group differs: %v", err)
	}
}

func consumerInvariants(g *ConsumerGroup) error {
	if g.targetEpoch > g.groupEpoch {
		return fmt.Errorf("target epoch %d > group epoch %d", g.targetEpoch, g.groupEpoch)
	}
	seen := map[consumerTP]string{}
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		if m.epoch > g.groupEpoch {
			return fmt.Errorf("member %s epoch %d > group epoch %d", id, m.epoch, g.groupEpoch)
		}
		for _, a := range []AssignedPartitions{m.assigned, m.pending} {
			for t, ps := range a {
				for _, p := range ps {
					tp := consumerTP{t, p}
					if other, dup := seen[tp]; dup {
						return fmt.Errorf("partition %x-%d with both %s and %s", t[15], p, other, id)
					}
					seen[tp] = id
				}
			}
		}
	}
	if len(seen) != len(g.owners) {
		return fmt.Errorf("ownership index has %d partitions, members %d", len(g.owners), len(seen))
	}
	for tp, id := range seen {
		if g.owners[tp] != id {
			return fmt.Errorf("ownership index gives %x-%d to %q, members to %q", tp.topic[15], tp.partition, g.owners[tp], id)
		}
	}
	counts := map[string]int{}
	for _, m := range g.members {
		countSubscriptions(counts, m.meta.SubscribedTopicNames, 1)
	}
	if !maps.Equal(counts, g.subscribed) {
		return fmt.Errorf("subscription counts %v, members say %v", g.subscribed, counts)
	}
	for iid, id := range g.static {
		if m, ok := g.members[id]; !ok || m.meta.InstanceID != iid {
			return fmt.Errorf("static index maps %q to %q", iid, id)
		}
	}
	return regexInvariants(g)
}

func sameConsumerGroup(a, b *ConsumerGroup) error {
	if a.groupEpoch != b.groupEpoch || a.metadataHash != b.metadataHash || a.targetEpoch != b.targetEpoch {
		return fmt.Errorf("epochs %d/%d/%x vs %d/%d/%x", a.groupEpoch, a.targetEpoch, a.metadataHash, b.groupEpoch, b.targetEpoch, b.metadataHash)
	}
	if !maps.Equal(a.subscribed, b.subscribed) {
		return fmt.Errorf("subscription counts %v vs %v", a.subscribed, b.subscribed)
	}
	if !slices.Equal(a.MemberIDs(), b.MemberIDs()) {
		return fmt.Errorf("members %v vs %v", a.MemberIDs(), b.MemberIDs())
	}
	for _, id := range a.MemberIDs() {
		x, y := a.members[id], b.members[id]
		if !metaEqual(x.meta, y.meta) || x.epoch != y.epoch || x.previousEpoch != y.previousEpoch || x.state != y.state ||
			!assignmentsEqual(x.assigned, y.assigned) || !assignmentsEqual(x.pending, y.pending) {
			return fmt.Errorf("member %s differs", id)
		}
		if !assignmentsEqual(a.target[id], b.target[id]) {
			return fmt.Errorf("target of %s differs", id)
		}
	}
	return sameRegexes(a, b)
}
