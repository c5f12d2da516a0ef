package coordinator

import (
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerTestTopic is the one topic of the consumer heartbeat tests.
var consumerTestTopic = group.AssignorTopic{ID: [16]byte{1}, Name: "t", Partitions: 4}

// newConsumerCoordinator is a group coordinator of one __consumer_offsets partition
// with the consumer session timeout session, loaded on log (committing every append).
func newConsumerCoordinator(t *testing.T, log *fakeLog, session time.Duration) *GroupCoordinator {
	t.Helper()
	cfg := group.DefaultConfig()
	cfg.Consumer.SessionTimeout = session
	cfg.ConsumerTopics = func() group.ConsumerTopics {
		return group.ConsumerTopicMap{consumerTestTopic.Name: consumerTestTopic}
	}
	gc := NewGroupCoordinator(GroupConfig{Group: cfg, Partitions: func() int32 { return 1 }})
	t.Cleanup(gc.Close)
	log.set(func(f *fakeLog) { f.autoCommit = true; f.hw = f.leo })
	gc.Reconcile(map[int32]int32{0: log.epoch}, func(int32) (LoadSpec, bool) { return LoadSpec{Log: log}, true })
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(gc.Serving()) == 1 })
	return gc
}

// consumerHeartbeat sends one ConsumerGroupHeartbeat v1 of member in group "g".
func consumerHeartbeat(t *testing.T, gc *GroupCoordinator, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	return consumerHeartbeatIn(t, gc, "g", member, epoch)
}

// consumerHeartbeatIn sends one ConsumerGroupHeartbeat v1 of member in groupID.
func consumerHeartbeatIn(t *testing.T, gc *GroupCoordinator, groupID, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	r := consumerHeartbeatRequest(groupID, member, epoch)
	return recvResponse(t, gc.ConsumerGroupHeartbeat(r, group.Client{ID: "client", Host: "/127.0.0.1"}, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
}

// consumerHeartbeatRequest is a v1 heartbeat of member in groupID at epoch; a join
// (epoch 0) subscribes to consumerTestTopic.
func consumerHeartbeatRequest(groupID, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.MemberEpoch = 1, groupID, member, epoch
	if epoch == 0 {
		r.RebalanceTimeoutMillis = 60000
		r.SubscribedTopicNames = []string{consumerTestTopic.Name}
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return r
}

// consumerMembers returns the members of consumer group "g" as the shard has them.
func consumerMembers(t *testing.T, gc *GroupCoordinator) []string {
	t.Helper()
	return consumerMembersOf(t, gc, "g")
}

// consumerMembersOf returns the members of consumer group groupID.
func consumerMembersOf(t *testing.T, gc *GroupCoordinator, groupID string) []string {
	t.Helper()
	ch := make(chan []string, 1)
	gc.Submit(groupID, func(_ time.Time, s *group.Shard) group.Effects {
		var ids []string
		if g := s.ConsumerGroup(groupID); g != nil {
			ids = g.MemberIDs()
		}
		ch <- ids
		return group.Effects{}
	}, func(code int16) { t.Errorf("submit: code %d", code); ch <- nil })
	return <-ch
}

// A member joins through the coordinator and is answered with its epoch and its
// assignment once the records are written; a member that stops heartbeating is removed
// by the expiry timer after its session timeout, with its removal written.
func TestConsumerHeartbeatJoinsAndSessionExpires(t *testing.T) {
	log := newFakeLog(1)
	gc := newConsumerCoordinator(t, log, 300*time.Millisecond)

	resp := consumerHeartbeat(t, gc, "m1", 0)
	if resp.ErrorCode != 0 || resp.MemberEpoch != 1 || resp.Assignment == nil || len(resp.Assignment.Topics) != 1 ||
		len(resp.Assignment.Topics[0].Partitions) != 4 {
		t.Fatalf("join: %+v", resp)
	}
	written := log.State().LogEndOffset
	if written == 0 {
		t.Fatal("the join wrote no record")
	}
	start := time.Now()
	testwait.Until(t, 10*time.Second, "the silent member expires", func() bool { return len(consumerMembers(t, gc)) == 0 })
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("the member expired after %v, before its session timeout", waited)
	}
	if log.State().LogEndOffset == written {
		t.Fatal("the expiry wrote no record")
	}
	if resp := consumerHeartbeat(t, gc, "m1", 1); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of the expired member: code %d", resp.ErrorCode)
	}
}

// Heartbeats keep a member: each one moves its deadline, and the one timer follows.
func TestConsumerHeartbeatsKeepTheMember(t *testing.T) {
	log := newFakeLog(1)
	// A 2 s session against 100 ms heartbeats: only a stall of the test of nearly 2 s
	// (never seen on a loaded 2-core machine under -race) could expire the member.
	gc := newConsumerCoordinator(t, log, 2*time.Second)
	resp := consumerHeartbeat(t, gc, "m1", 0)
	epoch := resp.MemberEpoch
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // the client's heartbeat interval
		if resp := consumerHeartbeat(t, gc, "m1", epoch); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: code %d %v", resp.ErrorCode, resp.ErrorMessage)
		}
	}
	if ids := consumerMembers(t, gc); len(ids) != 1 {
		t.Fatalf("members %v, want m1 kept", ids)
	}
}

