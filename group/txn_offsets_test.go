package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// loggedBatch is one batch of the harness's partition: written records (transactional
// with producer) or a transaction marker.
type loggedBatch struct {
	records  []Record
	producer *Producer
	marker   bool
	pid      int64
	commit   bool
}

func (h *harness) logBatch(e Effects, code int16) {
	if code == 0 {
		h.batches = append(h.batches, loggedBatch{records: e.Records, producer: e.Producer})
	}
}

// marker writes producer pid's transaction marker and replays it, as the runtime does
// once the marker is committed.
func (h *harness) marker(pid int64, commit bool) {
	h.batches = append(h.batches, loggedBatch{marker: true, pid: pid, commit: commit})
	h.s.ReplayMarker(pid, commit)
}

// replayLog loads a new shard from batches, one offset per record and marker.
func replayLog(t testing.TB, batches []loggedBatch) *Shard {
	t.Helper()
	s := NewShard(testConfig())
	offset := int64(0)
	for _, b := range batches {
		if b.marker {
			s.ReplayMarker(b.pid, b.commit)
			offset++
			continue
		}
		pid := int64(-1)
		if b.producer != nil {
			pid = b.producer.ID
		}
		for _, r := range b.records {
			if err := s.ReplayRecord(offset, pid, b.producer != nil, r.Key, r.Value); err != nil {
				t.Fatalf("replay at %d: %v", offset, err)
			}
			offset++
		}
	}
	return s
}

// view is what OffsetFetch shows of group "g", topic "t", partitions 0-3: the committed
// offset and the requireStable code of each.
func view(s *Shard) string {
	parts := []int32{0, 1, 2, 3}
	plain := s.OffsetFetch("g", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: parts}}, false)
	stable := s.OffsetFetch("g", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: parts}}, true)
	out := ""
	for i, p := range plain.Topics[0].Partitions {
		out += fmt.Sprintf("%d:%d/%d ", p.Partition, p.Offset, stable.Topics[0].Partitions[i].ErrorCode)
	}
	return out
}

func (h *harness) txnCommit(groupID string, pid int64, offsets map[int32]int64) *box[kmsg.TxnOffsetCommitResponse] {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = groupID, pid, 3, -1
	topic := kmsg.NewTxnOffsetCommitRequestTopic()
	topic.Topic = "t"
	for p, o := range offsets {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		topic.Partitions = append(topic.Partitions, rp)
	}
	req.Topics = append(req.Topics, topic)
	b := &box[kmsg.TxnOffsetCommitResponse]{}
	h.run(h.s.TxnOffsetCommit(h.now, req, kmsg.NewPtrTxnOffsetCommitResponse(), b.send))
	return b
}

// Transactional offsets are written at once as a transactional batch of the producer,
// stay invisible (unstable) until the marker, which writes nothing more: COMMIT
// materialises them, ABORT drops them.
func TestTxnOffsetCommitAppliedOnMarker(t *testing.T) {
	h := newHarness(t, testConfig())
	if r := h.txnCommit("g", 7, map[int32]int64{0: 10}); !r.done() || r.resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit: %+v", r.resp)
	}
	last := h.batches[len(h.batches)-1]
	if last.producer == nil || last.producer.ID != 7 || last.producer.Epoch != 3 || len(last.records) != 1 {
		t.Fatalf("the write is not one transactional batch of producer 7 epoch 3: %+v", last)
	}
	if got := view(h.s); got != "0:-1/88 1:-1/0 2:-1/0 3:-1/0 " {
		t.Fatalf("pending offset: %s", got)
	}
	writes := len(h.log)
	h.marker(7, true)
	if got := view(h.s); got != "0:10/0 1:-1/0 2:-1/0 3:-1/0 " || len(h.log) != writes {
		t.Fatalf("after COMMIT: %s, %d writes", got, len(h.log)-writes)
	}
	h.txnCommit("g", 7, map[int32]int64{0: 20})
	h.marker(7, false)
	if got := view(h.s); got != "0:10/0 1:-1/0 2:-1/0 3:-1/0 " {
		t.Fatalf("after ABORT: %s", got)
	}
	if got := view(replayLog(t, h.batches)); got != view(h.s) {
		t.Fatalf("replayed %s, live %s", got, view(h.s))
	}
}

