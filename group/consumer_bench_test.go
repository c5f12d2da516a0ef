package group

import (
	"fmt"
	"testing"
)

// stableBenchGroup is a stable group of n members subscribed to 10 topics of 100
// partitions each.
func stableBenchGroup(b *testing.B, n int) *cgHarness {
	b.Helper()
	counts := make([]int32, 10)
	for i := range counts {
		counts[i] = 100
	}
	h := newCG(b, testConsumerConfig(), cgTopics(counts...))
	h.noReplay = true
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	for i := range n {
		h.g.Heartbeat(cgJoinRequest(fmt.Sprintf("m%04d", i), names...), ConsumerClient{}, h.now, h.topics)
	}
	// Let every member revoke and take its target.
	for range 3 {
		for _, id := range h.g.MemberIDs() {
			m := h.g.members[id]
			h.g.Heartbeat(cgHBRequest(id, m.epoch, m.assigned), ConsumerClient{}, h.now, h.topics)
		}
	}
	if h.g.State() != ConsumerGroupStable {
		b.Fatalf("bench group is %v", h.g.State())
	}
	return h
}

// BenchmarkConsumerHeartbeatSteady is a heartbeat of a member of a stable group.
func BenchmarkConsumerHeartbeatSteady(b *testing.B) {
	h := stableBenchGroup(b, 500)
	m := h.g.members["m0250"]
	req := cgHBRequest("m0250", m.epoch, m.assigned)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		h.g.Heartbeat(req, ConsumerClient{}, h.now, h.topics)
	}
}

// BenchmarkConsumerHeartbeatRebalance is a join that recomputes the target of a
// 500-member group (the member leaves again outside the timer).
func BenchmarkConsumerHeartbeatRebalance(b *testing.B) {
	h := stableBenchGroup(b, 500)
	join := cgJoinRequest("newcomer", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	leave := cgHBRequest("newcomer", LeaveMemberEpoch, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		h.g.Heartbeat(join, ConsumerClient{}, h.now, h.topics)
		b.StopTimer()
		h.g.Heartbeat(leave, ConsumerClient{}, h.now, h.topics)
		b.StartTimer()
	}
}
