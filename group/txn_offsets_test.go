package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) txnCommit(groupID string, pid int64, offsets map[int32]int64) *box[kmsg.TxnOffsetCommitResponse] {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.Group, req.ProducerID, req.Generation = groupID, pid, -1
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

// Transactional offsets stay invisible (unstable) until the marker: COMMIT writes and
// applies them, ABORT drops them.
func TestTxnOffsetCommitAppliedOnMarker(t *testing.T) {
	h := newHarness(t, testConfig())
	if r := h.txnCommit("g", 7, map[int32]int64{0: 10}); !r.done() || r.resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit: %+v", r.resp)
	}
	if got := h.fetched("g", 0); got[0] != -1 {
		t.Fatalf("staged offset visible: %v", got)
	}
	stable := h.s.OffsetFetch("g", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}, true)
	if code := stable.Topics[0].Partitions[0].ErrorCode; code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("requireStable with a staged offset: %d", code)
	}
	code := int16(-1)
	h.run(h.s.CompleteTransaction(h.now, 7, true, func(c int16) { code = c }))
	if code != 0 || h.fetched("g", 0)[0] != 10 {
		t.Fatalf("after COMMIT: code %d, offsets %v", code, h.fetched("g", 0))
	}
	writes := len(h.log)
	h.txnCommit("g", 7, map[int32]int64{0: 20})
	h.run(h.s.CompleteTransaction(h.now, 7, false, func(c int16) { code = c }))
	if code != 0 || h.fetched("g", 0)[0] != 10 || len(h.log) != writes {
		t.Fatalf("after ABORT: code %d, offsets %v, %d writes", code, h.fetched("g", 0), len(h.log)-writes)
	}
	stable = h.s.OffsetFetch("g", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}, true)
	if code := stable.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("requireStable after the marker: %d", code)
	}
}
