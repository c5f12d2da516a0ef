package group

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgShardHeartbeat sends req to h's shard and returns the response it answers with.
func cgShardHeartbeat(h *harness, topics ConsumerTopicMap, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	var got *kmsg.ConsumerGroupHeartbeatResponse
	h.run(h.s.ConsumerGroupHeartbeat(h.now, Client{ID: "client", Host: "/127.0.0.1"}, req, topics, func(r kmsg.Response) {
		if got != nil {
			h.t.Fatal("answered twice")
		}
		got = r.(*kmsg.ConsumerGroupHeartbeatResponse)
	}))
	if got == nil && len(h.held) == 0 {
		h.t.Fatal("not answered")
	}
	return got
}

// twoMemberShard is a shard whose group "g" has members m1 and m2 subscribed to topic
// "a" of the given partition count.
func twoMemberShard(t *testing.T, partitions int32) (*harness, ConsumerTopicMap) {
	h := newHarness(t, testConfig())
	topics := cgTopics(partitions)
	cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
	cgShardHeartbeat(h, topics, cgJoinRequest("m2", "a"))
	return h, topics
}

// recordKeys decodes records' keys as "type:member" ("type:member:tombstone").
func recordKeys(t *testing.T, records []Record) []string {
	t.Helper()
	var out []string
	for _, r := range records {
		k, ok, err := DecodeConsumerGroupKey(r.Key)
		if !ok || err != nil {
			t.Fatalf("key %x: %v %v", r.Key, ok, err)
		}
		s := string(rune('0'+k.Type%10)) + ":" + k.MemberID
		if k.Type == RecordTypeConsumerGroupRegularExpression {
			s = "16:" + k.RegularExpression
		}
		if r.Value == nil {
			s += ":tombstone"
		}
		out = append(out, s)
	}
	return out
}

// A ConsumerGroupHeartbeat naming a classic group with members is GROUP_ID_NOT_FOUND
// (Kafka 4.2's getOrMaybeCreateConsumerGroup without online upgrade, as
// group.consumer.migration.policy=disabled); a simple group
// (offsets only) becomes a consumer group and keeps its offsets; records of the other
// type are refused on replay.
func TestConsumerShardGroupTypeConflicts(t *testing.T) {
	topics := cgTopics(2)
	t.Run("classic group with members", func(t *testing.T) {
		cfg := testConfig()
		cfg.MigrationPolicy = MigrationDisabled // consumer_migrate_test.go upgrades
		h := newHarness(t, cfg)
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.ProtocolType = "g", "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 6000, 6000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{protocol("range", consumerMeta("a"))}
		h.run(h.s.JoinGroup(h.now, Client{ID: "c"}, join, func(kmsg.Response) {}))
		before := len(h.log)
		resp := cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
		if resp.ErrorCode != kerr.GroupIDNotFound.Code || deref(resp.ErrorMessage) != "Group g is not a consumer group." {
			t.Fatalf("got %v %q", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
		}
		if len(h.log) != before || h.s.ConsumerGroup("g") != nil {
			t.Fatal("the refused heartbeat changed the shard")
		}
	})
	t.Run("simple group keeps its offsets", func(t *testing.T) {
		h := newHarness(t, testConfig())
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Version, commit.Group, commit.Generation = 8, "g", -1
		commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42}}}}
		h.run(h.s.OffsetCommit(h.now, commit, kmsg.NewPtrOffsetCommitResponse(), func(kmsg.Response) {}))
		if resp := cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a")); resp.ErrorCode != 0 {
			t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if got := fetchAll(h.s, "g"); !strings.Contains(got, "0:42") {
			t.Fatalf("offsets %s", got)
		}
		loaded := replayLog(t, h.batches)
		if loaded.ConsumerGroup("g") == nil || !strings.Contains(fetchAll(loaded, "g"), "0:42") {
			t.Fatal("a load lost the consumer group or its offsets")
		}
	})
	t.Run("classic join of a consumer group", func(t *testing.T) {
		h := newHarness(t, testConfig())
		cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
		before := len(h.log)
		join := kmsg.NewPtrJoinGroupRequest()
		join.Version = 5
		join.Group, join.ProtocolType = "g", "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 6000, 6000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{protocol("range", consumerMeta("a"))}
		var got *kmsg.JoinGroupResponse
		h.run(h.s.JoinGroup(h.now, Client{ID: "c"}, join, func(r kmsg.Response) { got = r.(*kmsg.JoinGroupResponse) }))
		if got == nil || got.ErrorCode != kerr.InconsistentGroupProtocol.Code {
			t.Fatalf("got %+v", got)
		}
		if len(h.log) != before || h.s.groups["g"] != nil {
			t.Fatal("the refused join changed the shard")
		}
	})
	t.Run("replay refuses the other type's records", func(t *testing.T) {
		h := newHarness(t, testConfig())
		cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
		classic := newGroup("g", h.now)
		classic.protocolType = "consumer"
		groupRecord := h.s.groupMetadataRecord(classic, nil)
		if err := h.s.Replay(groupRecord.Key, groupRecord.Value); err == nil {
			t.Fatal("a classic group record of a consumer group replayed")
		}
		if err := h.s.Replay(groupRecord.Key, nil); err != nil {
			t.Fatalf("a classic tombstone: %v", err)
		}
		s := NewShard(testConfig())
		if err := s.Replay(groupRecord.Key, groupRecord.Value); err != nil {
			t.Fatal(err)
		}
		for _, r := range h.log {
			if err := s.Replay(r.Key, r.Value); err == nil {
				t.Fatalf("consumer record %v of a classic group replayed", recordKeys(t, []Record{r}))
			}
		}
		if s.ConsumerGroup("g") != nil {
			t.Fatal("a classic group id got a consumer group")
		}
	})
}

