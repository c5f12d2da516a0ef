package group

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// namesOf is a TopicNamer over a metadata image.
func namesOf(topics ConsumerTopicMap) TopicNamer {
	return func(id [16]byte) (string, bool) {
		for name, t := range topics {
			if t.ID == id {
				return name, true
			}
		}
		return "", false
	}
}

// describedAssignment prints a described assignment as "a:0,1 b:2".
func describedAssignment(tps []kmsg.AssignmentTopicPartition) string {
	s := ""
	for i, tp := range tps {
		if i > 0 {
			s += " "
		}
		s += tp.Topic + ":"
		for j, p := range tp.Partitions {
			if j > 0 {
				s += ","
			}
			s += fmt.Sprint(p)
		}
	}
	return s
}

// namedAssignment prints a as describedAssignment does, names from topics.
func namedAssignment(a AssignedPartitions, topics ConsumerTopicMap) string {
	var tps []kmsg.AssignmentTopicPartition
	for id, ps := range a {
		name, _ := namesOf(topics)(id)
		tps = append(tps, kmsg.AssignmentTopicPartition{Topic: name, Partitions: ps})
	}
	slices.SortFunc(tps, func(x, y kmsg.AssignmentTopicPartition) int {
		if x.Topic < y.Topic {
			return -1
		}
		return 1
	})
	return describedAssignment(tps)
}

// ConsumerGroupDescribe shows Kafka's fields: the group's state, epochs and preferred
// assignor; per member its metadata (nullable strings null when unset), its member
// epoch, the partitions it owns — not those it still has to revoke — and its target,
// with topic names from the image, and v1's MemberType 1 (consumer protocol).
func TestConsumerGroupDescribe(t *testing.T) {
	topics := cgTopics(4)
	h := newCG(t, testConsumerConfig(), topics)
	join := cgJoinRequest("m1", "a")
	join.InstanceID, join.RackID, join.ServerAssignor = kmsg.StringPtr("i1"), kmsg.StringPtr("r1"), kmsg.StringPtr("range")
	h.ok(join)
	d := h.g.Describe(namesOf(topics))
	if d.ErrorCode != 0 || d.Group != "g" || d.State != "Stable" || d.Epoch != 1 || d.AssignmentEpoch != 1 || d.AssignorName != "range" ||
		d.AuthorizedOperations != -2147483648 || len(d.Members) != 1 {
		t.Fatalf("one member: %+v", d)
	}
	m := d.Members[0]
	if m.MemberID != "m1" || deref(m.InstanceID) != "i1" || deref(m.RackID) != "r1" || m.MemberEpoch != 1 || m.ClientID != "client" ||
		m.ClientHost != "/127.0.0.1" || fmt.Sprint(m.SubscribedTopics) != "[a]" || m.SubscribedTopicRegex != nil || m.MemberType != 1 {
		t.Fatalf("member: %+v", m)
	}
	if got := describedAssignment(m.Assignment.TopicPartitions); got != "a:0,1,2,3" || describedAssignment(m.TargetAssignment.TopicPartitions) != got {
		t.Fatalf("assignment %q target %q", got, describedAssignment(m.TargetAssignment.TopicPartitions))
	}
	if m.Assignment.TopicPartitions[0].TopicID != topics["a"].ID {
		t.Fatal("the topic id is not the image's")
	}

	// m2 joins: the group moves to epoch 2 and m1 must give partitions up first.
	h.ok(cgJoinRequest("m2", "a"))
	v1, _ := h.g.Member("m1")
	h.ok(cgHBRequest("m1", 1, v1.Assigned))
	d = h.g.Describe(namesOf(topics))
	if d.State != "Reconciling" || d.Epoch != 2 || d.AssignmentEpoch != 2 || len(d.Members) != 2 || d.Members[1].MemberID != "m2" {
		t.Fatalf("two members: %+v", d)
	}
	for _, dm := range d.Members {
		v, _ := h.g.Member(dm.MemberID)
		if dm.MemberEpoch != v.MemberEpoch || describedAssignment(dm.Assignment.TopicPartitions) != namedAssignment(v.Assigned, topics) ||
			describedAssignment(dm.TargetAssignment.TopicPartitions) != namedAssignment(v.Target, topics) {
			t.Fatalf("member %s: %+v, group has %+v", dm.MemberID, dm, v)
		}
	}
	if v, _ := h.g.Member("m1"); countPartitions(v.PendingRevocation) == 0 || countPartitions(v.Assigned)+countPartitions(v.PendingRevocation) != 4 {
		t.Fatalf("m1 is not revoking: %+v", v)
	} else if n := len(d.Members[0].Assignment.TopicPartitions[0].Partitions); n != countPartitions(v.Assigned) {
		t.Fatalf("m1's described assignment has %d partitions, it owns %d outside those it revokes", n, countPartitions(v.Assigned))
	}
	if len(d.Members[1].Assignment.TopicPartitions) != 0 || describedAssignment(d.Members[1].TargetAssignment.TopicPartitions) == "" {
		t.Fatalf("m2 owns partitions still revoked from m1, or has no target: %+v", d.Members[1])
	}
	if d.Members[1].InstanceID != nil || d.Members[1].RackID != nil {
		t.Fatal("unset instance and rack ids are not null")
	}
	// One member asked for range, none for uniform: range is preferred.
	if d.AssignorName != "range" {
		t.Fatalf("assignor %q", d.AssignorName)
	}

	// A topic the image no longer knows is left out of both assignments.
	d = h.g.Describe(namesOf(ConsumerTopicMap{}))
	for _, dm := range d.Members {
		if len(dm.Assignment.TopicPartitions) != 0 || len(dm.TargetAssignment.TopicPartitions) != 0 || dm.Assignment.TopicPartitions == nil {
			t.Fatalf("deleted topic shown: %+v", dm)
		}
	}
}

