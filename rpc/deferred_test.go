package rpc

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deferredResponse is the tagged Metadata answer to request i.
func deferredResponse(i int) kmsg.Response {
	resp := kmsg.NewPtrMetadataResponse()
	resp.ClusterID = kmsg.StringPtr(fmt.Sprintf("t-%d", i))
	return resp
}

// startDeferringServer starts a server that answers every request with a Deferred,
// handed to the test on the channel returned (room for queued of them).
func startDeferringServer(t *testing.T, queued int) (*testServer, chan *Deferred) {
	t.Helper()
	ds := make(chan *Deferred, queued)
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(_ context.Context, req *Request) Result {
		d := req.Defer()
		ds <- d
		return RespondDeferred(d)
	}))
	return srv, ds
}

// Responses on one connection stay in request order when some are completed by the
// goroutine that finishes them (Deferred.Complete writing directly, with the writer
// waiting at them or bypassed altogether) and the others by the writer: 200 pipelined
// requests, each answered at once, completed inside its handler, or completed later
// from another goroutine in a shuffled order. Every response arrives once, in order.
func TestDeferredResponsesKeepRequestOrder(t *testing.T) {
	const n = 200
	var wg sync.WaitGroup
	var observed atomic.Int32
	srv := startServer(t, ServerConfig{ObserveRequest: func(int16, RequestTiming) { observed.Add(1) }}, metadataRegistry(func(_ context.Context, req *Request) Result {
		i := tagIndex(requestTag(req))
		switch i % 3 {
		case 0:
			return Respond(echoResponse(req))
		case 1: // completed before the handler returns: the writer takes it (ready)
			d := req.Defer()
			d.Complete(echoResponse(req))
			return RespondDeferred(d)
		default: // completed later, by another goroutine, in no particular order
			d := req.Defer()
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond) // spreads the completions; not synchronisation
				if !d.Complete(deferredResponse(i)) {
					t.Errorf("first Complete of %d refused", i)
				}
				if d.Complete(deferredResponse(i)) {
					t.Errorf("second Complete of %d taken", i)
				}
			}()
			return RespondDeferred(d)
		}
	}))
	c := dialRaw(t, srv.addr)
	var batch []byte
	for i := range n {
		batch = append(batch, requestFrame(metadataRequest(9, fmt.Sprintf("t-%d", i)), int32(1000+i))...)
	}
	writeAll(t, c, batch)
	for i := range n {
		corr, body := readResponse(t, c)
		if corr != int32(1000+i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		if got := parseMetadata(t, body, 9).ClusterID; got == nil || *got != fmt.Sprintf("t-%d", i) {
			t.Fatalf("response %d echoes %v", i, got)
		}
	}
	wg.Wait()
	testwait.For(t, testTimeout, func() error {
		if got := observed.Load(); got != n {
			return fmt.Errorf("%d responses observed, want %d", got, n)
		}
		return nil
	})
}

// A Deferred completed while nothing else is owed on the connection is written by the
// completing goroutine itself: the writer is never reached (the hook that runs when it
// waits at a Deferred does not run), and the next request is served normally.
func TestDeferredWrittenByTheCompletingGoroutine(t *testing.T) {
	var mu sync.Mutex
	var pending *Deferred
	writerWaited := atomic.Int32{}
	testHookWriterAtDeferred = func(*Deferred) { writerWaited.Add(1) }
	t.Cleanup(func() { testHookWriterAtDeferred = nil })
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(_ context.Context, req *Request) Result {
		if requestTag(req) != "t-0" {
			return Respond(echoResponse(req))
		}
		d := req.Defer()
		mu.Lock()
		pending = d
		mu.Unlock()
		return RespondDeferred(d)
	}))
	c := dialRaw(t, srv.addr)
	sendRequest(t, c, metadataRequest(9, "t-0"), 1000)
	var d *Deferred
	testwait.For(t, testTimeout, func() error {
		mu.Lock()
		defer mu.Unlock()
		if d = pending; d == nil || d.state.Load() != deferredHead {
			return fmt.Errorf("not registered yet")
		}
		return nil
	})
	d.Complete(deferredResponse(0))
	if s := d.state.Load(); s != deferredWritten {
		t.Fatalf("state %d after Complete, want written (%d)", s, deferredWritten)
	}
	corr, body := readResponse(t, c)
	if corr != 1000 || *parseMetadata(t, body, 9).ClusterID != "t-0" {
		t.Fatalf("response %d", corr)
	}
	roundTrip(t, c, 9, 1001, "t-1") // the writer goes on after it
	if n := writerWaited.Load(); n != 0 {
		t.Fatalf("the writer waited at the Deferred %d times", n)
	}
}

