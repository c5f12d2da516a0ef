package group

import (
	"slices"
	"testing"
	"time"
)

// loadedResolution is what a load of h's committed log holds of group g's regex.
func loadedResolution(t *testing.T, h *harness, regex string) ([]string, bool) {
	t.Helper()
	g := replayLog(t, h.batches).ConsumerGroup("g")
	if g == nil {
		return nil, false
	}
	return g.ResolvedRegularExpression(regex)
}

// The resolution of a regular expression is written as record type 16 after the
// member's metadata and before the group epoch; a load gives it back (topics,
// version, timestamp); the last member leaving writes its tombstone.
func TestConsumerRegexRecords(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := regexTopics("orders", "orders-eu", "payments")
	cgShardHeartbeat(h, topics, cgRegexJoin("m1", "orders.*"))
	if got, want := recordKeys(t, h.log), []string{"5:m1", "16:orders.*", "3:", "7:m1", "6:", "8:m1"}; !slices.Equal(got, want) {
		t.Fatalf("join records %v, want %v", got, want)
	}
	rec, ok, err := DecodeConsumerGroupRecord(h.log[1].Key, h.log[1].Value)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	v := rec.Value.(*ConsumerGroupRegularExpressionValue)
	if !slices.Equal(v.Topics, []string{"orders", "orders-eu"}) || v.Timestamp != h.now.UnixMilli() || v.Version == 0 {
		t.Fatalf("record value %+v", v)
	}
	loaded := replayLog(t, h.batches)
	if err := sameConsumerGroup(h.s.ConsumerGroup("g"), loaded.ConsumerGroup("g")); err != nil {
		t.Fatal(err)
	}
	// The loaded group assigns from the replayed resolution, without resolving again.
	if got, ok := loaded.ConsumerGroup("g").ResolvedRegularExpression("orders.*"); !ok || !slices.Equal(got, v.Topics) {
		t.Fatalf("loaded resolution %q %v", got, ok)
	}

	m2 := cgJoinRequest("m2", "payments")
	cgShardHeartbeat(h, topics, m2)
	h.log = nil
	cgShardHeartbeat(h, topics, cgHBRequest("m1", LeaveMemberEpoch, nil))
	if got, want := recordKeys(t, h.log), []string{"8:m1:tombstone", "7:m1:tombstone", "5:m1:tombstone", "16:orders.*:tombstone", "3:"}; !slices.Equal(got[:len(want)], want) {
		t.Fatalf("leave records %v, want %v first", got, want)
	}
	if _, ok := loadedResolution(t, h, "orders.*"); ok {
		t.Fatal("a load still has the resolution")
	}
}

// A refresh writes every expression's record again; a load gives the refreshed
// resolution.
func TestConsumerRegexRefreshRecords(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := regexTopics("orders", "payments")
	cgShardHeartbeat(h, topics, cgRegexJoin("m1", "orders.*"))
	cgShardHeartbeat(h, topics, cgRegexJoin("m2", "pay.*"))
	topics["orders-us"] = AssignorTopic{ID: testTopicID(9), Name: "orders-us", Partitions: 1}
	h.now = h.now.Add(RegexRefreshMinInterval + time.Millisecond)
	h.log = nil
	m1, _ := h.s.ConsumerGroup("g").Member("m1")
	cgShardHeartbeat(h, topics, cgHBRequest("m1", m1.MemberEpoch, m1.Assigned))
	if got := recordKeys(t, h.log); !slices.Equal(got[:3], []string{"16:orders.*", "16:pay.*", "3:"}) {
		t.Fatalf("refresh records %v", got)
	}
	if got, _ := loadedResolution(t, h, "orders.*"); !slices.Equal(got, []string{"orders", "orders-us"}) {
		t.Fatalf("loaded %q", got)
	}
}

// Deleting an empty group tombstones its regex records (before the group metadata
// tombstone), so that a load recreates nothing.
func TestConsumerRegexGroupDeletion(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := regexTopics("orders")
	cgShardHeartbeat(h, topics, cgRegexJoin("m1", "orders"))
	g := h.s.ConsumerGroup("g")
	// A resolution left behind (as a load of a failed write can leave one) is
	// tombstoned too.
	g.apply(ConsumerRegularExpressionResolved{Regex: "stale", Topics: []string{"orders"}})
	if got, want := recordKeys(t, consumerGroupTombstones(g, false)), []string{"8:m1:tombstone", "7:m1:tombstone", "6::tombstone",
		"5:m1:tombstone", "16:orders:tombstone", "16:stale:tombstone", "3::tombstone"}; !slices.Equal(got, want) {
		t.Fatalf("tombstones %v, want %v", got, want)
	}
	cgShardHeartbeat(h, topics, cgHBRequest("m1", LeaveMemberEpoch, nil))
	code := int16(-1)
	h.run(h.s.DeleteGroup(h.now, "g", func(c int16) { code = c }))
	if code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if ids := replayLog(t, h.batches).ConsumerGroupIDs(); len(ids) != 0 {
		t.Fatalf("a load has groups %v", ids)
	}
	// Compaction keeps the last record of each key: nothing of the group is left
	// live.
	last := map[string][]byte{}
	for _, r := range h.log {
		last[string(r.Key)] = r.Value
	}
	for k, v := range last {
		if v != nil {
			if key, ok, _ := DecodeConsumerGroupKey([]byte(k)); ok && key.GroupID == "g" {
				t.Fatalf("record type %d %q outlives the deletion", key.Type, key.RegularExpression+key.MemberID)
			}
		}
	}
}

