package broker

// ListTransactions (key 66), v0-2: the transactional ids of every __transaction_state
// partition this broker coordinates, filtered by state, producer id, (v1) the
// minimum running time of the ongoing transaction and (v2, KIP-1152) a regular
// expression the transactional id must match (Go's RE2 syntax, as Kafka's RE2/J; an
// invalid one is INVALID_REGULAR_EXPRESSION). While a partition is still loading
// the answer carries COORDINATOR_LOAD_IN_PROGRESS with what is known, as in Kafka.
// States in the filter that are not Kafka's are reported in unknown_state_filters.

import (
	"context"
	"slices"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ListTransactions, 0, 2, (*Broker).handleListTransactions, apiOpts{
		authorize: authorizeListTransactions,
	})
}

func (b *Broker) handleListTransactions(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.RespondLater(b.txns.ListTransactions(req.Body.(*kmsg.ListTransactionsRequest)))
}

// authorizeListTransactions is ListTransactions's authorization rule (checkRequest).
func authorizeListTransactions(b *Broker, req *rpc.Request) authzDecision {
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.ListTransactionsResponse)
		out.TransactionStates = slices.DeleteFunc(out.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
			return !b.authorized(req, auth.OpDescribe, auth.ResourceTransactionalID, s.TransactionalID)
		})
	}}
}