// A new coordinator of the partition replays the group: the member continues with its
// epoch, and the timers started at the load expire it if it stays silent.
func TestConsumerGroupSurvivesCoordinatorFailover(t *testing.T) {
	log := newFakeLog(1)
	first := newConsumerCoordinator(t, log, time.Hour)
	resp := consumerHeartbeat(t, first, "m1", 0)
	if resp.ErrorCode != 0 {
		t.Fatalf("join: code %d", resp.ErrorCode)
	}
	first.Close()
	log.set(func(f *fakeLog) { f.epoch = 2 })
	second := newConsumerCoordinator(t, log, 2*time.Second) // the heartbeat below lands well within it
	again := consumerHeartbeat(t, second, "m1", resp.MemberEpoch)
	if again.ErrorCode != 0 || again.MemberEpoch != resp.MemberEpoch {
		t.Fatalf("heartbeat on the new coordinator: %+v", again)
	}
	testwait.Until(t, 10*time.Second, "the member expires on the new coordinator", func() bool {
		return len(consumerMembers(t, second)) == 0
	})
}

// A group whose partition is not served here is NOT_COORDINATOR.
func TestConsumerHeartbeatNotCoordinator(t *testing.T) {
	gc := NewGroupCoordinator(GroupConfig{Group: group.DefaultConfig(), Partitions: func() int32 { return 1 }})
	t.Cleanup(gc.Close)
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version, r.Group, r.MemberID = 1, "g", "m"
	resp := recvResponse(t, gc.ConsumerGroupHeartbeat(r, group.Client{}, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	if resp.ErrorCode != kerr.NotCoordinator.Code || resp.Version != 1 {
		t.Fatalf("response %+v", resp)
	}
}

// A v0 member joining without an id gets one from the coordinator, as Kafka's
// Uuid.toString prints it; v1 members bring their own (KIP-1082).
func TestConsumerHeartbeatV0GetsAMemberID(t *testing.T) {
	gc := newConsumerCoordinator(t, newFakeLog(1), time.Minute)
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version, r.Group, r.RebalanceTimeoutMillis = 0, "g", 60000
	r.SubscribedTopicNames, r.Topics = []string{consumerTestTopic.Name}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp := recvResponse(t, gc.ConsumerGroupHeartbeat(r, group.Client{}, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	if resp.ErrorCode != 0 || resp.MemberID == nil || len(*resp.MemberID) != 22 || resp.MemberEpoch != 1 {
		t.Fatalf("v0 join: %+v", resp)
	}
}

// The one expiry timer serves every group of the partition: a member of a second group
// joining later does not postpone the first group's expiry, and a member that keeps
// heartbeating is kept while the silent one of another group expires.
func TestConsumerExpiryTimerFollowsEveryGroup(t *testing.T) {
	gc := newConsumerCoordinator(t, newFakeLog(1), 2*time.Second) // h's 100 ms heartbeats keep it with room
	if resp := consumerHeartbeatIn(t, gc, "g", "silent", 0); resp.ErrorCode != 0 {
		t.Fatalf("join g: code %d", resp.ErrorCode)
	}
	busy := consumerHeartbeatIn(t, gc, "h", "busy", 0)
	if busy.ErrorCode != 0 {
		t.Fatalf("join h: code %d", busy.ErrorCode)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(consumerMembersOf(t, gc, "g")) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the silent member of g never expired")
		}
		time.Sleep(100 * time.Millisecond) // h's member heartbeats meanwhile
		if resp := consumerHeartbeatIn(t, gc, "h", "busy", busy.MemberEpoch); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of h's member: code %d", resp.ErrorCode)
		}
	}
	if ids := consumerMembersOf(t, gc, "h"); len(ids) != 1 {
		t.Fatalf("h's members %v, want busy kept", ids)
	}
	testwait.Until(t, 10*time.Second, "h's member expires once silent", func() bool {
		return len(consumerMembersOf(t, gc, "h")) == 0
	})
}
