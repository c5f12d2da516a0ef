package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOffsetCommitAndFetch(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 1)
	c := h.commit(8, "g", ids[0], gen, map[int32]int64{0: 500, 1: 7})
	if !c.done() || commitCodes(c.resp)[0] != 0 || commitCodes(c.resp)[1] != 0 {
		t.Fatalf("commit %+v", c.resp)
	}
	got := h.fetched("g", 0, 1, 2)
	if got[0] != 500 || got[1] != 7 || got[2] != -1 {
		t.Fatalf("fetched %v", got)
	}
	// Topics nil: every committed partition.
	all := h.s.OffsetFetch("g", nil, false)
	if len(all.Topics) != 1 || len(all.Topics[0].Partitions) != 2 {
		t.Fatalf("fetch all %+v", all)
	}
	// Unknown group: -1 for every partition, no error.
	if got := h.fetched("nope", 0); got[0] != -1 {
		t.Fatalf("unknown group %v", got)
	}
}

func TestOffsetCommitVisibleOnlyWhenCommitted(t *testing.T) {
	h := newHarness(t, testConfig())
	h.commit(8, "g", "", -1, map[int32]int64{0: 1})
	h.hold = true
	c := h.commit(8, "g", "", -1, map[int32]int64{0: 2})
	if c.done() {
		t.Fatal("commit answered before its write was committed")
	}
	if got := h.fetched("g", 0); got[0] != 1 {
		t.Fatalf("uncommitted offset visible: %v", got)
	}
	stable := h.s.OffsetFetch("g", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}, true)
	if stable.Topics[0].Partitions[0].ErrorCode != errUnstableOffsetCommit {
		t.Fatalf("RequireStable %+v", stable)
	}
	h.release(errNotCoordinator)
	if !c.done() || commitCodes(c.resp)[0] != errNotCoordinator {
		t.Fatalf("failed write %+v", c.resp)
	}
	if got := h.fetched("g", 0); got[0] != 1 {
		t.Fatalf("failed write applied: %v", got)
	}
	stable = h.s.OffsetFetch("g", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}, true)
	if stable.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("still unstable after the write %+v", stable)
	}
}

func TestOffsetCommitErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 1)
	for _, tc := range []struct {
		name      string
		version   int16
		group     string
		member    string
		gen       int32
		wantCode  int16
		wantGroup bool // the group exists afterwards
	}{
		{"empty group id", 8, "", "", -1, errInvalidGroupID, false},
		{"simple consumer, new group", 8, "simple", "", -1, 0, true},
		{"simple consumer, v0", 0, "simple0", "", 0, 0, true},
		{"generation on unknown group v8", 8, "ghost", "m", 3, errIllegalGeneration, false},
		{"generation on unknown group v9", 9, "ghost", "m", 3, errGroupIDNotFound, false},
		{"simple consumer on a live group", 8, "g", "", -1, errUnknownMemberID, true},
		{"unknown member", 8, "g", "stranger", gen, errUnknownMemberID, true},
		{"generation from the past", 8, "g", ids[0], gen - 1, errIllegalGeneration, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.commit(tc.version, tc.group, tc.member, tc.gen, map[int32]int64{0: 5})
			if !c.done() || commitCodes(c.resp)[0] != tc.wantCode {
				t.Fatalf("got %+v, want %d", c.resp, tc.wantCode)
			}
			if _, ok := h.s.groups[tc.group]; ok != tc.wantGroup {
				t.Fatalf("group exists: %v", ok)
			}
		})
	}
	// Oversized metadata: that partition only.
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = "g", ids[0], gen
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = "t"
	big, small := strings.Repeat("m", 4097), "ok"
	p0, p1 := kmsg.NewOffsetCommitRequestTopicPartition(), kmsg.NewOffsetCommitRequestTopicPartition()
	p0.Partition, p0.Metadata = 0, &big
	p1.Partition, p1.Metadata, p1.Offset = 1, &small, 9
	tp.Partitions = []kmsg.OffsetCommitRequestTopicPartition{p0, p1}
	req.Topics = []kmsg.OffsetCommitRequestTopic{tp}
	b := &box[kmsg.OffsetCommitResponse]{}
	h.run(h.s.OffsetCommit(h.now, req, kmsg.NewPtrOffsetCommitResponse(), b.send))
	codes := commitCodes(b.resp)
	if codes[0] != errOffsetMetadataTooLarge || codes[1] != 0 {
		t.Fatalf("codes %v", codes)
	}
	if got := h.fetched("g", 0, 1); got[0] != -1 || got[1] != 9 {
		t.Fatalf("fetched %v", got)
	}
}

