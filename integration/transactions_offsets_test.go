package integration

import (
	"fmt"
	"testing"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOffsets drives a transaction that only commits a group's offsets, with raw
// requests to chosen nodes (InitProducerId, AddOffsetsToTxn and EndTxn to the
// transaction coordinator, TxnOffsetCommit and OffsetFetch to the group coordinator).
type txnOffsets struct {
	t            *testing.T
	c            *Cluster
	group, topic string
}

// txnOffsetsRetriable reports the codes the helpers retry, as clients do.
func txnOffsetsRetriable(code int16) bool {
	switch code {
	case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code,
		kerr.ConcurrentTransactions.Code:
		return true
	}
	return false
}

// idAwayFrom returns a transactional id whose coordinator is neither of avoid, and
// that coordinator.
func (x *txnOffsets) idAwayFrom(prefix string, via int, avoid ...int) (string, int) {
	for i := range 30 {
		id := fmt.Sprintf("%s-%d", prefix, i)
		tc := txnCoordinatorOf(x.t, x.c, via, id)
		clash := false
		for _, a := range avoid {
			clash = clash || tc == a
		}
		if !clash {
			return id, tc
		}
	}
	x.t.Fatalf("no transactional id of prefix %s avoids nodes %v", prefix, avoid)
	return "", -1
}

func (x *txnOffsets) addOffsets(tc int, id string, pid int64, epoch int16) {
	raw := x.c.rawTo(x.t, tc)
	testwait.For(x.t, groupWait, func() error {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, x.group
		code := raw.do(testContext(x.t), req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
		if txnOffsetsRetriable(code) {
			return fmt.Errorf("AddOffsetsToTxn: %v", kerr.ErrorForCode(code))
		}
		if code != 0 {
			x.t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
}

func (x *txnOffsets) commit(gc int, id string, pid int64, epoch int16, offset int64) {
	if code := x.commitCode(gc, id, pid, epoch, offset); code != 0 {
		x.t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
	}
}

// commitCode sends TxnOffsetCommit for partition 0 until it gets a code that is not
// retriable, and returns it.
func (x *txnOffsets) commitCode(gc int, id string, pid int64, epoch int16, offset int64) int16 {
	raw := x.c.rawTo(x.t, gc)
	var out int16
	testwait.For(x.t, groupWait, func() error {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 3
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, x.group, pid, epoch, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = x.topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		out = raw.do(testContext(x.t), req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		if txnOffsetsRetriable(out) {
			return fmt.Errorf("TxnOffsetCommit: %v", kerr.ErrorForCode(out))
		}
		return nil
	})
	return out
}

func (x *txnOffsets) end(tc int, id string, pid int64, epoch int16, commit bool) {
	raw := x.c.rawTo(x.t, tc)
	testwait.For(x.t, groupWait, func() error {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
		code := raw.do(testContext(x.t), req).(*kmsg.EndTxnResponse).ErrorCode
		if txnOffsetsRetriable(code) {
			return fmt.Errorf("EndTxn: %v", kerr.ErrorForCode(code))
		}
		if code != 0 {
			x.t.Fatalf("EndTxn: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
}

// fetch is OffsetFetch (v8+, one group) with require_stable of partition 0 from node:
// the offset and the partition's code.
func (x *txnOffsets) fetch(node int) (int64, int16) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = x.group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = x.topic, []int32{0}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp := x.c.rawTo(x.t, node).do(testContext(x.t), req).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 1 {
		x.t.Fatalf("OffsetFetch answered %d groups", len(resp.Groups))
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || len(g.Topics) == 0 || len(g.Topics[0].Partitions) == 0 {
		return -1, g.ErrorCode
	}
	p := g.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// waitCommitted polls the group's coordinator (found through via) until it answers
// want for partition 0, stable.
func (x *txnOffsets) waitCommitted(via int, want int64) {
	testwait.For(x.t, groupWait, func() error {
		gc := coordinatorOf(x.t, x.c, via, x.group)
		offset, code := x.fetch(gc)
		if code != 0 || offset != want {
			return fmt.Errorf("node-%d: offset %d, %v; want %d", gc, offset, kerr.ErrorForCode(code), want)
		}
		return nil
	})
}

// The group coordinator stops between TxnOffsetCommit and EndTxn: the new coordinator
// rebuilds the pending offsets from __consumer_offsets, so the COMMIT marker
// materialises them and an ABORT leaves the previous offset; the committed offsets
// survive a further restart (a load that replays the transactional batches and
// markers).
func TestTxnOffsetCommitSurvivesGroupCoordinatorFailover(t *testing.T) {
	t.Parallel()
	opts := append(append(txnOptions(), groupOptions()...), WithProperty("offsets.topic.num.partitions", "3"))
	c := StartCluster(t, 3, opts...)
	// Transactions V1: AddOffsetsToTxn first (V2's implicit add is transactions_v2_kgo_test.go's).
	downgradeTransactionVersion(t, c, 1)
	x := &txnOffsets{t: t, c: c, group: "txn-offsets-group", topic: "txn-offsets-in"}
	c.CreateTopicRF(t, x.topic, 1, 3, nil)
	other := func(not int) int { return (not + 1) % 3 }

	// An ordinary commit first: the offset an abort must leave.
	gc := coordinatorOf(t, c, 0, x.group)
	testwait.For(t, groupWait, func() error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = x.group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = x.topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		code := c.rawTo(t, gc).do(testContext(t), req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		if code != 0 {
			return fmt.Errorf("OffsetCommit: %v", kerr.ErrorForCode(code))
		}
		return nil
	})

	// COMMIT after a failover.
	id, tc := x.idAwayFrom("txn-offsets-a", other(gc), gc)
	init := initTxnProducer(t, c, tc, id, -1, -1)
	// KIP-890: the partition is verified with the transaction coordinator first.
	if code := x.commitCode(gc, id, init.ProducerID, init.ProducerEpoch, 1); code != kerr.InvalidTxnState.Code {
		t.Fatalf("TxnOffsetCommit before AddOffsetsToTxn: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if code := x.commitCode(gc, id, init.ProducerID+1000, 0, 1); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("TxnOffsetCommit of another producer id: %v, want INVALID_PRODUCER_ID_MAPPING", kerr.ErrorForCode(code))
	}
	x.addOffsets(tc, id, init.ProducerID, init.ProducerEpoch)
	x.commit(gc, id, init.ProducerID, init.ProducerEpoch, 42)
	if offset, code := x.fetch(gc); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable while the transaction is open: offset %d, %v", offset, kerr.ErrorForCode(code))
	}
	// Stopping a coordinator moves its partitions only once their followers are back
	// in sync (no unclean election): wait for that before each stop.
	waitFullISR(t, c, "__consumer_offsets", "__transaction_state")
	c.Stop(gc)
	gc2 := coordinatorOf(t, c, tc, x.group)
	if offset, code := x.fetch(gc2); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("new coordinator node-%d, before EndTxn: offset %d, %v, want UNSTABLE_OFFSET_COMMIT", gc2, offset, kerr.ErrorForCode(code))
	}
	x.end(tc, id, init.ProducerID, init.ProducerEpoch, true)
	x.waitCommitted(tc, 42)
	c.Restart(gc)

	// ABORT after a failover.
	gc3 := coordinatorOf(t, c, 0, x.group)
	id2, tc2 := x.idAwayFrom("txn-offsets-b", other(gc3), gc3)
	init2 := initTxnProducer(t, c, tc2, id2, -1, -1)
	x.addOffsets(tc2, id2, init2.ProducerID, init2.ProducerEpoch)
	x.commit(gc3, id2, init2.ProducerID, init2.ProducerEpoch, 77)
	waitFullISR(t, c, "__consumer_offsets", "__transaction_state")
	c.Stop(gc3)
	x.end(tc2, id2, init2.ProducerID, init2.ProducerEpoch, false)
	x.waitCommitted(tc2, 42)
	c.Restart(gc3)

	// The committed offsets survive a restart of the coordinator: every replica that
	// loads the partition replays the same transactional batches and markers.
	gc4 := coordinatorOf(t, c, 0, x.group)
	waitFullISR(t, c, "__consumer_offsets", "__transaction_state")
	c.Stop(gc4)
	x.waitCommitted(other(gc4), 42)
	c.Restart(gc4)
	x.waitCommitted(gc4, 42)
}
