package replication

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionFetch is a Fetch request of the given version, session id and epoch naming
// partitions of topic "t" (fetch offset = 10 × partition).
func sessionFetch(version int16, id, epoch int32, partitions ...int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.ReplicaID, r.SessionID, r.SessionEpoch = version, -1, id, epoch
	if len(partitions) > 0 {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "t"
		for _, p := range partitions {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, int64(p)*10, 1<<20
			t.Partitions = append(t.Partitions, fp)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// answerFor is an answer to plan whose partitions all have high watermark hw, no
// records and no error.
func answerFor(plan *kmsg.FetchRequest, hw int64) *FetchAnswer {
	a := &FetchAnswer{FetchResponse: plan.ResponseKind().(*kmsg.FetchResponse)}
	for _, t := range plan.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = p.Partition, hw, hw, 0
			sp.RecordBatches = []byte{}
			rt.Partitions = append(rt.Partitions, sp)
		}
		a.Topics = append(a.Topics, rt)
	}
	return a
}

// answered names the partitions of an answer in order.
func answered(a *FetchAnswer) []int32 {
	var out []int32
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.Partition)
		}
	}
	return out
}

// planned names the partitions a plan reads, in order, with their fetch offsets.
func planned(plan *kmsg.FetchRequest) (parts []int32, offsets []int64) {
	for _, t := range plan.Topics {
		for _, p := range t.Partitions {
			parts, offsets = append(parts, p.Partition), append(offsets, p.FetchOffset)
		}
	}
	return parts, offsets
}

// openSession creates a session of the partitions through a full fetch answered with
// high watermark hw, and returns its id.
func openSession(t *testing.T, c *FetchSessionCache, nowMs int64, follower bool, partitions ...int32) int32 {
	t.Helper()
	r := sessionFetch(12, 0, 0, partitions...)
	if follower {
		r.ReplicaID = 1
	}
	fc := c.NewContext(r, follower, nowMs)
	if fc.kind != fetchFull {
		t.Fatalf("context of a full fetch: %v", fc.kind)
	}
	a := answerFor(r, 5)
	c.Finish(&fc, r, a, nowMs)
	return a.SessionID
}

