package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgCommit commits offset to partition 0 of topic for member at epoch in group "g"
// with an OffsetCommit of version, and returns the partition's code.
func cgCommit(h *harness, version int16, member string, epoch int32, topic string, offset int64) int16 {
	h.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, "g", member, epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	b := &box[kmsg.OffsetCommitResponse]{}
	h.run(h.s.OffsetCommit(h.now, req, kmsg.NewPtrOffsetCommitResponse(), b.send))
	if !b.done() {
		h.t.Fatal("OffsetCommit not answered")
	}
	return b.resp.Topics[0].Partitions[0].ErrorCode
}

// cgCommitted is the committed offset of partition 0 of topic in group "g" (-1: none).
func cgCommitted(s *Shard, topic string) int64 {
	got := s.OffsetFetch("g", []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}, false)
	return got.Topics[0].Partitions[0].Offset
}

// memberEpoch is member's epoch in consumer group "g".
func memberEpoch(t *testing.T, s *Shard, member string) int32 {
	t.Helper()
	m, ok := s.ConsumerGroup("g").Member(member)
	if !ok {
		t.Fatalf("no member %s", member)
	}
	return m.MemberEpoch
}

// leaveAll makes every member of consumer group "g" leave.
func leaveAll(h *harness, topics ConsumerTopicMap) {
	h.t.Helper()
	for _, id := range h.s.ConsumerGroup("g").MemberIDs() {
		if resp := cgShardHeartbeat(h, topics, cgHBRequest(id, LeaveMemberEpoch, nil)); resp.ErrorCode != 0 {
			h.t.Fatalf("leave %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
}

// memberCommitCase is a commit by member at epoch in a request of version, and the
// code it wants.
type memberCommitCase struct {
	name    string
	version int16
	member  string
	epoch   int32
	want    int16
}

// OffsetCommit against a consumer group is checked as Kafka 4.2's
// ConsumerGroup.validateOffsetCommit: the member must exist and commit at its member
// epoch, with OffsetCommit v9+; member epoch -1 commits only while the group is empty.
func TestConsumerOffsetCommitChecksMemberEpoch(t *testing.T) {
	h, topics := twoMemberShard(t, 2)
	epoch := memberEpoch(t, h.s, "m1")
	for _, tc := range []memberCommitCase{
		{"member at its epoch", 9, "m1", epoch, 0},
		{"member at its epoch, v10", 10, "m1", epoch, 0},
		{"stale epoch", 9, "m1", epoch - 1, errStaleMemberEpoch},
		{"epoch from the future", 9, "m1", epoch + 1, errStaleMemberEpoch},
		{"unknown member", 9, "stranger", epoch, errUnknownMemberID},
		{"admin commit of a group with members", 9, "", -1, errUnknownMemberID},
		{"admin commit naming a member", 9, "m1", -1, errStaleMemberEpoch},
		{"member before v9", 8, "m1", epoch, errUnsupportedVersion},
		{"unknown member before v9", 8, "stranger", epoch, errUnknownMemberID},
		{"v0 of a group with members", 0, "", 0, errUnknownMemberID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := cgCommitted(h.s, "t")
			if got := cgCommit(h, tc.version, tc.member, tc.epoch, "t", int64(100+len(h.log))); got != tc.want {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
			}
			if after := cgCommitted(h.s, "t"); tc.want != 0 && after != before {
				t.Fatalf("a refused commit changed the offset %d -> %d", before, after)
			}
		})
	}
	leaveAll(h, topics)
	if got := cgCommit(h, 9, "", -1, "t", 7); got != 0 {
		t.Fatalf("admin commit of an empty group: %v", kerr.ErrorForCode(got))
	}
	if got := cgCommitted(h.s, "t"); got != 7 {
		t.Fatalf("committed %d, want 7", got)
	}
	if got := cgCommit(h, 9, "m1", epoch, "t", 8); got != errUnknownMemberID {
		t.Fatalf("commit of a member that left: %v", kerr.ErrorForCode(got))
	}
	loaded := replayLog(t, h.batches)
	if loaded.ConsumerGroup("g") == nil || cgCommitted(loaded, "t") != 7 {
		t.Fatal("a load lost the consumer group or its offsets")
	}
}

// A consumer group with no offsets yet gets its first commit (the shard keeps the
// offsets beside the group), and a refused one leaves nothing behind.
func TestConsumerOffsetCommitFirstOffsets(t *testing.T) {
	h, _ := twoMemberShard(t, 2)
	if got := cgCommit(h, 9, "m1", 99, "t", 1); got != errStaleMemberEpoch {
		t.Fatalf("got %v", kerr.ErrorForCode(got))
	}
	if h.s.groups["g"] != nil {
		t.Fatal("a refused commit left a holder group")
	}
	if got := cgCommit(h, 9, "m2", memberEpoch(t, h.s, "m2"), "t", 5); got != 0 {
		t.Fatalf("got %v", kerr.ErrorForCode(got))
	}
	if got := cgCommitted(h.s, "t"); got != 5 {
		t.Fatalf("committed %d", got)
	}
	if lg := h.s.ListGroups(nil, nil); len(lg) != 1 || lg[0].GroupType != "consumer" {
		t.Fatalf("listed %+v", lg)
	}
}

// OffsetFetch v9+ naming a member of a consumer group checks it (Kafka's
// ConsumerGroup.validateOffsetFetch); without one it is answered as before, and a
// classic group ignores the fields.
func TestConsumerOffsetFetchChecksMemberEpoch(t *testing.T) {
	h, _ := twoMemberShard(t, 2)
	epoch := memberEpoch(t, h.s, "m1")
	if got := cgCommit(h, 9, "m1", epoch, "t", 42); got != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(got))
	}
	h.commit(8, "simple", "", -1, map[int32]int64{0: 3})
	m1, stranger, empty := "m1", "stranger", ""
	topicT := []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	for _, tc := range []struct {
		name   string
		group  string
		member *string
		epoch  int32
		want   int16
	}{
		{"no member", "g", nil, -1, 0},
		{"member at its epoch", "g", &m1, epoch, 0},
		{"stale epoch", "g", &m1, epoch - 1, errStaleMemberEpoch},
		{"member id with epoch -1", "g", &m1, -1, errStaleMemberEpoch},
		{"unknown member", "g", &stranger, epoch, errUnknownMemberID},
		{"empty member id", "g", &empty, -1, errUnknownMemberID},
		{"classic group ignores the member", "simple", &stranger, 12, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.s.OffsetFetchMember(tc.group, tc.member, tc.epoch, topicT, false)
			if got.ErrorCode != tc.want {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(got.ErrorCode), kerr.ErrorForCode(tc.want))
			}
			if tc.want != 0 && len(got.Topics) != 0 {
				t.Fatalf("a refused fetch answered offsets %+v", got.Topics)
			}
			if tc.want == 0 && got.Topics[0].Partitions[0].Offset < 0 {
				t.Fatalf("no offset: %+v", got.Topics)
			}
		})
	}
}

