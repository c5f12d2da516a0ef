package integration

// Transactions V2 (KIP-890 part 2) under transaction.version 2: EndTxn v5 bumps the
// epoch, Produce v12 adds partitions implicitly, a zombie of the ended transaction is
// fenced; TV1 clients keep their rules on the same cluster.

import (
	"fmt"
	"testing"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// downgradeTransactionVersion finalizes transaction.version level, below a new
// cluster's 2, through UpdateFeatures (a safe downgrade).
func downgradeTransactionVersion(t *testing.T, c *Cluster, level int16) {
	t.Helper()
	resp := updateFeatures(testContext(t), t, c, 0, 1, false, featureUpdate(metadata.FeatureTransactionVersion, level, 2))
	if resp.ErrorCode != 0 {
		t.Fatalf("transaction.version to %d: %v %v", level, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
}

// endTxnV5 sends EndTxn v5 to node, retrying CONCURRENT_TRANSACTIONS and the coordinator
// errors, and returns the answer.
func endTxnV5(t *testing.T, c *Cluster, node int, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	t.Helper()
	var out *kmsg.EndTxnResponse
	testwait.For(t, groupWait, func() error {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = 5
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
		resp, err := requestAt(testContext(t), c, node, req)
		if err != nil {
			return err
		}
		out = resp.(*kmsg.EndTxnResponse)
		switch out.ErrorCode {
		case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code:
			return fmt.Errorf("EndTxn: %v", kerr.ErrorForCode(out.ErrorCode))
		}
		return nil
	})
	return out
}

// txnProducerOnThreeNodes starts three nodes with topic (3 partitions, RF 3) and a
// producer of id initialized at its coordinator.
func txnProducerOnThreeNodes(t *testing.T, topic, id string) (c *Cluster, coord int, pid int64, epoch int16) {
	t.Helper()
	c = StartCluster(t, 3, txnOptions()...)
	c.CreateTopicRF(t, topic, 3, 3, nil)
	coord = txnCoordinatorOf(t, c, 0, id)
	init := initTxnProducer(t, c, coord, id, -1, -1)
	return c, coord, init.ProducerID, init.ProducerEpoch
}

func TestTransactionsV2ZombieFenced(t *testing.T) {
	t.Parallel()
	const topic, id = "txn-v2-zombie", "txn-v2-zombie-producer"
	c, coord, pid, epoch := txnProducerOnThreeNodes(t, topic, id)
	view := c.WaitConverged().Topics[topic]
	txnID := id
	// produce sends a Produce v12 of one transactional batch, retrying the retriable
	// answers (NOT_ENOUGH_REPLICAS while the previous transaction's markers are written).
	produce := func(p int32, epoch int16, seq int32, value string) int16 {
		t.Helper()
		var code int16
		testwait.For(t, groupWait, func() error {
			req := produceRequest(12, -1, topic, p, transactionalRawBatch(pid, epoch, seq, value))
			req.TransactionID = &txnID
			resp, err := requestAt(testContext(t), c, int(view.Partitions[p].Leader), req)
			if err != nil {
				return err
			}
			code = produceResult(t, resp).ErrorCode
			if code == kerr.NotEnoughReplicas.Code || code == kerr.NotLeaderForPartition.Code {
				return fmt.Errorf("produce: %v", kerr.ErrorForCode(code))
			}
			return nil
		})
		return code
	}
	// No AddPartitionsToTxn: Produce v12 adds the partitions, local and remote to the
	// coordinator alike.
	for p := range int32(3) {
		if code := produce(p, epoch, 0, fmt.Sprintf("first-%d", p)); code != 0 {
			t.Fatalf("implicit add of partition %d: %v", p, kerr.ErrorForCode(code))
		}
	}
	end := endTxnV5(t, c, coord, id, pid, epoch, true)
	if end.ErrorCode != 0 || end.ProducerID != pid || end.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5 = %v %d/%d, want %d/%d", kerr.ErrorForCode(end.ErrorCode), end.ProducerID, end.ProducerEpoch, pid, epoch+1)
	}
	for p := range int32(3) {
		testwait.For(t, groupWait, func() error {
			ms := readTxnMarkers(t, c, topic, p)
			if len(ms) != 1 || ms[0].epoch != epoch+1 || !ms[0].commit {
				return fmt.Errorf("partition %d markers %+v, want one COMMIT at epoch %d", p, ms, epoch+1)
			}
			return nil
		})
	}
	// The zombie: the old epoch cannot write into the next transaction, in a partition
	// of the ended transaction (the marker's epoch fences it) nor in a new one (the
	// coordinator refuses the add).
	if code := produce(0, epoch, 1, "zombie"); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie produce to a marked partition: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	next := epoch + 1
	if code := produce(1, next, 0, "second-1"); code != 0 {
		t.Fatalf("produce at the new epoch: %v", kerr.ErrorForCode(code))
	}
	if code := produce(2, epoch, 1, "zombie"); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie produce to a partition of the new transaction: %v", kerr.ErrorForCode(code))
	}
	// The zombie's EndTxn cannot end the new transaction either.
	if zombie := endTxnV5(t, c, coord, id, pid, epoch, true); zombie.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("zombie EndTxn: %v, want PRODUCER_FENCED", kerr.ErrorForCode(zombie.ErrorCode))
	}
	end = endTxnV5(t, c, coord, id, pid, next, false)
	if end.ErrorCode != 0 || end.ProducerEpoch != next+1 {
		t.Fatalf("abort: %v epoch %d", kerr.ErrorForCode(end.ErrorCode), end.ProducerEpoch)
	}
	testwait.For(t, groupWait, func() error {
		ms := readTxnMarkers(t, c, topic, 1)
		if len(ms) != 2 || ms[1].epoch != next+1 || ms[1].commit {
			return fmt.Errorf("partition 1 markers %+v", ms)
		}
		return nil
	})
	if got := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), 3); len(got) != 3 {
		t.Fatalf("read_committed: %v", got)
	}
}

