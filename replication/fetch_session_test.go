package replication

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wantFetch is a round's partitions of topic "t" at the given fetch offsets, keyed
// by partition.
func wantFetch(offsets map[int32]int64) []kmsg.FetchRequestTopic {
	t := kmsg.NewFetchRequestTopic()
	t.Topic = "t"
	for _, p := range []int32{0, 1, 2, 3, 4} {
		if off, ok := offsets[p]; ok {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, off, 1<<20
			t.Partitions = append(t.Partitions, fp)
		}
	}
	return []kmsg.FetchRequestTopic{t}
}

func namedIn(topics []kmsg.FetchRequestTopic) []int32 {
	var out []int32
	for _, t := range topics {
		for _, p := range t.Partitions {
			out = append(out, p.Partition)
		}
	}
	return out
}

// TestFollowerSessionRequests: the first fetch is full (id 0, epoch 0); once the
// leader answers with a session, fetches name only the partitions that joined or whose
// fetch offset moved, and forget those that left; a session error, a failed request
// or the leader ending the session go back to a full fetch, which names the old session
// unless the leader said it does not know it.
func TestFollowerSessionRequests(t *testing.T) {
	var s followerSession
	build := func(offsets map[int32]int64) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		s.build(req, wantFetch(offsets))
		return req
	}
	answer := func(id int32, code int16) bool {
		resp := kmsg.NewPtrFetchResponse()
		resp.SessionID, resp.ErrorCode = id, code
		return s.answered(resp)
	}
	req := build(map[int32]int64{0: 5, 1: 5, 2: 5})
	if req.SessionID != 0 || req.SessionEpoch != 0 || !slices.Equal(namedIn(req.Topics), []int32{0, 1, 2}) {
		t.Fatalf("first fetch: session %d epoch %d names %v", req.SessionID, req.SessionEpoch, namedIn(req.Topics))
	}
	answer(42, 0)
	req = build(map[int32]int64{0: 5, 1: 7, 2: 5, 3: 0})
	if req.SessionID != 42 || req.SessionEpoch != 1 || !slices.Equal(namedIn(req.Topics), []int32{1, 3}) || len(req.ForgottenTopics) != 0 {
		t.Fatalf("incremental: session %d epoch %d names %v forgets %v", req.SessionID, req.SessionEpoch, namedIn(req.Topics), req.ForgottenTopics)
	}
	answer(42, 0)
	req = build(map[int32]int64{1: 7, 3: 0})
	if req.SessionEpoch != 2 || len(req.Topics) != 0 || len(req.ForgottenTopics) != 1 || !slices.Equal(slices.Sorted(slices.Values(req.ForgottenTopics[0].Partitions)), []int32{0, 2}) {
		t.Fatalf("partitions left: epoch %d names %v forgets %v", req.SessionEpoch, namedIn(req.Topics), req.ForgottenTopics)
	}
	if !answer(42, 0) {
		t.Fatal("a good answer is taken")
	}
	// INVALID_FETCH_SESSION_EPOCH: a full fetch that closes session 42.
	build(map[int32]int64{1: 7, 3: 0})
	if answer(42, kerr.InvalidFetchSessionEpoch.Code) {
		t.Fatal("a session error's answer is not to be used")
	}
	req = build(map[int32]int64{1: 7, 3: 0})
	if req.SessionID != 42 || req.SessionEpoch != 0 || !slices.Equal(namedIn(req.Topics), []int32{1, 3}) {
		t.Fatalf("after a session error: session %d epoch %d names %v", req.SessionID, req.SessionEpoch, namedIn(req.Topics))
	}
	answer(43, 0)
	build(map[int32]int64{1: 8, 3: 0})
	// FETCH_SESSION_ID_NOT_FOUND (a restarted leader): a full fetch of no session.
	answer(0, kerr.FetchSessionIDNotFound.Code)
	if req = build(map[int32]int64{1: 8, 3: 0}); req.SessionID != 0 || req.SessionEpoch != 0 || len(req.Topics[0].Partitions) != 2 {
		t.Fatalf("after FETCH_SESSION_ID_NOT_FOUND: session %d epoch %d names %v", req.SessionID, req.SessionEpoch, namedIn(req.Topics))
	}
	// No session created: full fetches again.
	answer(0, 0)
	if req = build(map[int32]int64{1: 8, 3: 0}); req.SessionID != 0 || req.SessionEpoch != 0 || len(req.Topics[0].Partitions) != 2 {
		t.Fatalf("after a full fetch got no session: session %d epoch %d", req.SessionID, req.SessionEpoch)
	}
	answer(44, 0)
	build(map[int32]int64{1: 8, 3: 0})
	s.reset() // the request failed, or a new connection
	if req = build(map[int32]int64{1: 8, 3: 0}); req.SessionID != 44 || req.SessionEpoch != 0 || len(req.Topics[0].Partitions) != 2 {
		t.Fatalf("after a failed request: session %d epoch %d names %v", req.SessionID, req.SessionEpoch, namedIn(req.Topics))
	}
	if nextSessionEpoch(1<<31-1) != 1 {
		t.Fatal("epochs wrap to 1")
	}
}

// A partition whose topic is now another id (the topic was re-created under its name)
// is sent again even with the same fetch parameters: the leader's session holds it
// under the old id.
func TestFollowerSessionSendsAPartitionUnderANewTopicID(t *testing.T) {
	var s followerSession
	want := func(id byte) []kmsg.FetchRequestTopic {
		topics := wantFetch(map[int32]int64{0: 0, 1: 0})
		topics[0].TopicID = [16]byte{id}
		return topics
	}
	s.build(kmsg.NewPtrFetchRequest(), want(1))
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID = 42
	s.answered(resp)
	req := kmsg.NewPtrFetchRequest()
	s.buildChanged(req, want(1), nil)
	if len(req.Topics) != 0 {
		t.Fatalf("unchanged partitions sent again: %v", namedIn(req.Topics))
	}
	s.answered(resp)
	req = kmsg.NewPtrFetchRequest()
	s.buildChanged(req, want(2), nil)
	if !slices.Equal(namedIn(req.Topics), []int32{0, 1}) || req.Topics[0].TopicID != [16]byte{2} {
		t.Fatalf("under a new topic id: sent %v of topic id %v, want [0 1] of the new id", namedIn(req.Topics), req.Topics)
	}
}