// A failed write is answered with its code and leaves nothing pending.
func TestTxnOffsetCommitFailedWriteStagesNothing(t *testing.T) {
	h := newHarness(t, testConfig())
	h.writeCode = kerr.CoordinatorNotAvailable.Code
	if r := h.txnCommit("g", 7, map[int32]int64{0: 10}); !r.done() || r.resp.Topics[0].Partitions[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("TxnOffsetCommit: %+v", r.resp)
	}
	h.writeCode = 0
	h.marker(7, true)
	if got := view(h.s); got != "0:-1/0 1:-1/0 2:-1/0 3:-1/0 " {
		t.Fatalf("after a failed write and COMMIT: %s", got)
	}
}

// The answer waits for the write (acks=all): while it is held, nothing is answered.
func TestTxnOffsetCommitAnswersAfterTheWrite(t *testing.T) {
	h := newHarness(t, testConfig())
	h.hold = true
	r := h.txnCommit("g", 7, map[int32]int64{0: 10})
	if r.done() {
		t.Fatal("answered before the write completed")
	}
	h.release(0)
	if !r.done() || r.resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("after the write: %+v", r.resp)
	}
}

// Live writes interleaving two producers and ordinary commits end in the state a load
// of the same log rebuilds, marker by marker.
func TestTxnOffsetsLiveMatchesReplay(t *testing.T) {
	h := newHarness(t, testConfig())
	check := func(step string) {
		t.Helper()
		if got, want := view(replayLog(t, h.batches)), view(h.s); got != want {
			t.Fatalf("%s: replayed %s, live %s", step, got, want)
		}
	}
	h.commit(2, "g", "", -1, map[int32]int64{0: 1, 1: 1, 2: 1})
	h.txnCommit("g", 7, map[int32]int64{0: 10, 1: 10})
	h.txnCommit("g", 8, map[int32]int64{1: 20, 2: 20})
	check("two open transactions")
	h.commit(2, "g", "", -1, map[int32]int64{2: 5}) // later than producer 8's: it wins
	h.marker(8, true)
	check("producer 8 committed")
	h.marker(7, false)
	check("producer 7 aborted")
	h.txnCommit("g", 7, map[int32]int64{3: 30})
	check("producer 7 pending at the log end")
	if got := view(h.s); got != "0:1/0 1:20/0 2:5/0 3:-1/88 " {
		t.Fatalf("final state %s", got)
	}
}