// TxnOffsetCommit against a consumer group: no member fields is accepted (the
// transactional producer of an older client); a named member must exist, and a stale
// epoch is ILLEGAL_GENERATION (OffsetMetadataManager.validateTransactionalOffsetCommit).
func TestConsumerTxnOffsetCommitChecksMemberEpoch(t *testing.T) {
	h, topics := twoMemberShard(t, 2)
	epoch := memberEpoch(t, h.s, "m1")
	for _, tc := range []memberCommitCase{
		{"v2 without member fields", 2, "", -1, 0},
		{"v3 without member fields", 3, "", -1, 0},
		{"member at its epoch", 3, "m1", epoch, 0},
		{"stale epoch", 3, "m1", epoch - 1, errIllegalGeneration},
		{"unknown member", 3, "stranger", epoch, errUnknownMemberID},
		{"epoch without member", 3, "", epoch, errUnknownMemberID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.txnCommitAs(tc.version, "g", tc.member, tc.epoch, 7); got != tc.want {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
			}
		})
	}
	leaveAll(h, topics)
	if got := h.txnCommitAs(3, "g", "m1", epoch, 7); got != errUnknownMemberID {
		t.Fatalf("member that left: %v", kerr.ErrorForCode(got))
	}
	if got := h.txnCommitAs(3, "g", "", -1, 7); got != 0 {
		t.Fatalf("empty group: %v", kerr.ErrorForCode(got))
	}
}

