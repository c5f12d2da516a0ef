package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactions V2 on the wire of one broker: the advertised versions, and EndTxn v5's
// answers under transaction.version 2 and below it.
func TestEndTxnV5Wire(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"transaction.state.log.num.partitions": "1"})
	cl := newClient(t, b)
	ctx := testContext(t)

	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int16]int16{kmsg.Produce.Int16(): 13, kmsg.EndTxn.Int16(): 5, kmsg.AddOffsetsToTxn.Int16(): 4, kmsg.TxnOffsetCommit.Int16(): 5}
	for _, k := range av.ApiKeys {
		if w, ok := want[k.ApiKey]; ok && k.MaxVersion != w {
			t.Errorf("%s advertised up to v%d, want v%d", kmsg.NameForKey(k.ApiKey), k.MaxVersion, w)
		}
	}

	const id = "wire-v5"
	var pid int64
	testwait.For(t, 30*time.Second, func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		pid = resp.ProducerID
		return nil
	})
	// end sends EndTxn (v5 as the client negotiates it), retrying
	// CONCURRENT_TRANSACTIONS while the previous end's markers are written.
	end := func(pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
		t.Helper()
		var out *kmsg.EndTxnResponse
		testwait.For(t, 30*time.Second, func() error {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			if resp.Version != 5 {
				t.Fatalf("EndTxn answered as v%d", resp.Version)
			}
			if resp.ErrorCode == kerr.ConcurrentTransactions.Code {
				return fmt.Errorf("EndTxn: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			out = resp
			return nil
		})
		return out
	}
	check := func(what string, got *kmsg.EndTxnResponse, code int16, pid int64, epoch int16) {
		t.Helper()
		if got.ErrorCode != code || got.ProducerID != pid || got.ProducerEpoch != epoch {
			t.Fatalf("%s: %v %d/%d, want %v %d/%d", what, kerr.ErrorForCode(got.ErrorCode), got.ProducerID, got.ProducerEpoch,
				kerr.ErrorForCode(code), pid, epoch)
		}
	}
	check("empty abort", end(pid, 0, false), 0, pid, 1)
	check("retried abort", end(pid, 0, false), 0, pid, 1)
	check("commit with nothing open", end(pid, 1, true), kerr.InvalidTxnState.Code, -1, -1)
	check("unknown producer id", end(pid+100, 1, false), kerr.InvalidProducerIDMapping.Code, -1, -1)
	check("an older epoch", end(pid, 0, true), kerr.InvalidTxnState.Code, -1, -1)
	check("second empty abort", end(pid, 1, false), 0, pid, 2)

	// Below transaction.version 2, v5 keeps version 1's rules: no bump, -1/-1.
	downgrade := kmsg.NewPtrUpdateFeaturesRequest()
	downgrade.Version, downgrade.TimeoutMillis = 1, 30000
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = metadata.FeatureTransactionVersion, 1, 2 // a safe downgrade
	downgrade.FeatureUpdates = append(downgrade.FeatureUpdates, u)
	if resp, err := downgrade.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("transaction.version to 1: %v %+v", err, resp)
	}
	check("TV1 abort with nothing open", end(pid, 2, false), 0, -1, -1)
	check("TV1 stale epoch", end(pid, 1, false), kerr.ProducerFenced.Code, -1, -1)
}