// A leave writes Kafka's tombstones in its order (current assignment, target, member
// metadata) and then the new group epoch; a join writes member, epoch, targets and
// target epoch, then the current assignment.
func TestConsumerShardRecordOrder(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := cgTopics(2)
	cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
	if got, want := recordKeys(t, h.log), []string{"5:m1", "3:", "7:m1", "6:", "8:m1"}; !slices.Equal(got, want) {
		t.Fatalf("join records %v, want %v", got, want)
	}
	h.log = nil
	cgShardHeartbeat(h, topics, cgHBRequest("m1", LeaveMemberEpoch, nil))
	if got, want := recordKeys(t, h.log), []string{"8:m1:tombstone", "7:m1:tombstone", "5:m1:tombstone", "3:"}; !slices.Equal(got, want) {
		t.Fatalf("leave records %v, want %v", got, want)
	}
	loaded := replayLog(t, h.batches)
	if g := loaded.ConsumerGroup("g"); g == nil || g.NumMembers() != 0 || g.GroupEpoch() != 2 || g.State() != ConsumerGroupEmpty {
		t.Fatalf("loaded %+v", g)
	}
}

// Deleting a group tombstones every record of it, the group metadata last; replaying
// them removes the group.
func TestConsumerGroupTombstones(t *testing.T) {
	h, _ := twoMemberShard(t, 2)
	g := h.s.ConsumerGroup("g")
	records := consumerGroupTombstones(g, true)
	want := []string{"8:m1:tombstone", "8:m2:tombstone", "7:m1:tombstone", "7:m2:tombstone", "6::tombstone",
		"5:m1:tombstone", "5:m2:tombstone", "4::tombstone", "3::tombstone"}
	if got := recordKeys(t, records); !slices.Equal(got, want) {
		t.Fatalf("tombstones %v, want %v", got, want)
	}
	for _, r := range records {
		if err := h.s.Replay(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	if h.s.ConsumerGroup("g") != nil {
		t.Fatal("the group survived its tombstones")
	}
}

// Strings longer than a record holds are refused before anything is encoded: the
// heartbeat with INVALID_REQUEST, the encoder with an error (no panic).
func TestConsumerRecordsRefuseLongStrings(t *testing.T) {
	h := newHarness(t, testConfig())
	long := strings.Repeat("x", maxRecordString+1)
	for name, req := range map[string]*kmsg.ConsumerGroupHeartbeatRequest{
		"member id":   cgJoinRequest(long, "a"),
		"topic name":  cgJoinRequest("m1", "a", long),
		"instance id": staticReq(cgJoinRequest("m1", "a"), long),
	} {
		resp := cgShardHeartbeat(h, cgTopics(1), req)
		if resp.ErrorCode != kerr.InvalidRequest.Code || len(h.log) != 0 {
			t.Fatalf("%s: %v, %d records", name, kerr.ErrorForCode(resp.ErrorCode), len(h.log))
		}
	}
	for _, evs := range [][]ConsumerEvent{
		{ConsumerMemberUpdated{MemberID: long}},
		{ConsumerMemberUpdated{MemberID: "m", SubscribedTopicNames: []string{long}}},
		{ConsumerTargetAssignmentChanged{Members: []ConsumerTargetMember{{MemberID: long}}}},
		{ConsumerMemberRemoved{MemberID: long}},
	} {
		if _, err := consumerEventRecords("g", evs); err == nil {
			t.Fatalf("%v encoded", evs)
		}
	}
	if _, err := consumerEventRecords(long, nil); err == nil {
		t.Fatal("a long group id encoded")
	}
}

// Subscribed topic names are stored sorted as Java sorts strings (UTF-16 code units):
// U+1F600 (a surrogate pair, D83D) before U+FFFD, unlike Go's byte order.
func TestConsumerMemberRecordJavaOrder(t *testing.T) {
	names := []string{"\uFFFD", "\U0001F600", "b", "a"}
	recs, err := consumerEventRecords("g", []ConsumerEvent{ConsumerMemberUpdated{MemberID: "m", SubscribedTopicNames: names}})
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := DecodeConsumerGroupRecord(recs[0].Key, recs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	got := rec.Value.(*ConsumerGroupMemberMetadataValue).SubscribedTopicNames
	if want := []string{"a", "b", "\U0001F600", "\uFFFD"}; !slices.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	// Replayed, the names are in the group's (byte) order again.
	g := NewConsumerGroup("g", DefaultConsumerConfig())
	replayConsumerRecord(g, rec)
	m, _ := g.Member("m")
	if want := []string{"a", "b", "\uFFFD", "\U0001F600"}; !slices.Equal(m.SubscribedTopicNames, want) {
		t.Fatalf("replayed %q, want %q", m.SubscribedTopicNames, want)
	}
}

// The deprecated subscription metadata record (type 4) is read and ignored: it
// creates no group.
func TestConsumerShardIgnoresDeprecatedRecords(t *testing.T) {
	s := NewShard(testConfig())
	for _, r := range []ConsumerGroupRecord{
		{Key: ConsumerGroupKey{Type: RecordTypeConsumerGroupPartitionMetadata, GroupID: "g"},
			Value: &ConsumerGroupPartitionMetadataValue{Topics: []ConsumerGroupTopicMetadata{{TopicName: "a", NumPartitions: 3}}}},
	} {
		e := r.Encode()
		if err := s.Replay(e.Key, e.Value); err != nil {
			t.Fatal(err)
		}
	}
	if ids := s.ConsumerGroupIDs(); len(ids) != 0 {
		t.Fatalf("groups %v", ids)
	}
	// The group's next epoch tombstones the deprecated record, as Kafka 4.1+ does.
	h := newHarness(t, testConfig())
	h.s = s
	cgShardHeartbeat(h, cgTopics(1), cgJoinRequest("m1", "a"))
	if got := recordKeys(t, h.log); got[len(got)-1] != "4::tombstone" {
		t.Fatalf("records %v", got)
	}
	h.log = nil
	cgShardHeartbeat(h, cgTopics(1), cgHBRequest("m1", LeaveMemberEpoch, nil))
	if got := recordKeys(t, h.log); slices.Contains(got, "4::tombstone") {
		t.Fatalf("tombstoned twice: %v", got)
	}
}

// A failed write answers the heartbeat with the write's error code; the group's next
// write restates it whole, so that a load gives the live group again.
func TestConsumerShardFailedWriteResyncs(t *testing.T) {
	h, topics := twoMemberShard(t, 4)
	h.writeCode = errNotCoordinator
	resp := cgShardHeartbeat(h, topics, cgHBRequest("m2", LeaveMemberEpoch, nil))
	if resp.ErrorCode != errNotCoordinator || resp.MemberID != nil {
		t.Fatalf("failed write answered %v member %v", kerr.ErrorForCode(resp.ErrorCode), resp.MemberID)
	}
	if _, dirty := h.s.consumerDirty["g"]; !dirty {
		t.Fatal("the group is not marked to resync")
	}
	h.writeCode = 0
	m1, _ := h.s.ConsumerGroup("g").Member("m1")
	if resp := cgShardHeartbeat(h, topics, cgHBRequest("m1", m1.MemberEpoch, nil)); resp.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if _, dirty := h.s.consumerDirty["g"]; dirty {
		t.Fatal("still dirty after the resync")
	}
	loaded := replayLog(t, h.batches)
	if err := sameConsumerGroup(h.s.ConsumerGroup("g"), loaded.ConsumerGroup("g")); err != nil {
		t.Fatal(err)
	}
	if _, ok := loaded.ConsumerGroup("g").Member("m2"); ok {
		t.Fatal("the member whose leave failed to be written is back after a load")
	}
}

// After a load the members' session timers run from the load: the runtime's deadline
// is the session timeout away, and expiring then removes the silent members.
func TestConsumerShardLoadStartsTimers(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := cgTopics(2)
	cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
	s := replayLog(t, h.batches)
	if _, ok := s.NextConsumerDeadline(); ok {
		t.Fatal("a deadline before Loaded")
	}
	s.Loaded(h.now)
	at, ok := s.NextConsumerDeadline()
	if want := h.now.Add(DefaultConsumerConfig().SessionTimeout); !ok || !at.Equal(want) {
		t.Fatalf("deadline %v %v, want %v", at, ok, want)
	}
	e := s.ExpireConsumerGroups(at, topics)
	if got := recordKeys(t, e.Records); !slices.Equal(got, []string{"8:m1:tombstone", "7:m1:tombstone", "5:m1:tombstone", "3:"}) {
		t.Fatalf("expiry records %v", got)
	}
	if s.ConsumerGroup("g").NumMembers() != 0 {
		t.Fatal("the silent member stayed")
	}
}

// DeleteGroups of a consumer group: NON_EMPTY_GROUP with members; once empty, the
// tombstones of its offsets and then of its records, after which a load has neither.
func TestConsumerShardDeleteGroup(t *testing.T) {
	h, topics := twoMemberShard(t, 2)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.MemberID, commit.Generation = 9, "g", "m1", memberEpoch(t, h.s, "m1")
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7}}}}
	h.run(h.s.OffsetCommit(h.now, commit, kmsg.NewPtrOffsetCommitResponse(), func(kmsg.Response) {}))
	if fetchA(h.s, "g") != "7" {
		t.Fatal("the member's commit is not there")
	}
	var code int16 = -1
	h.run(h.s.DeleteGroup(h.now, "g", func(c int16) { code = c }))
	if code != errNonEmptyGroup {
		t.Fatalf("delete of a group with members: %v", kerr.ErrorForCode(code))
	}
	cgShardHeartbeat(h, topics, cgHBRequest("m1", LeaveMemberEpoch, nil))
	cgShardHeartbeat(h, topics, cgHBRequest("m2", LeaveMemberEpoch, nil))
	h.log = nil
	h.run(h.s.DeleteGroup(h.now, "g", func(c int16) { code = c }))
	if code != 0 || h.s.ConsumerGroup("g") != nil {
		t.Fatalf("delete: %v, group %v", kerr.ErrorForCode(code), h.s.ConsumerGroup("g"))
	}
	keys := recordKeys(t, h.log[1:])
	if k, _, _ := decodeKey(h.log[0].Key); k.keyType != keyTypeOffsetCommit || h.log[0].Value != nil ||
		!slices.Equal(keys, []string{"6::tombstone", "3::tombstone"}) {
		t.Fatalf("deletion records %v after %x", keys, h.log[0].Key)
	}
	loaded := replayLog(t, h.batches)
	if loaded.ConsumerGroup("g") != nil || fetchA(loaded, "g") != "-1" || fetchA(h.s, "g") != "-1" {
		t.Fatal("a load still has the group or its offsets")
	}
}

