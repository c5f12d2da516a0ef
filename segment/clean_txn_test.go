package segment

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnBatch is keyedBatch with the transactional attribute: producer pid's records inside
// a transaction.
func txnBatch(tb testing.TB, recs []kv, pid int64, seq int32) []byte {
	tb.Helper()
	b := keyedBatch(tb, recs, 0, 0, pid, seq)
	attrs := binary.BigEndian.Uint16(b[offsetAttributes:]) | attributeTransactional
	binary.BigEndian.PutUint16(b[offsetAttributes:], attrs)
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
	return b
}

// markerBatch is a control batch ending pid's transaction: COMMIT (type 1) or ABORT (0).
func markerBatch(tb testing.TB, pid int64, commit bool) []byte {
	tb.Helper()
	typ := byte(0)
	if commit {
		typ = 1
	}
	key := []byte{0, 0, 0, typ}                // version 0, type
	value := []byte{0, 0, 0, 0, 0, 0}          // version 0, coordinator epoch 0
	rec := kmsg.Record{Key: key, Value: value} // offset and timestamp delta 0
	body := rec.AppendTo(nil)
	rec.Length = int32(len(body) - 1)
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: attributeTransactional | attributeControl,
		ProducerID: pid, ProducerEpoch: 0, FirstSequence: -1, NumRecords: 1, Records: rec.AppendTo(nil)}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offsetBatchLength:], uint32(len(b)-batchLengthOverhead))
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
	return b
}

// readCommitted reads the log as a read_committed consumer would: records of
// non-transactional batches and of transactions that a COMMIT marker of their producer
// ends, in offset order; control records are not returned. all is every data record
// left in the log, aborted ones included.
func readCommitted(tb testing.TB, l *Log) (committed, all []seen) {
	tb.Helper()
	type batch struct {
		h    BatchHeader
		recs []seen
	}
	var batches []batch
	for _, b := range readAll(tb, l) {
		h, err := ParseBatchHeader(b)
		if err != nil {
			tb.Fatal(err)
		}
		_, recs := decodeBatch(tb, b)
		batches = append(batches, batch{h, recs})
	}
	for i, b := range batches {
		if b.h.Control() {
			continue
		}
		all = append(all, b.recs...)
		visible := !b.h.Transactional()
		if !visible {
			for _, m := range batches[i+1:] {
				if m.h.Control() && m.h.ProducerID == b.h.ProducerID {
					visible = m.h.ControlType == 1
					break
				}
			}
		}
		if visible {
			committed = append(committed, b.recs...)
		}
	}
	return committed, all
}

// lastValue is the value of key's last record in recs, or "" with false.
func lastValue(recs []seen, key string) (string, bool) {
	v, ok := "", false
	for _, r := range recs {
		if r.key == key {
			v, ok = r.value, true
		}
	}
	return v, ok
}

// appendAll appends batches and keeps the transaction index as a partition's owner
// does: an ABORT marker adds its transaction (from its producer's first transactional
// batch since its last marker).
func appendAll(tb testing.TB, l *Log, batches ...[]byte) {
	tb.Helper()
	open := map[int64]int64{}
	for i, b := range batches {
		info, err := l.AppendAsLeader(b, 0)
		if err != nil {
			tb.Fatalf("append %d: %v", i, err)
		}
		h, _ := ParseBatchHeader(b)
		switch {
		case h.Control():
			first, ok := open[h.ProducerID]
			delete(open, h.ProducerID)
			if ok && h.ControlType == controlTypeAbort {
				a := AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: info.FirstOffset, LastStableOffset: info.FirstOffset + 1}
				if err := l.AppendAbortedTxns([]AbortedTxn{a}); err != nil {
					tb.Fatal(err)
				}
			}
		case h.Transactional():
			if _, ok := open[h.ProducerID]; !ok {
				open[h.ProducerID] = info.FirstOffset
			}
		}
	}
}

// cleanWhole seals the active segment and cleans everything.
func cleanWhole(tb testing.TB, l *Log) {
	tb.Helper()
	if err := l.Roll(); err != nil {
		tb.Fatal(err)
	}
	cleanAll(tb, l, 0, l.LogEndOffset(), CleanOptions{MaxMapBytes: 1 << 20, DeleteRetentionMs: 86400000})
}

