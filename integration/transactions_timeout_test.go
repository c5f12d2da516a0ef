package integration

// Transactional coordinator writes that time out and land afterwards
// (offsets.commit.timeout.ms passes while a follower of the internal partition is cut
// off, as in groups_timeout_test.go): the client is answered COORDINATOR_NOT_AVAILABLE,
// the write stays pending, and once the follower is back the transaction ends as the
// log says, on the live coordinators and on the next ones after a failover.

import (
	"fmt"
	"testing"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnTimeoutOptions: few internal partitions (one of __consumer_offsets), and a short
// write timeout.
func txnTimeoutOptions() []Option {
	return append(groupOptions(), WithProperty("transaction.state.log.num.partitions", "3"),
		WithProperty("offsets.topic.num.partitions", "1"), WithProperty("offsets.commit.timeout.ms", "1000"))
}

// cutOffFollower returns a node that is neither of busy nor the controller when it can
// (the metadata stays quiet while it is cut off).
func cutOffFollower(c *Cluster, busy ...int) int {
	ctrl := c.Controller()
	for _, avoidController := range []bool{true, false} {
		for i := range 3 {
			clash := avoidController && i == ctrl
			for _, b := range busy {
				clash = clash || i == b
			}
			if !clash {
				return i
			}
		}
	}
	c.t.Fatalf("no node is free of %v", busy)
	return -1
}

// commitOnce sends one TxnOffsetCommit of partition 0 and returns its code.
func (x *txnOffsets) commitOnce(gc int, id string, pid int64, epoch int16, offset int64) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, x.group, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = x.topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return x.c.rawTo(x.t, gc).do(testContext(x.t), req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// endOnce sends one EndTxn and returns its code.
func (x *txnOffsets) endOnce(tc int, id string, pid int64, epoch int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return x.c.rawTo(x.t, tc).do(testContext(x.t), req).(*kmsg.EndTxnResponse).ErrorCode
}

// txnState is the state DescribeTransactions gives for id at node tc.
func (x *txnOffsets) txnState(tc int, id string) (string, int16) {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := x.c.rawTo(x.t, tc).do(testContext(x.t), req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 {
		x.t.Fatalf("DescribeTransactions answered %d states", len(resp.TransactionStates))
	}
	return resp.TransactionStates[0].State, resp.TransactionStates[0].ErrorCode
}

// waitTxnState polls id's coordinator (found through via) until it describes state.
func (x *txnOffsets) waitTxnState(via int, id, state string) {
	x.t.Helper()
	testwait.For(x.t, groupWait, func() error {
		tc := txnCoordinatorOf(x.t, x.c, via, id)
		got, code := x.txnState(tc, id)
		if code != 0 || got != state {
			return fmt.Errorf("node-%d describes %q, %v; want %q", tc, got, kerr.ErrorForCode(code), state)
		}
		return nil
	})
}

// A TxnOffsetCommit that times out (COORDINATOR_NOT_AVAILABLE) is still in the log:
// once it lands, the transaction's COMMIT makes its offset the group's, on the live
// group coordinator and on the next one after a failover.
func TestTxnOffsetCommit_TimedOutLandsVisibleAfterCommit(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, txnTimeoutOptions()...)
	x := &txnOffsets{t: t, c: c, group: "txn-late-offsets", topic: "txn-late-offsets-in"}
	c.CreateTopicRF(t, x.topic, 1, 3, nil)
	gc := coordinatorOf(t, c, 0, x.group)
	waitFullISR(t, c, "__consumer_offsets")
	follower := cutOffFollower(c, gc)
	id, tc := x.idAwayFrom("txn-late-offsets", gc, follower)
	init := initTxnProducer(t, c, tc, id, -1, -1)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	x.addOffsets(tc, id, pid, epoch)
	x.commit(gc, id, pid, epoch, 3) // the partition is verified and loaded

	c.Partition(follower)
	if code := x.commitOnce(gc, id, pid, epoch, 42); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("TxnOffsetCommit while the HW stands still: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	c.Heal()
	x.end(tc, id, pid, epoch, true)
	testwait.For(t, groupWait, func() error { // the live coordinator
		offset, code := x.fetch(gc)
		if code != 0 || offset != 42 {
			return fmt.Errorf("node-%d: offset %d, %v; want 42", gc, offset, kerr.ErrorForCode(code))
		}
		return nil
	})

	c.Stop(gc)
	next := coordinatorOf(t, c, follower, x.group)
	if next == gc {
		t.Fatalf("the group coordinator is still the stopped node %d", gc)
	}
	x.waitCommitted(next, 42) // a load replays the late batch and the marker
}

// EndTxn's PrepareCommit (PrepareAbort) times out (COORDINATOR_NOT_AVAILABLE) and lands
// afterwards: meanwhile the retried EndTxn gets CONCURRENT_TRANSACTIONS (the write is
// pending, as in Kafka), then the landed prepare gets its markers and the transaction
// completes as the log says, which the retried EndTxn is answered (NONE) on the live
// coordinator and on the next one after a failover; the group's offset is the
// transaction's (committed) or none (aborted).
func TestTransactionTimedOutPrepareLandsCommitted(t *testing.T) {
	t.Parallel()
	timedOutPrepareLands(t, true)
}

func TestTransactionTimedOutPrepareLandsAborted(t *testing.T) {
	t.Parallel()
	timedOutPrepareLands(t, false)
}

func timedOutPrepareLands(t *testing.T, commit bool) {
	c := StartCluster(t, 3, txnTimeoutOptions()...)
	x := &txnOffsets{t: t, c: c, group: "txn-late-prepare", topic: "txn-late-prepare-in"}
	c.CreateTopicRF(t, x.topic, 1, 3, nil)
	waitFullISR(t, c, "__transaction_state")
	id, tc := x.idAwayFrom("txn-late-prepare", 0, c.Controller())
	gc := coordinatorOf(t, c, tc, x.group)
	init := initTxnProducer(t, c, tc, id, -1, -1)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	x.addOffsets(tc, id, pid, epoch)
	x.commit(gc, id, pid, epoch, 42)
	state, want := "CompleteAbort", int64(-1)
	if commit {
		state, want = "CompleteCommit", 42
	}

	follower := cutOffFollower(c, tc)
	c.Partition(follower)
	if code := x.endOnce(tc, id, pid, epoch, commit); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("EndTxn while the HW stands still: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	if code := x.endOnce(tc, id, pid, epoch, commit); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("EndTxn retried while the prepare is pending: %v, want CONCURRENT_TRANSACTIONS", kerr.ErrorForCode(code))
	}
	if got, _ := x.txnState(tc, id); got != "Ongoing" {
		t.Fatalf("described %q while the prepare is pending, want the committed state Ongoing", got)
	}
	c.Heal()
	x.waitTxnState(tc, id, state) // the landed prepare got its markers
	if code := x.endOnce(tc, id, pid, epoch, commit); code != 0 {
		t.Fatalf("EndTxn retried after the end: %v", kerr.ErrorForCode(code))
	}
	if code := x.endOnce(tc, id, pid, epoch, !commit); code != kerr.InvalidTxnState.Code {
		t.Fatalf("EndTxn the other way after the end: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	x.waitCommitted(tc, want)

	c.Stop(tc)
	next := txnCoordinatorOf(t, c, follower, id)
	if next == tc {
		t.Fatalf("the transaction coordinator is still the stopped node %d", tc)
	}
	x.waitTxnState(next, id, state)
	x.end(next, id, pid, epoch, commit) // the retry still succeeds
	x.waitCommitted(next, want)
}
