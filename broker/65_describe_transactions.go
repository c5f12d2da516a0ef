package broker

// DescribeTransactions (key 65), v0: each transactional id is described by its
// coordinator's shard (txn.Shard.Describe); an id not coordinated here is
// NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS), an unknown one
// TRANSACTIONAL_ID_NOT_FOUND, as in Kafka (clients send each id to its coordinator).

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeTransactions, 0, 0, (*Broker).handleDescribeTransactions, apiOpts{
		authorize: authorizeDescribeTransactions,
	})
}

func (b *Broker) handleDescribeTransactions(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.RespondLater(b.txns.DescribeTransactions(req.Body.(*kmsg.DescribeTransactionsRequest)))
}

// authorizeDescribeTransactions is DescribeTransactions's authorization rule
// (checkRequest).
func authorizeDescribeTransactions(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	var denied []string
	r.TransactionalIDs, denied = split(r.TransactionalIDs, func(id string) bool {
		return b.authorized(req, auth.OpDescribe, auth.ResourceTransactionalID, id)
	})
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.DescribeTransactionsResponse)
		for _, id := range denied {
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode, s.ProducerID, s.ProducerEpoch = id, codeTxnAuthz, -1, -1
			out.TransactionStates = append(out.TransactionStates, s)
		}
	})
}
