package integration

// KIP-890 part 1: the partition leader verifies with the transaction coordinator that
// a transactional batch belongs to an ongoing transaction that added the partition.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transactionalRawBatch is idempotentBatch with the transactional attribute.
func transactionalRawBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	b := idempotentBatch(pid, epoch, seq, values...)
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|0x10)
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestTransactionVerificationKIP890(t *testing.T) {
	t.Parallel()
	const topic, id = "txn-verify", "txn-verify-producer"
	c, coord, pid, epoch := txnProducerOnThreeNodes(t, topic, id)
	// KIP-890 part 1 (Transactions V1): a late produce at the committed epoch; under V2
	// the epoch is bumped and it is INVALID_PRODUCER_EPOCH (transactions_v2_test.go).
	downgradeTransactionVersion(t, c, 1)
	view := c.WaitConverged().Topics[topic]
	// remote has a leader other than the coordinator (the verification is a network
	// call) when there is one; local is the coordinator's own partition when it leads one.
	remote, local := int32(0), int32(-1)
	for _, p := range view.Partitions {
		if int(p.Leader) != coord {
			remote = p.ID
		} else {
			local = p.ID
		}
	}
	produce := func(version int16, p int32, txnID *string, batch []byte) int16 {
		t.Helper()
		req := produceRequest(version, -1, topic, p, batch)
		req.TransactionID = txnID
		resp, err := requestAt(testContext(t), c, int(view.Partitions[p].Leader), req)
		if err != nil {
			t.Fatal(err)
		}
		return produceResult(t, resp).ErrorCode
	}
	raw := c.rawTo(t, coord)
	add := func(ps ...int32) {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, ps
		req.Topics = append(req.Topics, rt)
		kresp, err := raw.cl.Request(testContext(t), req)
		if err != nil {
			t.Fatalf("AddPartitionsToTxn: %v", err)
		}
		for _, rp := range kresp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("AddPartitionsToTxn %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	endTxn := func(commit bool) {
		t.Helper()
		testwait.For(t, groupWait, func() error {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
			if code := raw.do(testContext(t), req).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
				return fmt.Errorf("EndTxn: %v", kerr.ErrorForCode(code))
			}
			return nil
		})
	}
	txnID := func() *string { s := id; return &s }()

	// Never added: refused before anything is written, with the code of the version.
	if code := produce(10, remote, txnID, transactionalRawBatch(pid, epoch, 0, "x")); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce v10 to a partition not in the transaction: %v", kerr.ErrorForCode(code))
	}
	if code := produce(11, remote, txnID, transactionalRawBatch(pid, epoch, 0, "x")); code != kerr.TransactionAbortable.Code {
		t.Fatalf("produce v11 to a partition not in the transaction: %v", kerr.ErrorForCode(code))
	}
	if code := produce(11, remote, nil, transactionalRawBatch(pid, epoch, 0, "x")); code != kerr.InvalidTxnState.Code {
		t.Fatalf("transactional batch without a transactional id: %v", kerr.ErrorForCode(code))
	}

	// Added: the first batch is verified, the next needs no round trip.
	parts := []int32{remote}
	if local >= 0 {
		parts = append(parts, local)
	}
	add(parts...)
	for _, p := range parts {
		for seq := range int32(2) {
			if code := produce(11, p, txnID, transactionalRawBatch(pid, epoch, seq, fmt.Sprintf("committed-%d-%d", p, seq))); code != 0 {
				t.Fatalf("produce %d to %s-%d in the transaction: %v", seq, topic, p, kerr.ErrorForCode(code))
			}
		}
	}
	endTxn(true)
	testwait.For(t, groupWait, func() error {
		if m := readTxnMarkers(t, c, topic, remote); len(m) != 1 {
			return fmt.Errorf("markers %+v", m)
		}
		return nil
	})

	// A late write of the committed transaction (same producer epoch, the next
	// sequence) finds it finished and is refused, so it cannot land in a later one.
	testwait.For(t, groupWait, func() error {
		code := produce(10, remote, txnID, transactionalRawBatch(pid, epoch, 2, "late"))
		if code == kerr.NotEnoughReplicas.Code { // the coordinator still completing the commit
			return fmt.Errorf("late produce: %v", kerr.ErrorForCode(code))
		}
		if code != kerr.InvalidTxnState.Code {
			t.Fatalf("late produce after the commit: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	// Two records and the marker: nothing refused was written.
	ends, err := c.Admin(t).ListEndOffsets(testContext(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, remote); o.Offset != 3 {
		t.Fatalf("%s-%d ends at %d, want 3 (two records and the commit marker)", topic, remote, o.Offset)
	}
	got := consumeTxnTopic(t, c, topic, kgo.ReadUncommitted(), 2*len(parts))
	if len(got) != 2*len(parts) {
		t.Fatalf("read %v, want the %d committed records", got, 2*len(parts))
	}
	for _, v := range got {
		if v == "late" || v == "x" {
			t.Fatalf("a refused batch was written: %q in %v", v, got)
		}
	}
}
