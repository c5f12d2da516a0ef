package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The coordinator's verification answers become Kafka's produce codes.
func TestProduceVerifyCode(t *testing.T) {
	for _, tc := range []struct {
		code, version, want int16
	}{
		{0, 11, 0},
		{kerr.TransactionAbortable.Code, 11, kerr.TransactionAbortable.Code},
		{kerr.TransactionAbortable.Code, 10, kerr.InvalidTxnState.Code},
		{kerr.ProducerFenced.Code, 11, kerr.InvalidProducerEpoch.Code},
		{kerr.InvalidProducerIDMapping.Code, 11, kerr.InvalidProducerIDMapping.Code},
		{kerr.NotCoordinator.Code, 9, kerr.NotEnoughReplicas.Code},
		{kerr.CoordinatorLoadInProgress.Code, 9, kerr.NotEnoughReplicas.Code},
		{kerr.ConcurrentTransactions.Code, 9, kerr.NotEnoughReplicas.Code},
		{kerr.NetworkException.Code, 9, kerr.NotEnoughReplicas.Code},
	} {
		if got := produceVerifyCode(tc.code, tc.version); got != tc.want {
			t.Errorf("produceVerifyCode(%d, v%d) = %d, want %d", tc.code, tc.version, got, tc.want)
		}
	}
}