// TestTransactionsV2EndTxnV5BelowTV2 is EndTxn v5 on a cluster whose
// transaction.version is below 2: TV1's rules, no epoch bump, ProducerId -1.
func TestTransactionsV2EndTxnV5BelowTV2(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, txnOptions()...)
	downgradeTransactionVersion(t, c, 1)
	const topic, id = "txn-v5-tv1", "txn-v5-tv1-producer"
	c.CreateTopic(t, topic, 1, nil)
	txnCoordinatorOf(t, c, 0, id)
	init := initTxnProducer(t, c, 0, id, -1, -1)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, init.ProducerID, init.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = topic, []int32{0}
	add.Topics = append(add.Topics, at)
	kresp, err := requestAt(testContext(t), c, 0, add)
	if err != nil {
		t.Fatal(err)
	}
	if resp := kresp.(*kmsg.AddPartitionsToTxnResponse); len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: %+v", resp)
	}
	end := endTxnV5(t, c, 0, id, init.ProducerID, init.ProducerEpoch, true)
	if end.ErrorCode != 0 || end.ProducerID != -1 || end.ProducerEpoch != -1 {
		t.Fatalf("EndTxn v5 below TV2 = %v %d/%d, want 0 -1/-1", kerr.ErrorForCode(end.ErrorCode), end.ProducerID, end.ProducerEpoch)
	}
	testwait.For(t, groupWait, func() error {
		if ms := readTxnMarkers(t, c, topic, 0); len(ms) != 1 || ms[0].epoch != init.ProducerEpoch {
			return fmt.Errorf("markers %+v, want the unbumped epoch %d", ms, init.ProducerEpoch)
		}
		return nil
	})
}

// TestConfluentPython_TransactionalProduceOnTV2Cluster: librdkafka 2.0.2, a TV1 client
// (EndTxn v3 at most), commits and aborts on a cluster at transaction.version 2 exactly
// as on one below it (a new cluster is at transaction.version 2).
func TestConfluentPython_TransactionalProduceOnTV2Cluster(t *testing.T) {
	t.Parallel()
	s := confluentClient(t)
	testScriptTransactions(t, s)
}
