package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareCoordinator is a group coordinator of one __consumer_offsets partition with
// the share session timeout session, whose share state initializations and deleted
// share groups go to the returned channels.
func shareCoordinator(t *testing.T, session time.Duration) (*GroupCoordinator, chan group.ShareInitialize, chan []group.ShareTopicPartitions) {
	t.Helper()
	inits := make(chan group.ShareInitialize, 16)
	deleted := make(chan []group.ShareTopicPartitions, 16)
	cfg := group.DefaultConfig()
	cfg.Share.SessionTimeout = session
	cfg.ConsumerTopics = func() group.ConsumerTopics {
		return group.ConsumerTopicMap{consumerTestTopic.Name: consumerTestTopic}
	}
	cfg.OnShareInitialize = func(i group.ShareInitialize) { inits <- i }
	gc := NewGroupCoordinator(GroupConfig{Group: cfg, Partitions: func() int32 { return 1 },
		DeleteShareGroupState: func(_ string, state []group.ShareTopicPartitions, done func(int16)) {
			deleted <- state
			done(0)
		}})
	t.Cleanup(gc.Close)
	log := newFakeLog(1)
	log.set(func(f *fakeLog) { f.autoCommit = true; f.hw = f.leo })
	gc.Reconcile(map[int32]int32{0: log.epoch}, func(int32) (LoadSpec, bool) { return LoadSpec{Log: log}, true })
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(gc.Serving()) == 1 })
	return gc, inits, deleted
}

// shareHeartbeat sends one ShareGroupHeartbeat v1 of member in group "sg"; a join
// (epoch 0) subscribes to consumerTestTopic.
func shareHeartbeat(t *testing.T, gc *GroupCoordinator, member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version, r.GroupID, r.MemberID, r.MemberEpoch = 1, "sg", member, epoch
	if epoch == 0 {
		r.SubscribedTopicNames = []string{consumerTestTopic.Name}
	}
	return recvResponse(t, gc.ShareGroupHeartbeat(r, group.Client{ID: "client", Host: "/127.0.0.1"})).(*kmsg.ShareGroupHeartbeatResponse)
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// A share member's partitions are assigned once the share coordinator's answer is
// delivered; a silent member expires on the consumer groups' timer; DeleteGroups of
// the empty group hands its share state on once its tombstones are written, and
// DeleteGroups of a classic group hands nothing.
func TestShareGroupThroughTheCoordinator(t *testing.T) {
	gc, inits, deleted := shareCoordinator(t, 300*time.Millisecond)

	resp := shareHeartbeat(t, gc, "m1", 0)
	if resp.ErrorCode != 0 || resp.MemberEpoch != 1 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 0 {
		t.Fatalf("join: %+v", resp)
	}
	init := receive(t, inits, "share state initialization")
	if init.GroupID != "sg" || len(init.Topics) != 1 || fmt.Sprint(init.Topics[0].Partitions) != "[0 1 2 3]" {
		t.Fatalf("initialize %+v", init)
	}
	gc.ShareGroupStateInitialized("sg", init.Topics, 0)
	testwait.ForWhat(t, 10*time.Second, "the partitions assigned", func() error {
		resp = shareHeartbeat(t, gc, "m1", resp.MemberEpoch)
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		if resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 || len(resp.Assignment.TopicPartitions[0].Partitions) != 4 {
			return fmt.Errorf("heartbeat %+v", resp)
		}
		return nil
	})

	testwait.Until(t, 10*time.Second, "the silent member expires", func() bool {
		d := recvResponse(t, gc.ShareGroupDescribe(&kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: []string{"sg"}}, func([16]byte) (string, bool) { return "t", true }, nil))
		return d.(*kmsg.ShareGroupDescribeResponse).Groups[0].GroupState == "Empty"
	})

	del := recvResponse(t, gc.DeleteGroups(&kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"sg"}})).(*kmsg.DeleteGroupsResponse)
	if del.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(del.Groups[0].ErrorCode))
	}
	if state := receive(t, deleted, "deleted share state"); len(state) != 1 || fmt.Sprint(state[0].Partitions) != "[0 1 2 3]" {
		t.Fatalf("deleted share state %+v", state)
	}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, "classic", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = consumerTestTopic.Name
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	commit.Topics = append(commit.Topics, ct)
	recvResponse(t, gc.OffsetCommit(commit, func(string, int32) bool { return true }, func(code int16) kmsg.Response {
		t.Fatalf("commit refused: %v", kerr.ErrorForCode(code))
		return nil
	}))
	del = recvResponse(t, gc.DeleteGroups(&kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"classic"}})).(*kmsg.DeleteGroupsResponse)
	if del.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete of the classic group: %v", kerr.ErrorForCode(del.Groups[0].ErrorCode))
	}
	select {
	case state := <-deleted:
		t.Fatalf("a classic group's deletion handed share state %+v", state)
	default:
	}
}