// Loads of logs with transactional batches and markers in various orders.
func TestReplayTransactionalOffsets(t *testing.T) {
	commit := func(p int32, o int64) []Record {
		return []Record{offsetCommitRecord("g", topicPartition{"t", p}, offsetValue{offset: o, leaderEpoch: -1, expireTimestampMs: -1})}
	}
	tombstone := func(p int32) []Record { return []Record{offsetCommitTombstone("g", topicPartition{"t", p})} }
	plain := func(recs []Record) loggedBatch { return loggedBatch{records: recs} }
	txnal := func(pid int64, recs []Record) loggedBatch {
		return loggedBatch{records: recs, producer: &Producer{ID: pid}}
	}
	mark := func(pid int64, c bool) loggedBatch { return loggedBatch{marker: true, pid: pid, commit: c} }
	for _, tc := range []struct {
		name string
		log  []loggedBatch
		want string
	}{
		{"committed", []loggedBatch{plain(commit(0, 5)), txnal(7, commit(0, 10)), mark(7, true)}, "0:10/0 1:-1/0 2:-1/0 3:-1/0 "},
		{"aborted", []loggedBatch{plain(commit(0, 5)), txnal(7, commit(0, 10)), mark(7, false)}, "0:5/0 1:-1/0 2:-1/0 3:-1/0 "},
		{"pending at the log end", []loggedBatch{plain(commit(0, 5)), txnal(7, commit(0, 10))}, "0:5/88 1:-1/0 2:-1/0 3:-1/0 "},
		{"later ordinary commit wins", []loggedBatch{txnal(7, commit(0, 10)), plain(commit(0, 7)), mark(7, true)}, "0:7/0 1:-1/0 2:-1/0 3:-1/0 "},
		{"ordinary commit after the marker", []loggedBatch{txnal(7, commit(0, 10)), mark(7, true), plain(commit(0, 7))}, "0:7/0 1:-1/0 2:-1/0 3:-1/0 "},
		{"interleaved producers", []loggedBatch{txnal(7, commit(0, 10)), txnal(8, commit(1, 20)), mark(7, false), txnal(8, commit(0, 21)), mark(8, true)},
			"0:21/0 1:20/0 2:-1/0 3:-1/0 "},
		{"earlier record of a later commit loses", []loggedBatch{txnal(7, commit(0, 10)), txnal(8, commit(0, 20)), mark(8, true), mark(7, true)},
			"0:20/0 1:-1/0 2:-1/0 3:-1/0 "},
		{"tombstone drops the pending offset", []loggedBatch{txnal(7, commit(0, 10)), plain(tombstone(0)), mark(7, true)}, "0:-1/0 1:-1/0 2:-1/0 3:-1/0 "},
		{"marker without offsets", []loggedBatch{plain(commit(0, 5)), mark(9, true), mark(9, false)}, "0:5/0 1:-1/0 2:-1/0 3:-1/0 "},
		{"one producer, two transactions", []loggedBatch{txnal(7, commit(0, 10)), mark(7, true), txnal(7, commit(0, 11)), txnal(7, commit(1, 12))},
			"0:10/88 1:-1/88 2:-1/0 3:-1/0 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := view(replayLog(t, tc.log)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// DeleteGroups drops the group's pending transactional offsets with the group: a later
// COMMIT materialises nothing, live and replayed alike.
func TestDeleteGroupDropsPendingTxnOffsets(t *testing.T) {
	h := newHarness(t, testConfig())
	h.txnCommit("g", 7, map[int32]int64{0: 10})
	var code int16 = -1
	h.run(h.s.DeleteGroup(h.now, "g", func(c int16) { code = c }))
	if code != 0 {
		t.Fatalf("DeleteGroups: %d", code)
	}
	h.marker(7, true)
	if got := view(h.s); got != "0:-1/0 1:-1/0 2:-1/0 3:-1/0 " {
		t.Fatalf("after delete and COMMIT: %s", got)
	}
	if got := view(replayLog(t, h.batches)); got != view(h.s) {
		t.Fatalf("replayed %s, live %s", got, view(h.s))
	}
}

// FuzzTxnOffsetsLiveMatchesReplay drives a shard with an arbitrary sequence of
// ordinary and transactional commits of two producers, their markers, deletions and
// failed writes: nothing panics, the pending counts match the pending offsets, and a
// load of the log written gives what the live shard shows.
func FuzzTxnOffsetsLiveMatchesReplay(f *testing.F) {
	f.Add([]byte{1, 0, 2, 1, 3, 4, 0, 5})
	f.Add([]byte{1, 2, 0, 6, 3, 7, 1, 4, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		h := newHarness(t, testConfig())
		for i, op := range ops {
			if i >= 64 {
				break
			}
			p, pid := int32(op>>4)&3, int64(7+(op>>6)&1)
			switch op & 7 {
			case 0:
				h.commit(2, "g", "", -1, map[int32]int64{p: int64(i)})
			case 1, 2:
				h.txnCommit("g", pid, map[int32]int64{p: int64(100 + i)})
			case 3:
				h.marker(pid, true)
			case 4:
				h.marker(pid, false)
			case 5:
				h.run(h.s.DeleteGroup(h.now, "g", func(int16) {}))
			case 6:
				h.writeCode = kerr.CoordinatorNotAvailable.Code
				h.txnCommit("g", pid, map[int32]int64{p: int64(200 + i)})
				h.writeCode = 0
			case 7:
				h.marker(9, op&8 != 0)
			}
		}
		if g := h.s.groups["g"]; g != nil {
			want := map[topicPartition]int{}
			for _, byGroup := range h.s.txnOffsets {
				for tp := range byGroup["g"] {
					want[tp]++
				}
			}
			if fmt.Sprint(want) != fmt.Sprint(g.pendingOffsets) {
				t.Fatalf("pending counts %v, pending offsets %v", g.pendingOffsets, want)
			}
		}
		if got, want := view(replayLog(t, h.batches)), view(h.s); got != want {
			t.Fatalf("replayed %s, live %s", got, want)
		}
	})
}

// txnCommitAs sends TxnOffsetCommit at version with the given member fields (v3+ carry
// them; older versions have none) for partition 0 of topic t, and returns its code.
func (h *harness) txnCommitAs(version int16, groupID, memberID string, generation int32, pid int64) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = version
	req.Group, req.ProducerID, req.ProducerEpoch = groupID, pid, 3
	req.MemberID, req.Generation = memberID, generation
	topic := kmsg.NewTxnOffsetCommitRequestTopic()
	topic.Topic = "t"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 42
	topic.Partitions = append(topic.Partitions, rp)
	req.Topics = append(req.Topics, topic)
	b := &box[kmsg.TxnOffsetCommitResponse]{}
	h.run(h.s.TxnOffsetCommit(h.now, req, kmsg.NewPtrTxnOffsetCommitResponse(), b.send))
	if !b.done() {
		h.t.Fatal("TxnOffsetCommit not answered")
	}
	return b.resp.Topics[0].Partitions[0].ErrorCode
}

// TestTxnOffsetCommitValidation is Kafka's rule for transactional commits
// (ClassicGroup.validateOffsetCommit with isTransactional, and
// OffsetMetadataManager.validateTransactionalOffsetCommit): a commit without a member
// id, generation or instance id (every v0-2 request, and v3 with generation -1: Java's
// sendOffsetsToTransaction(offsets, groupId), sarama's AddMessageToTxn) is accepted in
// every state of a live group, not UNKNOWN_MEMBER_ID; one naming a member is checked
// as OffsetCommit is, except that CompletingRebalance does not refuse it; a named
// generation of a group that does not exist is ILLEGAL_GENERATION. An accepted commit
// leaves the group's state alone and its offset is committed by the COMMIT marker.
func TestTxnOffsetCommitValidation(t *testing.T) {
	type setup func(h *harness) (member string, generation int32)
	states := map[string]setup{
		"none": func(h *harness) (string, int32) { return "", 1 },
		"Empty": func(h *harness) (string, int32) {
			h.commit(8, "g", "", -1, map[int32]int64{1: 1})
			return "", 0
		},
		"PreparingRebalance": func(h *harness) (string, int32) {
			ids, gen := h.stableGroup("g", 2)
			h.join("g", ids[0])
			return ids[1], gen
		},
		"CompletingRebalance": func(h *harness) (string, int32) {
			h.join("g", "")
			b := h.join("g", "")
			h.advance(0)
			return b.resp.MemberID, b.resp.Generation
		},
		"Stable": func(h *harness) (string, int32) {
			ids, gen := h.stableGroup("g", 2)
			return ids[1], gen
		},
	}
	type request struct {
		version int16
		member  bool  // the state's member id, else none
		gen     int32 // added to the state's generation, or -1 for none
	}
	anonymous := []request{{0, false, -1}, {1, false, -1}, {2, false, -1}, {3, false, -1}}
	for _, tc := range []struct {
		state string
		reqs  []request
		want  int16
	}{
		{"none", anonymous, 0},
		{"Empty", anonymous, 0},
		{"PreparingRebalance", anonymous, 0},
		{"CompletingRebalance", anonymous, 0},
		{"Stable", anonymous, 0},
		{"none", []request{{3, false, 0}}, errIllegalGeneration},
		{"PreparingRebalance", []request{{3, true, 0}}, 0},
		{"CompletingRebalance", []request{{3, true, 0}}, 0},
		{"Stable", []request{{3, true, 0}}, 0},
		{"Stable", []request{{3, true, -100}}, errIllegalGeneration}, // an older generation
		{"Stable", []request{{3, false, 0}}, errUnknownMemberID},     // a generation without a member
		{"CompletingRebalance", []request{{3, false, 0}}, errUnknownMemberID},
	} {
		for _, r := range tc.reqs {
			name := fmt.Sprintf("%s/v%d/member=%v/gen%+d", tc.state, r.version, r.member, r.gen)
			t.Run(name, func(t *testing.T) {
				h := newHarness(t, testConfig())
				member, gen := states[tc.state](h)
				before := h.state("g")
				if !r.member {
					member = ""
				}
				switch {
				case r.gen == -1:
					gen = -1
				case r.gen == -100:
					gen--
				}
				if got := h.txnCommitAs(r.version, "g", member, gen, 7); got != tc.want {
					t.Fatalf("code %d (%v), want %d (%v)", got, kerr.ErrorForCode(got), tc.want, kerr.ErrorForCode(tc.want))
				}
				if after := h.state("g"); after != before && !(tc.state == "none" && tc.want == 0) {
					t.Fatalf("state %s after the commit, was %s", after, before)
				}
				if tc.want != 0 {
					return
				}
				h.marker(7, true)
				if got := h.fetched("g", 0)[0]; got != 42 {
					t.Fatalf("offset %d after COMMIT, want 42", got)
				}
			})
		}
	}
}