// Complete racing the connection's close, a server stop or an abandonment
// (Complete(nil)) answers exactly once and never blocks; an abandonment that wins
// closes the connection, as a RespondLater channel closed without a value does.
func TestDeferredCompleteRacesCloseAndStop(t *testing.T) {
	for round := range 15 {
		// A subtest per round: its client, server and leak check end with it, before the
		// next round counts goroutines (checkNoGoroutineLeak).
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			srv, ds := startDeferringServer(t, 1)
			c := dialRaw(t, srv.addr)
			sendRequest(t, c, metadataRequest(9, "t-0"), 1000)
			var d *Deferred
			select {
			case d = <-ds:
			case <-time.After(testTimeout):
				t.Fatal("no request")
			}
			answered, abandoned := make(chan bool, 1), make(chan bool, 1)
			go func() { answered <- d.Complete(deferredResponse(0)) }()
			switch round % 3 {
			case 0:
				c.Close()
			case 1:
				go func() { abandoned <- d.Complete(nil) }()
			default:
				go func() { _ = srv.Close() }()
			}
			receive := func(ch chan bool) bool {
				select {
				case ok := <-ch:
					return ok
				case <-time.After(testTimeout):
					t.Fatal("Complete blocked")
					return false
				}
			}
			gotAnswer := receive(answered)
			if round%3 != 1 {
				if !gotAnswer {
					t.Fatal("the only answer was refused")
				}
			} else if gotAnswer == receive(abandoned) {
				t.Fatalf("answer taken %v and abandonment taken %v: exactly one must be", gotAnswer, !gotAnswer)
			}
			if d.Complete(deferredResponse(0)) {
				t.Fatal("a late Complete was taken")
			}
			if round%3 == 1 {
				_ = c.SetReadDeadline(time.Now().Add(testTimeout))
				var size [4]byte
				_, err := io.ReadFull(c, size[:])
				if gotAnswer && err != nil {
					t.Fatalf("answered, but reading it: %v", err)
				}
				if !gotAnswer && err == nil {
					t.Fatal("abandoned, but a response arrived")
				}
			}
		})
	}
}

// A Deferred whose frame does not fit the socket buffer (the client is not reading) is
// written partly by Complete, which returns at once, and finished by the writer; the
// client then reads it whole, and the next response after it.
func TestDeferredPartialWriteFinishedByTheWriter(t *testing.T) {
	ds := make(chan *Deferred, 1)
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(_ context.Context, req *Request) Result {
		if requestTag(req) != "t-0" {
			return Respond(echoResponse(req))
		}
		d := req.Defer()
		ds <- d
		return RespondDeferred(d)
	}))
	c := dialRaw(t, srv.addr)
	sendRequest(t, c, metadataRequest(9, "t-0"), 1000)
	d := <-ds
	testwait.For(t, testTimeout, func() error {
		if d.state.Load() != deferredHead {
			return fmt.Errorf("not registered yet")
		}
		return nil
	})
	big := kmsg.NewPtrMetadataResponse()
	tag := make([]byte, 8<<20) // far more than a loopback socket buffer takes at once
	for i := range tag {
		tag[i] = 'a' + byte(i%26)
	}
	big.ClusterID = kmsg.StringPtr(string(tag))
	returned := make(chan struct{})
	go func() { d.Complete(big); close(returned) }()
	select {
	case <-returned:
	case <-time.After(testTimeout):
		t.Fatal("Complete blocked on a full socket")
	}
	sendRequest(t, c, metadataRequest(9, "t-1"), 1001)
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	corr, body := readResponse(t, c)
	if got := parseMetadata(t, body, 9).ClusterID; corr != 1000 || got == nil || *got != string(tag) {
		t.Fatalf("response %d: the big answer did not arrive whole", corr)
	}
	if corr, body := readResponse(t, c); corr != 1001 || *parseMetadata(t, body, 9).ClusterID != "t-1" {
		t.Fatalf("then response %d", corr)
	}
}

// A response that is ready when the reader has it — a handler's Respond, or a
// Deferred completed inside its handler — is written by the reader when nothing is
// ahead of it on the connection: the writer takes no slot.
func TestReadyResponseWrittenByTheReader(t *testing.T) {
	var writerSlots atomic.Int32
	testHookWriterSlot = func() { writerSlots.Add(1) }
	t.Cleanup(func() { testHookWriterSlot = nil })
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(_ context.Context, req *Request) Result {
		if requestTag(req) != "deferred" {
			return Respond(echoResponse(req))
		}
		d := req.Defer()
		d.Complete(echoResponse(req))
		return RespondDeferred(d)
	}))
	c := dialRaw(t, srv.addr)
	for i := range 20 {
		tag := fmt.Sprintf("t-%d", i)
		if i%2 == 1 {
			tag = "deferred"
		}
		roundTrip(t, c, 9, int32(1000+i), tag)
	}
	if n := writerSlots.Load(); n != 0 {
		t.Fatalf("the writer took %d slots", n)
	}
}

