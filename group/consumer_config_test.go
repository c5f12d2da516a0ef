package group

import (
	"testing"
	"time"
)

// A consumer group's own configs (Config.ConsumerGroupConfig) are what the group uses:
// the heartbeat interval in its responses and its members' session deadlines, from
// the first heartbeat; a change applies at each member's next heartbeat; another group
// keeps the shard's; a load (replay, then Loaded) starts the timers with the group's
// session timeout.
func TestConsumerGroupOwnConfigs(t *testing.T) {
	own := map[string]ConsumerGroupConfig{"g": {SessionTimeout: 50 * time.Second, HeartbeatInterval: 7 * time.Second}}
	cfg := testConfig()
	cfg.ConsumerGroupConfig = func(id string) ConsumerGroupConfig { return own[id] }
	h := newHarness(t, cfg)
	topics := cgTopics(2)

	resp := cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
	if resp.ErrorCode != 0 || resp.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("join: error %d, heartbeat interval %d ms, want 7000", resp.ErrorCode, resp.HeartbeatIntervalMillis)
	}
	if at, ok := h.s.NextConsumerDeadline(); !ok || !at.Equal(h.now.Add(50*time.Second)) {
		t.Fatalf("session deadline %v %v, want the group's 50 s away", at, ok)
	}

	// The group's configs change: the member's next heartbeat uses them.
	own["g"] = ConsumerGroupConfig{SessionTimeout: 55 * time.Second}
	h.advance(time.Second)
	resp = cgShardHeartbeat(h, topics, cgHBRequest("m1", resp.MemberEpoch, respAssignment(resp)))
	if resp.ErrorCode != 0 || resp.HeartbeatIntervalMillis != int32(DefaultConsumerConfig().HeartbeatInterval/time.Millisecond) {
		t.Fatalf("heartbeat: error %d, interval %d ms, want the shard's once the group's is unset", resp.ErrorCode, resp.HeartbeatIntervalMillis)
	}
	if at, ok := h.s.NextConsumerDeadline(); !ok || !at.Equal(h.now.Add(55*time.Second)) {
		t.Fatalf("session deadline %v %v, want the group's new 55 s away", at, ok)
	}

	// A load replays the group with its configs and starts its timers with them.
	s := NewShard(cfg)
	for _, b := range h.batches {
		for _, r := range b.records {
			if err := s.Replay(r.Key, r.Value); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Loaded(h.now)
	if at, ok := s.NextConsumerDeadline(); !ok || !at.Equal(h.now.Add(55*time.Second)) {
		t.Fatalf("deadline after a load %v %v, want the group's 55 s away", at, ok)
	}

	// Another group has no configs of its own: the shard's.
	other := cgJoinRequest("m2", "a")
	other.Group = "other"
	resp = cgShardHeartbeat(h, topics, other)
	if resp.ErrorCode != 0 || resp.HeartbeatIntervalMillis != int32(DefaultConsumerConfig().HeartbeatInterval/time.Millisecond) {
		t.Fatalf("other group: error %d, interval %d ms", resp.ErrorCode, resp.HeartbeatIntervalMillis)
	}
	if got := h.s.ConsumerGroup("other").cfg.SessionTimeout; got != DefaultConsumerConfig().SessionTimeout {
		t.Fatalf("other group's session timeout %v", got)
	}
}