// OffsetDelete of a consumer group: topics a member subscribes to are
// GROUP_SUBSCRIBED_TO_TOPIC; other topics' offsets are deleted whatever the group's
// state; a group without offsets answers without error.
func TestConsumerOffsetDelete(t *testing.T) {
	h, _ := twoMemberShard(t, 2)
	del := func(topic string) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = "g"
		req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
		b := &box[kmsg.OffsetDeleteResponse]{}
		h.run(h.s.OffsetDelete(h.now, req, b.send))
		return b.resp
	}
	if r := del("t"); r.ErrorCode != 0 || len(r.Topics[0].Partitions) != 0 {
		t.Fatalf("no offsets yet: %+v", r)
	}
	epoch := memberEpoch(t, h.s, "m1")
	cgCommit(h, 9, "m1", epoch, "a", 10)
	cgCommit(h, 9, "m1", epoch, "t", 20)
	if r := del("a"); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != errGroupSubscribedToTopic {
		t.Fatalf("subscribed topic: %+v", r)
	}
	if r := del("t"); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("unsubscribed topic: %+v", r)
	}
	if cgCommitted(h.s, "a") != 10 || cgCommitted(h.s, "t") != -1 {
		t.Fatalf("offsets a=%d t=%d", cgCommitted(h.s, "a"), cgCommitted(h.s, "t"))
	}
}

// oneMemberShard is a shard with offsets.retention.minutes of an hour whose consumer
// group "g" has member m1 subscribed to topic "a"; epoch is m1's.
func oneMemberShard(t *testing.T) (h *harness, topics ConsumerTopicMap, epoch int32) {
	cfg := testConfig()
	cfg.OffsetsRetention = time.Hour
	h = newHarness(t, cfg)
	topics = cgTopics(2)
	cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
	return h, topics, memberEpoch(t, h.s, "m1")
}

// Offsets of a consumer group expire as Kafka's ConsumerGroup.offsetExpirationCondition:
// never those of a topic a member subscribes to, the others offsets.retention.minutes
// after their commit; an empty group whose offsets all expired is deleted with its
// records, and a load of the log agrees.
func TestConsumerOffsetsExpiry(t *testing.T) {
	h, topics, epoch := oneMemberShard(t)
	cgCommit(h, 9, "m1", epoch, "a", 10)
	cgCommit(h, 9, "m1", epoch, "t", 20)
	h.now = h.now.Add(2 * time.Hour)
	cgShardHeartbeat(h, topics, cgHBRequest("m1", epoch, nil)) // keep the session
	h.run(h.s.ExpireOffsets(h.now))
	if cgCommitted(h.s, "a") != 10 {
		t.Fatal("the offset of a subscribed topic expired")
	}
	if cgCommitted(h.s, "t") != -1 {
		t.Fatal("the offset of an unsubscribed topic did not expire")
	}
	// Empty: the subscribed topic's offset, committed long ago, expires at once and
	// takes the group with it.
	leaveAll(h, topics)
	h.run(h.s.ExpireOffsets(h.now))
	if h.s.ConsumerGroup("g") != nil || h.s.groups["g"] != nil {
		t.Fatal("an empty consumer group with expired offsets is left")
	}
	loaded := replayLog(t, h.batches)
	if loaded.ConsumerGroup("g") != nil || loaded.groups["g"] != nil {
		t.Fatal("a load brings the deleted group back")
	}
	if lg := h.s.ListGroups(nil, nil); len(lg) != 0 {
		t.Fatalf("listed %+v", lg)
	}
}

// An empty consumer group keeps offsets committed within retention, and one with no
// offsets at all is deleted by the expiry run (Kafka's cleanupGroupMetadata).
func TestConsumerEmptyGroupExpiry(t *testing.T) {
	h, topics, epoch := oneMemberShard(t)
	cgCommit(h, 9, "m1", epoch, "a", 10)
	leaveAll(h, topics)
	h.now = h.now.Add(30 * time.Minute)
	h.run(h.s.ExpireOffsets(h.now))
	if h.s.ConsumerGroup("g") == nil || cgCommitted(h.s, "a") != 10 {
		t.Fatal("offsets within retention expired")
	}
	h.now = h.now.Add(31 * time.Minute)
	h.run(h.s.ExpireOffsets(h.now))
	if h.s.ConsumerGroup("g") != nil || cgCommitted(h.s, "a") != -1 {
		t.Fatal("offsets past retention kept")
	}

	cgShardHeartbeat(h, topics, cgJoinRequest("m2", "a"))
	leaveAll(h, topics)
	if h.s.ConsumerGroup("g") == nil {
		t.Fatal("no empty group")
	}
	h.run(h.s.ExpireOffsets(h.now))
	if h.s.ConsumerGroup("g") != nil {
		t.Fatal("an empty consumer group without offsets is kept")
	}
	if loaded := replayLog(t, h.batches); loaded.ConsumerGroup("g") != nil {
		t.Fatal("a load brings the deleted group back")
	}
}

