package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkTransactionalIDPattern: ListTransactions v2's TransactionalIdPattern (KIP-1152)
// keeps the ids it matches whole, an invalid expression is INVALID_REGULAR_EXPRESSION.
// It runs while txn-kgo-producer's transaction is open (TestTransactionKgoCommitAndAbort).
func checkTransactionalIDPattern(ctx context.Context, t *testing.T, c *Cluster) {
	t.Helper()
	cl := c.Client(t)
	list := func(pattern string) ([]string, int16) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.TransactionalIDPattern = &pattern
		var ids []string
		var code int16
		for _, shard := range cl.RequestSharded(ctx, req) {
			if shard.Err != nil {
				t.Fatalf("ListTransactions %q: %v", pattern, shard.Err)
			}
			resp := shard.Resp.(*kmsg.ListTransactionsResponse)
			if resp.Version != 2 {
				t.Fatalf("ListTransactions answered v%d, want v2", resp.Version)
			}
			code = max(code, resp.ErrorCode)
			for _, st := range resp.TransactionStates {
				ids = append(ids, st.TransactionalID)
			}
		}
		slices.Sort(ids)
		return ids, code
	}
	if ids, code := list("txn-kgo-.*"); code != 0 || !slices.Equal(ids, []string{"txn-kgo-producer"}) {
		t.Fatalf("pattern txn-kgo-.*: %v, code %d", ids, code)
	}
	if ids, code := list("txn-kgo"); code != 0 || len(ids) != 0 {
		t.Fatalf("a pattern matching only part of the id: %v, code %d", ids, code)
	}
	if _, code := list("txn-(kgo"); code != kerr.InvalidRegularExpression.Code {
		t.Fatalf("an invalid pattern answered code %d", code)
	}
}