func TestOffsetCommitKeepsCallerAnswers(t *testing.T) {
	h := newHarness(t, testConfig())
	resp := kmsg.NewPtrOffsetCommitResponse()
	unknown := kmsg.NewOffsetCommitResponseTopic()
	unknown.Topic = "missing"
	unknown.Partitions = []kmsg.OffsetCommitResponseTopicPartition{commitPartition(0, 3)}
	resp.Topics = append(resp.Topics, unknown)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation = "g", -1
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = "t"
	for i := int32(0); i < 20; i++ {
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = i, int64(i)
		tp.Partitions = append(tp.Partitions, p)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{tp}
	b := &box[kmsg.OffsetCommitResponse]{}
	h.writeCode = errCoordinatorNotAvailable
	h.run(h.s.OffsetCommit(h.now, req, resp, b.send))
	if len(b.resp.Topics) != 2 || b.resp.Topics[0].Partitions[0].ErrorCode != 3 {
		t.Fatalf("caller's answers lost: %+v", b.resp.Topics)
	}
	for _, p := range b.resp.Topics[1].Partitions {
		if p.ErrorCode != errCoordinatorNotAvailable {
			t.Fatalf("partition %d code %d", p.Partition, p.ErrorCode)
		}
	}
}

func TestOffsetDelete(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 1) // subscribed to "t"
	h.commit(8, "g", ids[0], gen, map[int32]int64{0: 1})
	del := func(group, topic string, partitions ...int32) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		for _, p := range partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: p})
		}
		req.Topics = []kmsg.OffsetDeleteRequestTopic{rt}
		b := &box[kmsg.OffsetDeleteResponse]{}
		h.run(h.s.OffsetDelete(h.now, req, b.send))
		return b.resp
	}
	if r := del("g", "t", 0); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != errGroupSubscribedToTopic {
		t.Fatalf("subscribed %+v", r)
	}
	if r := del("nope", "t", 0); r.ErrorCode != errGroupIDNotFound {
		t.Fatalf("unknown group %+v", r)
	}
	// An unsubscribed topic's offsets are deleted (simple consumer group).
	h.commit(8, "simple", "", -1, map[int32]int64{0: 4, 1: 5})
	r := del("simple", "t", 0, 7)
	if r.ErrorCode != 0 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete %+v", r)
	}
	if got := h.fetched("simple", 0, 1); got[0] != -1 || got[1] != 5 {
		t.Fatalf("after delete %v", got)
	}
}

func TestExpireOffsets(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsRetention = time.Hour
	h := newHarness(t, cfg)
	// A simple consumer's offsets expire counted from the commit.
	h.commit(8, "simple", "", -1, map[int32]int64{0: 1})
	// A consumer group's offsets expire counted from when it became Empty.
	ids, gen := h.stableGroup("g", 1)
	h.commit(8, "g", ids[0], gen, map[int32]int64{0: 2})
	h.now = h.now.Add(50 * time.Minute) // no timer fires: the member stays alive
	h.heartbeat("g", ids[0], gen)
	h.leave("g", 3, ids[0])
	h.advance(20 * time.Minute)
	h.run(h.s.ExpireOffsets(h.now))
	if _, ok := h.s.groups["simple"]; ok {
		t.Fatal("simple group with expired offsets not removed")
	}
	if got := h.fetched("g", 0); got[0] != 2 {
		t.Fatalf("offsets expired before retention since Empty: %v", got)
	}
	h.advance(41 * time.Minute)
	h.run(h.s.ExpireOffsets(h.now))
	if _, ok := h.s.groups["g"]; ok {
		t.Fatal("empty group with expired offsets not removed")
	}
	// The tombstones are in the log.
	tombstones := 0
	for _, r := range h.log {
		if r.Value == nil {
			tombstones++
		}
	}
	if tombstones != 4 {
		t.Fatalf("%d tombstones, want 4", tombstones)
	}
}

func TestStableGroupOffsetsDoNotExpire(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsRetention = time.Hour
	h := newHarness(t, cfg)
	ids, gen := h.stableGroup("g", 1)
	h.commit(8, "g", ids[0], gen, map[int32]int64{0: 2})
	for i := 0; i < 30; i++ {
		h.advance(5 * time.Second)
		h.heartbeat("g", ids[0], gen)
	}
	h.now = h.now.Add(2 * time.Hour)
	h.heartbeat("g", ids[0], gen)
	h.run(h.s.ExpireOffsets(h.now))
	if got := h.fetched("g", 0); got[0] != 2 {
		t.Fatalf("subscribed offsets expired: %v", got)
	}
}

func TestSimpleGroupNotLeftByFailedCommit(t *testing.T) {
	h := newHarness(t, testConfig())
	h.writeCode = errCoordinatorNotAvailable
	c := h.commit(8, "simple", "", -1, map[int32]int64{0: 1})
	if commitCodes(c.resp)[0] != errCoordinatorNotAvailable {
		t.Fatalf("commit %+v", c.resp)
	}
	if got := h.s.ListGroups(nil, nil); len(got) != 0 {
		t.Fatalf("groups after a failed first commit: %+v", got)
	}
}