// DeleteGroups of a consumer group: NON_EMPTY_GROUP while it has members; once empty
// the group and its offsets are deleted.
func TestConsumerDeleteGroup(t *testing.T) {
	h, topics := twoMemberShard(t, 2)
	cgCommit(h, 9, "m1", memberEpoch(t, h.s, "m1"), "t", 5)
	del := func() int16 {
		code := int16(-100)
		h.run(h.s.DeleteGroup(h.now, "g", func(c int16) { code = c }))
		return code
	}
	if got := del(); got != errNonEmptyGroup {
		t.Fatalf("got %v", kerr.ErrorForCode(got))
	}
	leaveAll(h, topics)
	if got := del(); got != 0 {
		t.Fatalf("got %v", kerr.ErrorForCode(got))
	}
	if h.s.ConsumerGroup("g") != nil || cgCommitted(h.s, "t") != -1 || h.s.groups["g"] != nil {
		t.Fatal("group or offsets left")
	}
	if loaded := replayLog(t, h.batches); loaded.ConsumerGroup("g") != nil || loaded.groups["g"] != nil {
		t.Fatal("a load brings the deleted group back")
	}
}

// DescribeGroups describes a consumer group as Kafka 4.2 does: Dead, and from v6
// GROUP_ID_NOT_FOUND "Group g is not a classic group."; an unknown id from v6 "Group x
// not found.".
func TestConsumerGroupDescribeGroups(t *testing.T) {
	h, _ := twoMemberShard(t, 2)
	cgCommit(h, 9, "m1", memberEpoch(t, h.s, "m1"), "t", 5) // a holder of the offsets exists too
	for _, tc := range []struct {
		id      string
		version int16
		code    int16
		message string
	}{
		{"g", 6, errGroupIDNotFound, "Group g is not a classic group."},
		{"g", 5, 0, ""},
		{"nope", 6, errGroupIDNotFound, "Group nope not found."},
		{"nope", 5, 0, ""},
	} {
		d := h.s.DescribeGroup(tc.id, tc.version, false)
		if d.State != "Dead" || d.ErrorCode != tc.code || deref(d.ErrorMessage) != tc.message || len(d.Members) != 0 || d.ProtocolType != "" {
			t.Errorf("%s v%d: %+v %q", tc.id, tc.version, d, deref(d.ErrorMessage))
		}
	}
	h.commit(8, "simple", "", -1, map[int32]int64{0: 1})
	if d := h.s.DescribeGroup("simple", 6, false); d.ErrorCode != 0 || d.State != "Empty" {
		t.Fatalf("simple group: %+v", d)
	}
}

// ListGroups lists consumer groups with type and protocol type "consumer" and their
// state, once each, beside classic groups, and filters by state and type
// (case-insensitive).
func TestConsumerGroupListGroups(t *testing.T) {
	h, topics := twoMemberShard(t, 2)
	cgCommit(h, 9, "m1", memberEpoch(t, h.s, "m1"), "t", 5)
	h.commit(8, "simple", "", -1, map[int32]int64{0: 1})
	h.stableGroup("classic", 1)
	state := h.s.ConsumerGroup("g").State().String()
	list := func(states, types []string) string {
		var out []string
		for _, g := range h.s.ListGroups(states, types) {
			out = append(out, g.Group+"/"+g.GroupType+"/"+g.ProtocolType+"/"+g.GroupState)
		}
		return strings.Join(out, " ")
	}
	cg := "g/consumer/consumer/" + state
	for _, tc := range []struct {
		states, types []string
		want          string
	}{
		{nil, nil, "classic/classic/consumer/Stable " + cg + " simple/classic//Empty"},
		{nil, []string{"consumer"}, cg},
		{nil, []string{"CONSUMER"}, cg},
		{nil, []string{"Classic"}, "classic/classic/consumer/Stable simple/classic//Empty"},
		{[]string{strings.ToLower(state)}, []string{"consumer"}, cg},
		{[]string{"empty"}, nil, "simple/classic//Empty"},
		{nil, []string{"share"}, ""},
	} {
		if got := list(tc.states, tc.types); got != tc.want {
			t.Errorf("states %v types %v: got %q, want %q", tc.states, tc.types, got, tc.want)
		}
	}
	leaveAll(h, topics)
	if got := list([]string{"Empty"}, []string{"consumer"}); got != "g/consumer/consumer/Empty" {
		t.Fatalf("empty consumer group: %q", got)
	}
}