// An aborted transaction's record of K is newer than K's committed value: the cleaner
// must not let it supersede that value (read_committed consumers would see neither).
// It discards the aborted records and keeps the markers, which still end transactions
// that had batches when the pass began (Kafka's rule: a marker goes only once its
// transaction has no batch left, after its delete horizon).
func TestClean_AbortedTransactionDoesNotSupersedeCommitted(t *testing.T) {
	cfg := smallConfig()
	cfg.Compacted = true
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendAll(t, l,
		keyedBatch(t, []kv{{[]byte("A"), []byte("a1")}}, 0, 0, -1, 0), // 0
		keyedBatch(t, []kv{{[]byte("K"), []byte("v1")}}, 0, 0, -1, 0), // 1
		txnBatch(t, []kv{{[]byte("K"), []byte("v2")}}, 7, 0),          // 2, aborted
		markerBatch(t, 7, false),                                      // 3 ABORT
		keyedBatch(t, []kv{{[]byte("A"), []byte("a2")}}, 0, 0, -1, 0), // 4
		txnBatch(t, []kv{{[]byte("A"), []byte("a3")}}, 8, 0),          // 5, aborted
		markerBatch(t, 8, false),                                      // 6 ABORT
	)
	cleanWhole(t, l)
	checkSegmentFiles(t, dir)
	committed, all := readCommitted(t, l)
	if v, ok := lastValue(committed, "K"); !ok || v != "v1" {
		t.Fatalf("read_committed sees K = %q (present %v), want v1; committed %+v", v, ok, committed)
	}
	if v, ok := lastValue(committed, "A"); !ok || v != "a2" {
		t.Fatalf("read_committed sees A = %q (present %v), want a2; committed %+v", v, ok, committed)
	}
	for _, r := range all {
		if r.value == "a1" {
			t.Fatalf("a1 (offset %d) survived though a2 supersedes it", r.offset)
		}
	}
	for _, r := range all {
		if r.value == "v2" || r.value == "a3" {
			t.Fatalf("aborted record %q (offset %d) survived", r.value, r.offset)
		}
	}
	markers := 0
	for _, b := range readAll(t, l) {
		if h, _ := ParseBatchHeader(b); h.Control() && h.ControlType == 0 {
			markers++
		}
	}
	if markers != 2 {
		t.Fatalf("%d ABORT markers left, want 2", markers)
	}
}

// A committed transactional value of K after a non-transactional one stays K's latest,
// alone and with a later aborted transaction on K: reading the remaining records in
// offset order as read_committed ends with v3.
func TestClean_CommittedTransactionStaysLatest(t *testing.T) {
	for _, abortAfter := range []bool{false, true} {
		cfg := smallConfig()
		cfg.Compacted = true
		l, dir := openTestLog(t, cfg, OpenOptions{})
		appendAll(t, l,
			keyedBatch(t, []kv{{[]byte("K"), []byte("v1")}}, 0, 0, -1, 0),
			keyedBatch(t, []kv{{[]byte("K"), []byte("v2")}}, 0, 0, -1, 0),
			txnBatch(t, []kv{{[]byte("K"), []byte("v3")}, {[]byte("B"), []byte("b1")}}, 7, 0),
			markerBatch(t, 7, true),
		)
		if abortAfter {
			appendAll(t, l, txnBatch(t, []kv{{[]byte("K"), []byte("v4")}}, 8, 0), markerBatch(t, 8, false))
		}
		cleanWhole(t, l)
		checkSegmentFiles(t, dir)
		committed, all := readCommitted(t, l)
		if v, ok := lastValue(committed, "K"); !ok || v != "v3" {
			t.Fatalf("abortAfter=%v: read_committed sees K = %q (present %v), want v3; all %+v", abortAfter, v, ok, all)
		}
		if v, ok := lastValue(committed, "B"); !ok || v != "b1" {
			t.Fatalf("abortAfter=%v: B = %q (present %v), want b1", abortAfter, v, ok)
		}
		for _, r := range all {
			if r.value == "v1" {
				t.Fatalf("abortAfter=%v: v1 survived though v2 supersedes it", abortAfter)
			}
		}
	}
}
