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

// ConsumerGroupDescribe answers each group in the request's order: an empty id
// INVALID_GROUP_ID, a group of a partition not served here NOT_COORDINATOR, an
// unknown group GROUP_ID_NOT_FOUND, and a consumer group created through its shard's
// heartbeat with its members, topic names from the image and finish applied.
func TestConsumerGroupDescribeAcrossShards(t *testing.T) {
	gc, away := servingGroupCoordinator(t, "g")
	unknown := "u0"
	for i := 0; group.PartitionFor(unknown, 2) != group.PartitionFor("g", 2); i++ {
		unknown = fmt.Sprint("u", i)
	}

	topicID := [16]byte{15: 7}
	topics := group.ConsumerTopicMap{"t": {ID: topicID, Name: "t", Partitions: 3}}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, "g", "m1", 0
	hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 30000, []string{"t"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	joined := recvResponse(t, gc.Respond("g", func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.ConsumerGroupHeartbeat(now, group.Client{ID: "cli", Host: "/10.0.0.1"}, hb, topics, send)
	}, func(code int16) kmsg.Response {
		r := hb.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		r.ErrorCode = code
		return r
	})).(*kmsg.ConsumerGroupHeartbeatResponse)
	if joined.ErrorCode != 0 || joined.MemberEpoch != 1 {
		t.Fatalf("join: %+v", joined)
	}

	r := kmsg.NewPtrConsumerGroupDescribeRequest()
	r.Version, r.IncludeAuthorizedOperations = 1, true
	r.Groups = []string{"g", "", away, unknown}
	names := func(id [16]byte) (string, bool) { return "t", id == topicID }
	resp := recvResponse(t, gc.ConsumerGroupDescribe(r, names, func(g *kmsg.ConsumerGroupDescribeResponseGroup) {
		g.AuthorizedOperations = 42
	})).(*kmsg.ConsumerGroupDescribeResponse)
	if len(resp.Groups) != 4 {
		t.Fatalf("groups %+v", resp.Groups)
	}
	g := resp.Groups[0]
	if g.Group != "g" || g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != 1 || g.AuthorizedOperations != 42 || len(g.Members) != 1 {
		t.Fatalf("described %+v", g)
	}
	m := g.Members[0]
	if m.MemberID != "m1" || m.ClientID != "cli" || m.ClientHost != "/10.0.0.1" || len(m.Assignment.TopicPartitions) != 1 ||
		m.Assignment.TopicPartitions[0].Topic != "t" || fmt.Sprint(m.Assignment.TopicPartitions[0].Partitions) != "[0 1 2]" {
		t.Fatalf("member %+v", m)
	}
	for i, want := range []int16{kerr.InvalidGroupID.Code, kerr.NotCoordinator.Code, kerr.GroupIDNotFound.Code} {
		if got := resp.Groups[i+1]; got.ErrorCode != want || got.Group != r.Groups[i+1] || got.AuthorizedOperations != -2147483648 {
			t.Fatalf("group %q: %+v, want error %d and no authorized operations", r.Groups[i+1], got, want)
		}
	}
}

// servingGroupCoordinator is a group coordinator of two __consumer_offsets partitions
// serving the one of group id (its writes committed at once), and a group id of the
// other partition.
func servingGroupCoordinator(t *testing.T, id string) (gc *GroupCoordinator, away string) {
	t.Helper()
	gc = NewGroupCoordinator(GroupConfig{Group: group.DefaultConfig(), Partitions: func() int32 { return 2 }})
	t.Cleanup(gc.Close)
	log := newFakeLog(1)
	log.autoCommit = true
	gc.Reconcile(map[int32]int32{group.PartitionFor(id, 2): 1}, func(int32) (LoadSpec, bool) { return LoadSpec{Log: log}, true })
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(gc.Serving()) == 1 })
	for i := 0; away == "" || group.PartitionFor(away, 2) == group.PartitionFor(id, 2); i++ {
		away = fmt.Sprint(id, i)
	}
	return gc, away
}