// Without a member asking for an assignor the group's default, the first configured
// one, is named.
func TestConsumerGroupDescribeDefaultAssignor(t *testing.T) {
	topics := cgTopics(2)
	h := newCG(t, testConsumerConfig(), topics)
	h.ok(cgJoinRequest("m1", "a"))
	if d := h.g.Describe(namesOf(topics)); d.AssignorName != UniformAssignorName {
		t.Fatalf("assignor %q", d.AssignorName)
	}
	cfg := testConsumerConfig()
	cfg.Assignors, _ = Assignors([]string{RangeAssignorName, UniformAssignorName})
	h = newCG(t, cfg, topics)
	h.ok(cgJoinRequest("m1", "a"))
	if d := h.g.Describe(namesOf(topics)); d.AssignorName != RangeAssignorName {
		t.Fatalf("assignor %q with range first", d.AssignorName)
	}
}

// A group id without a consumer group is GROUP_ID_NOT_FOUND with Kafka's messages: not
// found, or not a consumer group (a classic group, even one holding only offsets); an
// empty consumer group is described Empty.
func TestShardConsumerGroupDescribe(t *testing.T) {
	topics := cgTopics(2)
	h := newHarness(t, testConfig())
	names := namesOf(topics)
	if d := h.s.ConsumerGroupDescribe("nope", names); d.ErrorCode != kerr.GroupIDNotFound.Code || deref(d.ErrorMessage) != "Group nope not found." ||
		d.Group != "nope" || d.Members != nil {
		t.Fatalf("unknown group: %+v", d)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "classic", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 6000, 6000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{protocol("range", consumerMeta("a"))}
	h.run(h.s.JoinGroup(h.now, Client{ID: "c"}, join, func(kmsg.Response) {}))
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, "simple", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	h.run(h.s.OffsetCommit(h.now, commit, kmsg.NewPtrOffsetCommitResponse(), func(kmsg.Response) {}))
	for _, id := range []string{"classic", "simple"} {
		if d := h.s.ConsumerGroupDescribe(id, names); d.ErrorCode != kerr.GroupIDNotFound.Code || deref(d.ErrorMessage) != "Group "+id+" is not a consumer group." {
			t.Fatalf("%s: %+v", id, d)
		}
	}

	cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
	if d := h.s.ConsumerGroupDescribe("g", names); d.ErrorCode != 0 || d.ErrorMessage != nil || d.State != "Stable" || len(d.Members) != 1 {
		t.Fatalf("consumer group: %+v", d)
	}
	leave := cgHBRequest("m1", LeaveMemberEpoch, nil)
	cgShardHeartbeat(h, topics, leave)
	if d := h.s.ConsumerGroupDescribe("g", names); d.ErrorCode != 0 || d.State != "Empty" || len(d.Members) != 0 || d.Epoch != 2 {
		t.Fatalf("empty consumer group: %+v", d)
	}
}

// BenchmarkConsumerGroupDescribe describes a stable 500-member group owning 1000
// partitions (the shard's goroutine is busy for this long per described group).
func BenchmarkConsumerGroupDescribe(b *testing.B) {
	h := stableBenchGroup(b, 500)
	names := namesOf(h.topics)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if d := h.g.Describe(names); len(d.Members) != 500 {
			b.Fatal(len(d.Members))
		}
	}
}