// TestFetchSessionEpochRules walks Kafka's session id and epoch rules: epoch 0 creates
// a session, epoch -1 fetches without one (and closes the one named), incremental
// epochs must be the session's next, an unknown id is FETCH_SESSION_ID_NOT_FOUND, and a
// v13 request on a session of names FETCH_SESSION_TOPIC_ID_ERROR.
func TestFetchSessionEpochRules(t *testing.T) {
	c := NewFetchSessionCache(10, 120000)
	if fc := c.NewContext(sessionFetch(6, 0, 0, 0), false, 0); fc.kind != fetchSessionless {
		t.Fatalf("v6: %v, want sessionless", fc.kind)
	}
	if fc := c.NewContext(sessionFetch(12, 0, -1, 0), false, 0); fc.kind != fetchSessionless {
		t.Fatalf("epoch -1: %v, want sessionless", fc.kind)
	}
	id := openSession(t, c, 0, false, 0, 1)
	if id == 0 || c.size() != 1 || c.partitions() != 2 {
		t.Fatalf("session %d, cache %d sessions of %d partitions", id, c.size(), c.partitions())
	}
	errorOf := func(r *kmsg.FetchRequest) int16 {
		fc := c.NewContext(r, false, 1)
		if fc.kind != fetchSessionError {
			t.Fatalf("session %d epoch %d v%d: context %v, want an error", r.SessionID, r.SessionEpoch, r.Version, fc.kind)
		}
		return fc.errorCode
	}
	if got := errorOf(sessionFetch(12, id, 2)); got != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("epoch 2 first: %d, want INVALID_FETCH_SESSION_EPOCH", got)
	}
	if got := errorOf(sessionFetch(12, id+1, 1)); got != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown id: %d, want FETCH_SESSION_ID_NOT_FOUND", got)
	}
	if got := errorOf(sessionFetch(13, id, 1)); got != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v13 on a session of names: %d, want FETCH_SESSION_TOPIC_ID_ERROR", got)
	}
	for epoch := int32(1); epoch <= 3; epoch++ {
		fc := c.NewContext(sessionFetch(12, id, epoch), false, 1)
		if fc.kind != fetchIncremental {
			t.Fatalf("epoch %d: %v, want incremental", epoch, fc.kind)
		}
		a := answerFor(fc.Request(sessionFetch(12, id, epoch)), 5)
		c.Finish(&fc, sessionFetch(12, id, epoch), a, 1)
		if a.SessionID != id || a.ErrorCode != 0 {
			t.Fatalf("epoch %d answered session %d error %d", epoch, a.SessionID, a.ErrorCode)
		}
	}
	if got := errorOf(sessionFetch(12, id, 3)); got != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("epoch 3 again: %d, want INVALID_FETCH_SESSION_EPOCH", got)
	}
	// A full fetch naming the session closes it, and may create another.
	id2 := openSession(t, c, 2, false, 0)
	if fc := c.NewContext(sessionFetch(12, id2, 0, 0), false, 2); fc.kind != fetchFull || c.get(id2) != nil {
		t.Fatalf("full fetch naming session %d: %v, session still cached: %v", id2, fc.kind, c.get(id2) != nil)
	}
	if fc := c.NewContext(sessionFetch(12, id, -1), false, 2); fc.kind != fetchSessionless || c.get(id) != nil {
		t.Fatalf("epoch -1 naming session %d: %v, session still cached: %v", id, fc.kind, c.get(id) != nil)
	}
	if got := errorOf(sessionFetch(12, id, 4)); got != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: %d, want FETCH_SESSION_ID_NOT_FOUND", got)
	}
	if c.size() != 0 || c.partitions() != 0 {
		t.Fatalf("cache after closing: %d sessions of %d partitions", c.size(), c.partitions())
	}
	if nextFetchSessionEpoch(1<<31-1) != 1 || nextFetchSessionEpoch(-1) != -1 {
		t.Fatal("epochs wrap to 1, the final epoch stays")
	}
}

// TestFetchSessionForgottenAndAdded: an incremental fetch adds the partitions it names
// (or updates their fetch offsets), removes ForgottenTopicsData, reads every partition
// of the session with its cached parameters, and a session left empty is closed and the
// fetch answered without a session.
func TestFetchSessionForgottenAndAdded(t *testing.T) {
	c := NewFetchSessionCache(10, 120000)
	id := openSession(t, c, 0, false, 0, 1, 2)
	r := sessionFetch(12, id, 1, 3, 1) // 3 joins, 1 moves on
	r.Topics[0].Partitions[1].FetchOffset = 99
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.Topic, ft.Partitions = "t", []int32{0, 7} // 7 was never in it
	r.ForgottenTopics = append(r.ForgottenTopics, ft)
	fc := c.NewContext(r, false, 1)
	plan := fc.Request(r)
	parts, offsets := planned(plan)
	if !slices.Equal(parts, []int32{1, 2, 3}) || !slices.Equal(offsets, []int64{99, 20, 30}) {
		t.Fatalf("plan reads %v at %v, want [1 2 3] at [99 20 30]", parts, offsets)
	}
	a := answerFor(plan, 5)
	c.Finish(&fc, plan, a, 1)
	if got := answered(a); !slices.Equal(got, []int32{3}) {
		t.Fatalf("answer names %v, want [3] (new; the others unchanged)", got)
	}
	if c.partitions() != 3 {
		t.Fatalf("cache holds %d partitions, want 3", c.partitions())
	}
	r = sessionFetch(12, id, 2)
	ft.Partitions = []int32{1, 2, 3}
	r.ForgottenTopics = append(r.ForgottenTopics, ft)
	if fc := c.NewContext(r, false, 2); fc.kind != fetchSessionless || c.get(id) != nil || c.partitions() != 0 {
		t.Fatalf("all forgotten: %v, session cached %v, %d partitions cached", fc.kind, c.get(id) != nil, c.partitions())
	}
}