// A failed write of a regex tombstone leaves the record in the log; the group's
// resync tombstones it, so that a load matches the live group again.
func TestConsumerRegexFailedTombstoneResyncs(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := regexTopics("orders", "payments")
	cgShardHeartbeat(h, topics, cgRegexJoin("m1", "orders"))
	cgShardHeartbeat(h, topics, cgJoinRequest("m2", "payments"))
	h.writeCode = errNotCoordinator
	cgShardHeartbeat(h, topics, cgHBRequest("m1", LeaveMemberEpoch, nil))
	if got := h.s.ConsumerGroup("g").RegularExpressions(); len(got) != 0 {
		t.Fatalf("live group still has %q", got)
	}
	if _, ok := loadedResolution(t, h, "orders"); !ok {
		t.Fatal("the failed tombstone reached the log")
	}
	h.writeCode = 0
	m2, _ := h.s.ConsumerGroup("g").Member("m2")
	h.log = nil
	cgShardHeartbeat(h, topics, cgHBRequest("m2", m2.MemberEpoch, nil))
	if got := recordKeys(t, h.log); !slices.Contains(got, "16:orders:tombstone") {
		t.Fatalf("resync records %v lack the regex tombstone", got)
	}
	loaded := replayLog(t, h.batches)
	if err := sameConsumerGroup(h.s.ConsumerGroup("g"), loaded.ConsumerGroup("g")); err != nil {
		t.Fatal(err)
	}

	// The same when the group is deleted before any resync: the deletion and the
	// cleanup after it tombstone the expression.
	h = newHarness(t, testConfig())
	cgShardHeartbeat(h, topics, cgRegexJoin("m1", "orders"))
	h.writeCode = errNotCoordinator
	cgShardHeartbeat(h, topics, cgHBRequest("m1", LeaveMemberEpoch, nil))
	h.writeCode = 0
	h.run(h.s.DeleteGroup(h.now, "g", func(int16) {}))
	if ids := replayLog(t, h.batches).ConsumerGroupIDs(); len(ids) != 0 {
		t.Fatalf("a load has groups %v", ids)
	}
	if len(h.s.consumerDirtyRegexes) != 0 {
		t.Fatalf("still dirty: %v", h.s.consumerDirtyRegexes)
	}
}

// A regex record replayed for a group id creates the group (Kafka's replay of
// ConsumerGroupRegularExpressionKey), and its tombstone for an unknown group is
// ignored.
func TestConsumerRegexReplayCreatesGroup(t *testing.T) {
	s := NewShard(testConfig())
	for _, r := range []ConsumerGroupRecord{
		{Key: ConsumerGroupKey{Type: RecordTypeConsumerGroupRegularExpression, GroupID: "h", RegularExpression: "x"}},
		{Key: ConsumerGroupKey{Type: RecordTypeConsumerGroupRegularExpression, GroupID: "g", RegularExpression: "a.*"},
			Value: &ConsumerGroupRegularExpressionValue{Topics: []string{"ab", "a"}, Version: 7, Timestamp: 9}},
	} {
		e := r.Encode()
		if err := s.Replay(e.Key, e.Value); err != nil {
			t.Fatal(err)
		}
	}
	if ids := s.ConsumerGroupIDs(); !slices.Equal(ids, []string{"g"}) {
		t.Fatalf("groups %v", ids)
	}
	if got, _ := s.ConsumerGroup("g").ResolvedRegularExpression("a.*"); !slices.Equal(got, []string{"a", "ab"}) {
		t.Fatalf("resolution %q", got)
	}
	// The first heartbeat of the group deletes the resolution no member uses.
	h := newHarness(t, testConfig())
	h.s = s
	cgShardHeartbeat(h, regexTopics("a"), cgJoinRequest("m1", "a"))
	if got := recordKeys(t, h.log); !slices.Contains(got, "16:a.*:tombstone") {
		t.Fatalf("records %v", got)
	}
}

// When the deletion of a group fails after a new group of the id started, the new
// group's resync tombstones the old group's expressions.
func TestConsumerRegexFailedDeletionThenNewGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := regexTopics("orders", "payments")
	cgShardHeartbeat(h, topics, cgRegexJoin("m1", "orders"))
	h.writeCode = errNotCoordinator
	cgShardHeartbeat(h, topics, cgHBRequest("m1", LeaveMemberEpoch, nil)) // the leave fails
	h.writeCode = 0
	h.hold = true
	h.run(h.s.DeleteGroup(h.now, "g", func(int16) {}))
	cgShardHeartbeat(h, topics, cgJoinRequest("m2", "payments"))
	h.release(errNotCoordinator)
	if _, dirty := h.s.consumerDirty["g"]; !dirty {
		t.Fatal("the new group is not marked to resync")
	}
	cgShardHeartbeat(h, topics, cgJoinRequest("m3", "payments")) // the next write resyncs
	loaded := replayLog(t, h.batches)
	if err := sameConsumerGroup(h.s.ConsumerGroup("g"), loaded.ConsumerGroup("g")); err != nil {
		t.Fatal(err)
	}
	if got := loaded.ConsumerGroup("g").RegularExpressions(); len(got) != 0 {
		t.Fatalf("a load has %q", got)
	}
}
