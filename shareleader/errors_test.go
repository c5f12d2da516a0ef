package shareleader

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The share coordinator's codes reach a client as Kafka 4.2's SharePartition maps
// them: an acknowledgement whose write is refused is answered the mapped code.
func TestShareCoordinatorCodesAreMappedForClients(t *testing.T) {
	cases := []struct{ coordinator, client int16 }{
		{kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code},
		{kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code},
		{kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorNotAvailable.Code},
		{kerr.FencedLeaderEpoch.Code, kerr.NotLeaderForPartition.Code},
		{kerr.FencedStateEpoch.Code, kerr.FencedStateEpoch.Code},
		{kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code},
		{kerr.GroupIDNotFound.Code, kerr.GroupIDNotFound.Code},
		{kerr.InvalidRequest.Code, kerr.UnknownServerError.Code},
	}
	for _, c := range cases {
		t.Run(kerr.ErrorForCode(c.coordinator).(*kerr.Error).Message, func(t *testing.T) {
			r := newRig(t, earliest)
			ctx := testCtx(t)
			r.replica.produce(2)
			r.fetch(ctx, "m1", 0)
			r.pers.mu.Lock()
			r.pers.fail = c.coordinator
			r.pers.mu.Unlock()
			if _, code := r.acknowledge(ctx, "m1", 1, ack(0, 1, share.AckAccept)); code != c.client {
				t.Fatalf("answered %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(c.client))
			}
		})
	}
	// A share state call that timed out is the share coordinator unavailable.
	timedOut := fmt.Errorf("%w: %w", ErrStateWrite, context.DeadlineExceeded)
	if got := ErrorCode(timedOut); got != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("a timed-out share state call: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(got))
	}
}

// A write fenced after leadership moved is routine: it drops the share partition
// without a WARN or ERROR line; a code the leader does not expect is a WARN.
func TestFencedWriteLogsNoWarning(t *testing.T) {
	for _, c := range []struct {
		code int16
		warn bool
	}{{kerr.FencedLeaderEpoch.Code, false}, {kerr.FencedStateEpoch.Code, false}, {kerr.NotCoordinator.Code, false}, {kerr.KafkaStorageError.Code, true}} {
		r := newRig(t, earliest)
		out := &testwait.Buffer{}
		r.m.log = hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Trace})
		ctx := testCtx(t)
		r.replica.produce(2)
		r.fetch(ctx, "m1", 0)
		r.pers.mu.Lock()
		r.pers.fail = c.code
		r.pers.mu.Unlock()
		r.acknowledge(ctx, "m1", 1, ack(0, 1, share.AckAccept))
		testwait.Until(t, 10*time.Second, "the failed write logged", func() bool {
			return strings.Contains(out.String(), "share state write failed")
		})
		logged := out.String()
		warned := strings.Contains(logged, "[WARN]") || strings.Contains(logged, "[ERROR]")
		if warned != c.warn {
			t.Fatalf("%v: warned %v, want %v: %s", kerr.ErrorForCode(c.code), warned, c.warn, logged)
		}
	}
}