// A ready response the reader cannot write at once (a full socket buffer) is finished
// by the writer, and the pipelined responses after it follow it in order.
func TestReaderPartialWriteFinishedByTheWriter(t *testing.T) {
	tag := make([]byte, 8<<20) // far more than a loopback socket buffer takes at once
	for i := range tag {
		tag[i] = 'a' + byte(i%26)
	}
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(_ context.Context, req *Request) Result {
		if requestTag(req) != "big" {
			return Respond(echoResponse(req))
		}
		big := kmsg.NewPtrMetadataResponse()
		big.ClusterID = kmsg.StringPtr(string(tag))
		return Respond(big)
	}))
	c := dialRaw(t, srv.addr)
	sendRequest(t, c, metadataRequest(9, "big"), 1000)
	sendRequest(t, c, metadataRequest(9, "t-1"), 1001)
	sendRequest(t, c, metadataRequest(9, "t-2"), 1002)
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	corr, body := readResponse(t, c)
	if got := parseMetadata(t, body, 9).ClusterID; corr != 1000 || got == nil || *got != string(tag) {
		t.Fatalf("response %d: the big answer did not arrive whole", corr)
	}
	for i := range 2 {
		if corr, body := readResponse(t, c); corr != int32(1001+i) || *parseMetadata(t, body, 9).ClusterID != fmt.Sprintf("t-%d", i+1) {
			t.Fatalf("then response %d", corr)
		}
	}
}

// The writer brought to awaitDirect by a kick left over from an earlier Deferred, at
// a moment when the reader's bypass is still registering the next one (pending) or
// has given up on it (ready, Complete came first), returns at once: nothing of that
// Deferred is the writer's, and its handoff will never be sent.
func TestAwaitDirectSkipsAnUnregisteredDeferred(t *testing.T) {
	for _, state := range []int32{deferredPending, deferredReady} {
		ctx, cancel := context.WithCancel(context.Background())
		c := &conn{ctx: ctx}
		d := &Deferred{handoff: make(chan deferredHandoff, 1)}
		d.state.Store(state)
		c.direct.Store(d)
		done := make(chan bool, 1)
		go func() { done <- c.awaitDirect() }()
		select {
		case ok := <-done:
			if !ok {
				t.Fatalf("state %d: awaitDirect reported a closed connection", state)
			}
		case <-time.After(testTimeout):
			t.Fatalf("state %d: the writer waited for a handoff that never comes", state)
		}
		cancel()
	}
}

// A Deferred registered without queuing (bypass) whose Complete leaves the write to the
// writer (a large answer: a follower's fetch of new records) is written although the
// writer still waits at the queued Deferred before it, which Complete wrote itself
// without waking it. Before, the writer waited there for the next queued slot and never
// saw the kick: the answer stayed unwritten until the client gave up on the
// connection (a follower's fetch hung for its 10 s deadline right after the first
// records arrived, and acks=all produces with it).
func TestBypassedDeferredWrittenWhileTheWriterWaitsAtAWrittenOne(t *testing.T) {
	srv, ds := startDeferringServer(t, 3)
	c := dialRaw(t, srv.addr)
	// registered waits until the writer or the reader (bypass) has reached d: its
	// state is head, or headSignal once a writer with a later slot waits for it.
	registered := func(d *Deferred, what string) {
		t.Helper()
		testwait.ForWhat(t, testTimeout, what, func() error {
			if s := d.state.Load(); s != deferredHead && s != deferredHeadSignal {
				return fmt.Errorf("state %d, want head (%d) or headSignal (%d)", s, deferredHead, deferredHeadSignal)
			}
			return nil
		})
	}
	// The first is bypassed, so the second is queued and the writer waits at it.
	writeAll(t, c, append(requestFrame(metadataRequest(9, "t-0"), 1000), requestFrame(metadataRequest(9, "t-1"), 1001)...))
	first, second := <-ds, <-ds
	registered(first, "the first registered (bypass)")
	first.Complete(deferredResponse(0))
	registered(second, "the writer waits at the second")
	second.Complete(deferredResponse(1)) // written whole by Complete: the writer is not woken
	if s := second.state.Load(); s != deferredWritten {
		t.Fatalf("state %d after Complete, want written (%d)", s, deferredWritten)
	}
	for i := range 2 {
		if corr, body := readResponse(t, c); corr != int32(1000+i) || *parseMetadata(t, body, 9).ClusterID != fmt.Sprintf("t-%d", i) {
			t.Fatalf("response %d: correlation id %d", i, corr)
		}
	}
	// Nothing is owed now: the third is bypassed, and its answer is too large for
	// Complete to write at once.
	sendRequest(t, c, metadataRequest(9, "t-2"), 1002)
	third := <-ds
	registered(third, "the third registered (bypass)")
	big := kmsg.NewPtrMetadataResponse()
	tag := make([]byte, 8<<20) // more than maxDirectFrame and a loopback socket buffer
	for i := range tag {
		tag[i] = 'a' + byte(i%26)
	}
	big.ClusterID = kmsg.StringPtr(string(tag))
	third.Complete(big)
	corr, body := readResponse(t, c) // fails at its read deadline when the writer never writes it
	if got := parseMetadata(t, body, 9).ClusterID; corr != 1002 || got == nil || *got != string(tag) {
		t.Fatalf("response %d: the large answer did not arrive whole", corr)
	}
	sendRequest(t, c, metadataRequest(9, "t-3"), 1003)
	(<-ds).Complete(deferredResponse(3))
	if corr, body := readResponse(t, c); corr != 1003 || *parseMetadata(t, body, 9).ClusterID != "t-3" {
		t.Fatalf("then response %d", corr)
	}
}
