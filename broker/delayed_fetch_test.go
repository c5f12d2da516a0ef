package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// dfStart parks a follower fetch of lp whose read finds records once lp's log end
// offset passes from (a stand-in for readFetch: the answer's bytes are what was
// appended since). It returns the channel the answers arrive on and the read count.
func dfStart(ctx, drain context.Context, lp *localPartition, from int64, wait time.Duration) (chan kmsg.Response, *atomic.Int32) {
	ch := make(chan kmsg.Response, 2) // room for a wrong second answer
	reads := &atomic.Int32{}
	r := kmsg.NewPtrFetchRequest()
	r.MinBytes = 1
	f := &delayedFollowerFetch{r: r, out: chanResponder(ch), readFetch: func() (*fetchAnswer, int, bool) {
		reads.Add(1)
		return &fetchAnswer{FetchResponse: kmsg.NewPtrFetchResponse()}, int(lp.State().LogEndOffset - from), false
	}}
	f.start(ctx, drain, []*localPartition{lp}, wait, lp.Changes(), false)
	return ch, reads
}

// dfAppend is dpAppend for another goroutine than the test's.
func dfAppend(t *testing.T, lp *localPartition) {
	if _, err := lp.AppendValidatedAsLeader(rvBatch(rvGoodSection(1, 16, false, 0), 1, 0), 0); err != nil {
		t.Error(err)
	}
}

// A parked follower fetch is answered by the append itself: on the appending goroutine,
// before the append returns (the produce handler's path), with no goroutine woken.
func TestDelayedFollowerFetchAnsweredByTheAppend(t *testing.T) {
	lp := dpPartition(t, 0)
	from := lp.State().LogEndOffset
	ch, _ := dfStart(context.Background(), context.Background(), lp, from, time.Minute)
	if len(ch) != 0 {
		t.Fatal("answered before any append")
	}
	if _, err := lp.AppendValidatedAsLeader(rvBatch(rvGoodSection(1, 16, false, 0), 1, 0), 0); err != nil {
		t.Fatal(err)
	}
	if len(ch) != 1 {
		t.Fatal("the append returned without answering the parked fetch")
	}
	// Another append: the fetch was answered, its waiter is gone.
	dpAppend(t, lp)
	if len(ch) != 1 {
		t.Fatal("answered twice")
	}
}

// The append, the timeout (max_wait_ms), the drain and the connection closing race:
// every parked fetch gets exactly one answer (an abandonment, nil, for the closed
// connection), and nothing after it.
func TestDelayedFollowerFetchAnswersOnceWhenAppendTimeoutAndStopRace(t *testing.T) {
	lp := dpPartition(t, 0)
	var answered, expired, abandoned int
	for i := range 200 {
		from := lp.State().LogEndOffset
		ctx, cancel := context.WithCancel(context.Background())
		drain, stop := context.WithCancel(context.Background())
		wait := time.Duration(i%4) * 200 * time.Microsecond
		ch, _ := dfStart(ctx, drain, lp, from, wait+time.Duration(i%2)*time.Minute)
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); dfAppend(t, lp) }()
		go func() {
			defer wg.Done()
			if i%5 == 0 {
				cancel()
			}
		}()
		go func() {
			defer wg.Done()
			if i%7 == 0 {
				stop()
			}
		}()
		var r kmsg.Response
		select {
		case r = <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		wg.Wait()
		switch {
		case r == nil:
			abandoned++
		case lp.State().LogEndOffset > from:
			answered++
		default:
			expired++
		}
		cancel()
		stop()
		select { // the timer has fired or been stopped by now, give it a moment
		case <-ch:
			t.Fatal("answered twice")
		case <-time.After(wait + time.Millisecond):
		}
	}
	t.Logf("%d answers, %d expiries, %d abandonments", answered, expired, abandoned)
}

// An append that lands while the fetch's read runs (after it found nothing) makes that
// read run again instead of being lost: the fetch is answered without waiting out
// max_wait_ms.
func TestDelayedFollowerFetchReadsAgainAfterAWakeUpDuringItsRead(t *testing.T) {
	lp := dpPartition(t, 0)
	from := lp.State().LogEndOffset
	ch := make(chan kmsg.Response, 2)
	r := kmsg.NewPtrFetchRequest()
	r.MinBytes = 1
	var f *delayedFollowerFetch
	first := true
	f = &delayedFollowerFetch{r: r, out: chanResponder(ch), readFetch: func() (*fetchAnswer, int, bool) {
		n := int(lp.State().LogEndOffset - from)
		if first && n > 0 {
			// The first wake-up's read: pretend it read just before the append landed,
			// and let a second append wake the fetch while this read runs.
			first = false
			n = 0
			go dfAppend(t, lp)
			deadline := time.Now().Add(10 * time.Second)
			for f.state.Load() != fetchDirty && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond) // polling for the dirty mark, with a deadline
			}
		}
		return &fetchAnswer{FetchResponse: kmsg.NewPtrFetchResponse()}, n, false
	}}
	f.start(context.Background(), context.Background(), []*localPartition{lp}, time.Minute, lp.Changes(), false)
	go dfAppend(t, lp)
	select {
	case r := <-ch:
		if r == nil {
			t.Fatal("abandoned")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wake-up during the read was lost")
	}
}