// The coordinator fails over in the middle of a rebalance: d has joined (its target
// taken from a and b, which have yet to revoke) when the partition moves. The loaded
// shard holds the group exactly as the old coordinator did, and the rebalance
// completes there: a and b first heartbeat without Topics (kgo's keepalive while its
// revocation callback runs), which keeps them UNREVOKED_PARTITIONS, then report their
// shrunk partitions; d's next heartbeat gets the two freed partitions.
func TestConsumerShardFailoverMidRebalance(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := cgTopics(8)
	members := []string{"a", "b", "c"}
	for _, m := range members {
		cgShardHeartbeat(h, topics, cgJoinRequest(m, "a"))
	}
	// Members that revoke at once: each reports what the group says it owns.
	settle := func(h *harness, members []string) {
		t.Helper()
		for range 5 {
			for _, id := range members {
				m, _ := h.s.ConsumerGroup("g").Member(id)
				if resp := cgShardHeartbeat(h, topics, cgHBRequest(id, m.MemberEpoch, m.Assigned)); resp.ErrorCode != 0 {
					t.Fatalf("heartbeat of %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
				}
			}
		}
	}
	settle(h, members)
	if resp := cgShardHeartbeat(h, topics, cgJoinRequest("d", "a")); resp.ErrorCode != 0 || resp.MemberEpoch <= 0 {
		t.Fatalf("join of d: %v at epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
	}

	loaded := replayLog(t, h.batches)
	loaded.Loaded(h.now)
	if err := sameConsumerGroup(h.s.ConsumerGroup("g"), loaded.ConsumerGroup("g")); err != nil {
		t.Fatalf("the loaded group differs from the live one: %v", err)
	}
	next := &harness{t: t, s: loaded, now: h.now.Add(time.Second), timers: map[string]time.Time{}}
	g := loaded.ConsumerGroup("g")
	var revoking []string
	for _, id := range members {
		m, _ := g.Member(id)
		if !assignmentsEqual(m.Assigned, m.Target) {
			revoking = append(revoking, id)
		}
		cgShardHeartbeat(next, topics, cgHBRequest(id, m.MemberEpoch, nil))
	}
	if len(revoking) != 2 {
		t.Fatalf("members %v have partitions to give d, want two of a, b, c", revoking)
	}
	for _, id := range revoking {
		if m, _ := g.Member(id); m.State != MemberUnrevokedPartitions || countPartitions(m.PendingRevocation) != 1 {
			t.Fatalf("%s after a heartbeat without Topics: %v pending %v", id, m.State, m.PendingRevocation)
		}
	}
	settle(next, members)
	d, _ := g.Member("d")
	resp := cgShardHeartbeat(next, topics, cgHBRequest("d", d.MemberEpoch, AssignedPartitions{}))
	if got := respAssignment(resp); resp.ErrorCode != 0 || countPartitions(got) != 2 {
		t.Fatalf("d's heartbeat after the revocations: %v, assignment %v", kerr.ErrorForCode(resp.ErrorCode), got)
	}
	for _, id := range append(members, "d") {
		if m, _ := g.Member(id); m.State != MemberStable || countPartitions(m.Assigned) != 2 {
			t.Errorf("%s: %v with %v", id, m.State, m.Assigned)
		}
	}
	if err := consumerInvariants(g); err != nil {
		t.Fatal(err)
	}
}
