package shareleader

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// holdingLog is a log output that holds the goroutine writing a line containing
// match until release is closed: a test uses it to act between a failure and what
// follows its log line.
type holdingLog struct {
	match   []byte
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHoldingLog(match string) *holdingLog {
	return &holdingLog{match: []byte(match), reached: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdingLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, h.match) {
		h.once.Do(func() { close(h.reached) })
		<-h.release
	}
	return len(p), nil
}

// A failed write drops the share partition before anything else can change it: an
// acknowledgement arriving between the failure and the reload is refused
// (NOT_LEADER_OR_FOLLOWER) and nothing it changed is written, so no late write can
// land over the state the next fetch reloads.
func TestFailedWriteRefusesChangesBeforeTheReload(t *testing.T) {
	r := newRig(t, earliest)
	hold := newHoldingLog("share state write failed")
	r.m.log = hclog.New(&hclog.LoggerOptions{Output: hold, Level: hclog.Trace})
	ctx := testCtx(t)
	r.replica.produce(5)
	if got := r.fetch(ctx, "m1", 0).acquired(); !slices.Equal(got, []string{"0-4@1"}) {
		t.Fatalf("m1 acquired %v", got)
	}
	r.pers.mu.Lock()
	r.pers.fail = kerr.CoordinatorNotAvailable.Code
	r.pers.mu.Unlock()
	if _, code := r.acknowledge(ctx, "m1", 1, ack(0, 1, share.AckAccept)); code == 0 {
		t.Fatal("an acknowledgement whose write failed was answered OK")
	}
	select {
	case <-hold.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the failed write was never logged")
	}
	r.pers.mu.Lock()
	r.pers.fail = 0
	written := len(r.pers.calls)
	r.pers.mu.Unlock()
	_, code := r.acknowledge(ctx, "m1", 2, ack(2, 4, share.AckAccept))
	close(hold.release)
	if code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("an acknowledgement after the failed write, before the reload: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	if calls := r.pers.callsSoFar(); len(calls) != written {
		t.Fatalf("the dropped share partition wrote %+v after its failed write", calls[written:])
	}
}