// TestFetchSessionIncrementalAnswer: an incremental answer names only the partitions
// with records, a changed high watermark, last stable offset or log start offset, an
// error (again while it lasts, and once more when it clears), a diverging epoch or a
// preferred read replica; a partition that returned records moves to the end of the
// session's order; and an answer whose session moved on meanwhile is
// INVALID_FETCH_SESSION_EPOCH.
func TestFetchSessionIncrementalAnswer(t *testing.T) {
	c := NewFetchSessionCache(10, 120000)
	id := openSession(t, c, 0, false, 0, 1, 2, 3, 4, 5, 6)
	epoch := int32(1)
	round := func(edit func(a *FetchAnswer)) (*FetchAnswer, []int32) {
		t.Helper()
		r := sessionFetch(12, id, epoch)
		epoch++
		fc := c.NewContext(r, false, 1)
		if fc.kind != fetchIncremental {
			t.Fatalf("epoch %d: %v", epoch-1, fc.kind)
		}
		plan := fc.Request(r)
		order, _ := planned(plan)
		a := answerFor(plan, 5)
		if edit != nil {
			edit(a)
		}
		c.Finish(&fc, plan, a, 1)
		return a, order
	}
	part := func(a *FetchAnswer, p int32) *kmsg.FetchResponseTopicPartition {
		for i := range a.Topics[0].Partitions {
			if sp := &a.Topics[0].Partitions[i]; sp.Partition == p {
				return sp
			}
		}
		t.Fatalf("partition %d not in the answer", p)
		return nil
	}
	a, _ := round(func(a *FetchAnswer) {
		part(a, 1).RecordBatches = []byte{1, 2, 3}
		part(a, 2).HighWatermark = 6
		part(a, 3).LastStableOffset = 4
		part(a, 4).LogStartOffset = 1
		sp := part(a, 5)
		sp.ErrorCode, sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = kerr.NotLeaderForPartition.Code, -1, -1, -1
		part(a, 6).DivergingEpoch.Epoch, part(a, 6).DivergingEpoch.EndOffset = 2, 3
	})
	if got := answered(a); !slices.Equal(got, []int32{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("answer names %v, want [1 2 3 4 5 6]", got)
	}
	a, order := round(func(a *FetchAnswer) {
		part(a, 2).HighWatermark = 6 // as told: not again
		part(a, 3).LastStableOffset = 4
		part(a, 4).LogStartOffset = 1
		sp := part(a, 5)
		sp.ErrorCode, sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = kerr.NotLeaderForPartition.Code, -1, -1, -1
		part(a, 0).PreferredReadReplica = 2
	})
	if !slices.Equal(order, []int32{0, 2, 3, 4, 5, 6, 1}) {
		t.Fatalf("read order %v: the partition that returned records goes last", order)
	}
	if got := answered(a); !slices.Equal(got, []int32{0, 5}) {
		t.Fatalf("answer names %v, want [0 5] (preferred replica, error)", got)
	}
	a, _ = round(func(a *FetchAnswer) {
		part(a, 2).HighWatermark = 6
		part(a, 3).LastStableOffset = 4
		part(a, 4).LogStartOffset = 1
	})
	if got := answered(a); !slices.Equal(got, []int32{5}) {
		t.Fatalf("answer names %v, want [5] (its error cleared)", got)
	}
	// A duplicate: the next epoch is accepted while this one is parked.
	r := sessionFetch(12, id, epoch)
	fc := c.NewContext(r, false, 1)
	plan := fc.Request(r)
	if dup := c.NewContext(sessionFetch(12, id, epoch), false, 1); dup.kind != fetchSessionError {
		t.Fatalf("the same epoch twice: %v", dup.kind)
	}
	r2 := sessionFetch(12, id, epoch+1)
	fc2 := c.NewContext(r2, false, 1)
	a = answerFor(plan, 9)
	c.Finish(&fc, plan, a, 1)
	if a.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || len(a.Topics) != 0 || a.SessionID != id {
		t.Fatalf("superseded answer: error %d, %d topics, session %d", a.ErrorCode, len(a.Topics), a.SessionID)
	}
	a = answerFor(fc2.Request(r2), 9)
	c.Finish(&fc2, fc2.Request(r2), a, 1)
	if len(answered(a)) != 7 {
		t.Fatalf("answer after the duplicate names %v, want all 7 (high watermark moved)", answered(a))
	}
}

// TestFetchSessionEviction holds the cache to its slots the Kafka way: a new session
// evicts one unused for the eviction time, else a follower's evicts a consumer's, a
// larger one evicts a smaller one of the same kind created more than the eviction
// time ago (as of its last use), and otherwise none is created (session id 0).
func TestFetchSessionEviction(t *testing.T) {
	const evictMs = 1000
	c := NewFetchSessionCache(2, evictMs)
	small := openSession(t, c, 0, false, 0)
	big := openSession(t, c, 0, false, 0, 1, 2)
	if got := openSession(t, c, 10, false, 0, 1, 2, 3); got != 0 {
		t.Fatalf("a consumer session with no room and only young sessions: id %d, want 0", got)
	}
	f1 := openSession(t, c, 20, true, 0)
	if f1 == 0 || c.get(small) != nil || c.get(big) == nil {
		t.Fatalf("follower session %d: the smaller consumer evicted %v, the larger kept %v", f1, c.get(small) == nil, c.get(big) != nil)
	}
	f2 := openSession(t, c, 30, true, 0)
	if f2 == 0 || c.get(big) != nil {
		t.Fatalf("follower session %d: a consumer session of any size is evicted for it: %v", f2, c.get(big) == nil)
	}
	if got := openSession(t, c, 40, true, 0, 1, 2); got != 0 {
		t.Fatalf("a follower session may not evict young follower sessions: id %d", got)
	}
	// Used after the eviction time since their creation: evictable by a larger one.
	for _, id := range []int32{f1, f2} {
		r := sessionFetch(12, id, 1)
		fc := c.NewContext(r, true, evictMs+50)
		c.Finish(&fc, fc.Request(r), answerFor(fc.Request(r), 5), evictMs+50)
	}
	if got := openSession(t, c, evictMs+60, false, 0, 1, 2); got != 0 {
		t.Fatalf("a consumer session may not evict a follower's: id %d", got)
	}
	if got := openSession(t, c, evictMs+60, true, 0); got != 0 {
		t.Fatalf("an equal follower session may not evict an old one: id %d", got)
	}
	f3 := openSession(t, c, evictMs+60, true, 0, 1)
	if f3 == 0 || (c.get(f1) != nil) == (c.get(f2) != nil) {
		t.Fatalf("larger follower session %d: exactly one old one evicted: %v %v", f3, c.get(f1) == nil, c.get(f2) == nil)
	}
	// Stale: unused for longer than the eviction time, whatever its worth.
	stale := openSession(t, c, 3*evictMs, false, 0)
	if stale == 0 || c.get(f3) == nil || c.get(f1) != nil || c.get(f2) != nil {
		t.Fatalf("session %d once the old follower session went stale; f3 kept %v", stale, c.get(f3) != nil)
	}
	if c.size() != 2 || c.evictions != 4 {
		t.Fatalf("%d sessions, %d evictions; want 2 and 4", c.size(), c.evictions)
	}
}

// TestFetchSessionPartitionBound: the sessions' partitions together stay under the
// cache's bound: a full fetch over it gets no session, and an incremental fetch that
// would pass it closes its session with FETCH_SESSION_ID_NOT_FOUND.
func TestFetchSessionPartitionBound(t *testing.T) {
	c := NewFetchSessionCache(10, 120000)
	c.maxPartitions = 4
	if got := openSession(t, c, 0, false, 0, 1, 2, 3, 4); got != 0 {
		t.Fatalf("5 partitions under a bound of 4: session %d", got)
	}
	id := openSession(t, c, 0, false, 0, 1, 2)
	fc := c.NewContext(sessionFetch(12, id, 1, 3, 4), false, 1)
	if fc.kind != fetchSessionError || fc.errorCode != kerr.FetchSessionIDNotFound.Code || c.get(id) != nil || c.partitions() != 0 {
		t.Fatalf("growing past the bound: %v %d, session cached %v, %d partitions", fc.kind, fc.errorCode, c.get(id) != nil, c.partitions())
	}
}
