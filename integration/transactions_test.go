package integration

// Transaction coordinator scenarios (P7): __transaction_state created on first need,
// FindCoordinator key type 1, InitProducerId with a transactional id (epoch bumps,
// KIP-360 fencing, NOT_COORDINATOR elsewhere) and its state surviving the loss of the
// coordinator.

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOptions are the broker properties of the transaction tests: few
// __transaction_state partitions, so that loading them is quick.
func txnOptions() []Option {
	return []Option{WithProperty("transaction.state.log.num.partitions", "3")}
}

// txnCoordinatorOf polls FindCoordinator (key type 1) through node via until id has a
// coordinator and returns its node id.
func txnCoordinatorOf(t testing.TB, c *Cluster, via int, id string) int {
	t.Helper()
	raw := c.rawTo(t, via)
	var node int32 = -1
	waitFor(t, groupWait, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKey = id
		req.CoordinatorKeys = []string{id}
		resp := raw.do(testContext(t), req).(*kmsg.FindCoordinatorResponse)
		code, n := resp.ErrorCode, resp.NodeID
		if len(resp.Coordinators) > 0 {
			code, n = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		if code != 0 {
			return fmt.Errorf("FindCoordinator: %v", kerr.ErrorForCode(code))
		}
		node = n
		return nil
	})
	return int(node)
}

// initTxnProducer sends InitProducerId for id to node, retrying the retriable
// coordinator errors, and returns the answer.
func initTxnProducer(t testing.TB, c *Cluster, node int, id string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	raw := c.rawTo(t, node)
	var out *kmsg.InitProducerIDResponse
	waitFor(t, groupWait, func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = &id, 60000, pid, epoch
		resp := raw.do(testContext(t), req).(*kmsg.InitProducerIDResponse)
		switch resp.ErrorCode {
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.ConcurrentTransactions.Code:
			return fmt.Errorf("InitProducerId: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		out = resp
		return nil
	})
	return out
}

func TestTransactionCoordinatorInitProducerID(t *testing.T) {
	c := StartCluster(t, 3, txnOptions()...)
	const id = "txn-init"
	coord := txnCoordinatorOf(t, c, 0, id)
	first := initTxnProducer(t, c, coord, id, -1, -1)
	if first.ErrorCode != 0 || first.ProducerID < 0 || first.ProducerEpoch != 0 {
		t.Fatalf("first InitProducerId: %+v", first)
	}
	second := initTxnProducer(t, c, coord, id, -1, -1)
	if second.ErrorCode != 0 || second.ProducerID != first.ProducerID || second.ProducerEpoch != 1 {
		t.Fatalf("second InitProducerId: %+v", second)
	}
	if r := initTxnProducer(t, c, coord, id, first.ProducerID, 5); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("InitProducerId with an unknown epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	other := (coord + 1) % 3
	if r := initTxnProducer(t, c, other, id, -1, -1); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("InitProducerId at node %d, not the coordinator: %v", other, kerr.ErrorForCode(r.ErrorCode))
	}
	md := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("__transaction_state")
	md.Topics = append(md.Topics, topic)
	mresp := c.rawTo(t, other).do(testContext(t), md).(*kmsg.MetadataResponse)
	if len(mresp.Topics) != 1 || !mresp.Topics[0].IsInternal || len(mresp.Topics[0].Partitions) != 3 ||
		len(mresp.Topics[0].Partitions[0].Replicas) != 3 {
		t.Fatalf("__transaction_state in Metadata: %+v", mresp.Topics)
	}

	// The coordinator dies: the next leader of the partition replays the state and
	// bumps the epoch from where it was.
	c.Kill(coord)
	var next int
	waitFor(t, groupWait, func() error {
		next = txnCoordinatorOf(t, c, other, id)
		if next == coord {
			return fmt.Errorf("coordinator still %d", coord)
		}
		return nil
	})
	third := initTxnProducer(t, c, next, id, second.ProducerID, second.ProducerEpoch)
	if third.ErrorCode != 0 || third.ProducerID != first.ProducerID || third.ProducerEpoch != 2 {
		t.Fatalf("InitProducerId after failover: %+v", third)
	}
}
