package shareleader

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// slowCancelPersister's writes wait for their context to end, then for finish: a
// share state call that takes a while to return after it is cancelled.
type slowCancelPersister struct {
	*fakePersister
	finish chan struct{}
	mu     sync.Mutex
	active int // WriteState calls not yet returned
}

func (p *slowCancelPersister) WriteState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	p.mu.Lock()
	p.active++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.active--
		p.mu.Unlock()
	}()
	<-ctx.Done()
	<-p.finish
	return nil, ctx.Err()
}

// Close returns only once the share partitions' writers ended: none outlives the
// manager.
func TestCloseWaitsForWriters(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	r.replica.produce(2)
	r.fetch(ctx, "m1", 0)
	slow := &slowCancelPersister{fakePersister: r.pers, finish: make(chan struct{})}
	r.m.cfg.Persister = func() Persister { return slow }
	ackCtx, cancelAck := context.WithCancel(ctx)
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		r.acknowledge(ackCtx, "m1", 1, ack(0, 1, share.AckAccept))
	}()
	testwait.Until(t, 10*time.Second, "the write reaches the persister", func() bool {
		slow.mu.Lock()
		defer slow.mu.Unlock()
		return slow.active == 1
	})
	cancelAck() // the acknowledgement gives up; its write goes on
	<-acked
	go func() {
		testwait.Until(t, 10*time.Second, "Close starts", func() bool {
			r.m.mu.Lock()
			defer r.m.mu.Unlock()
			return r.m.closed
		})
		close(slow.finish)
	}()
	r.m.Close()
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if slow.active != 0 {
		t.Fatal("Close returned with a share state write still running")
	}
}
