package integration

import (
	"fmt"
	"testing"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transactional.id.expiration.ms: an idle transactional id is removed (a tombstone in
// __transaction_state; txn's TestRemoveExpired checks the replay); coming back, its
// producer gets a new producer id.
func TestTransactionalIDExpiration(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, append(txnOptions(),
		WithProperty("transactional.id.expiration.ms", "1500"),
		WithProperty("transaction.remove.expired.transaction.cleanup.interval.ms", "200"))...)
	const id = "txn-expiring"
	coord := txnCoordinatorOf(t, c, 0, id)
	first := initTxnProducer(t, c, coord, id, -1, -1)
	if first.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(first.ErrorCode))
	}
	raw := c.rawTo(t, coord)
	describe := func() int16 {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		return raw.do(testContext(t), req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
	}
	if code := describe(); code != 0 {
		t.Fatalf("DescribeTransactions right after InitProducerId: %v", kerr.ErrorForCode(code))
	}
	testwait.For(t, groupWait, func() error {
		if code := describe(); code != kerr.TransactionalIDNotFound.Code {
			return fmt.Errorf("DescribeTransactions: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	again := initTxnProducer(t, c, coord, id, -1, -1)
	if again.ErrorCode != 0 || again.ProducerID == first.ProducerID || again.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId after expiry: %+v (first producer id %d)", again, first.ProducerID)
	}
}
