package rpc

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Deferred is a response owed on one connection that some goroutine completes later
// (Request.Defer, RespondDeferred): a delayed produce answered where the high watermark
// advanced, a parked fetch answered where the append happened. Unlike RespondLater's
// channel, which the connection's writer goroutine waits on and which therefore costs
// a goroutine hand-off (and on an idle machine a thread wake-up) per response, Complete
// writes the response itself when the writer is waiting for exactly this response —
// every earlier response on the connection written, so request order holds — and the
// encoded frame fits one non-blocking write on a plain TCP connection. Otherwise
// (the writer is still busy with earlier responses, the socket buffer is full, TLS,
// a large fetch answer to send by sendfile) the writer writes it, as for RespondLater.
//
// The states, moved by compare-and-swap:
//
//	pending --Complete--> ready (the writer takes resp when it reaches the slot)
//	pending --writer reaches it--> head --Complete--> taken --full write--> written
//
// In taken, Complete owns the write side. When it wrote the whole frame it also does
// the slot's bookkeeping and moves to written without waking the writer, which finds
// it so when the next response arrives; otherwise (a partial write, TLS, sendfile)
// it hands the writer what is left on handoff. A writer that has the next slot and
// must wait for this one moves head to headSignal, or taken to takenSignal: Complete
// then always sends the handoff.
type Deferred struct {
	c             *conn // nil for a Request not read by a conn (tests): never written directly
	correlationID int32
	key           int16
	version       int16
	// finish is the slot's OnResponse function, set by the reader before the slot is
	// queued (so before the writer can move the state to head).
	finish func(kmsg.Response) time.Duration
	// timing and closeAfter are the slot's, set by the writer before it moves the
	// state to head.
	timing     RequestTiming
	closeAfter error
	// bypassed: the reader registered it as the writer's (conn.bypass); the writer
	// is not waiting on handoff and must be kicked.
	bypassed bool

	completed atomic.Bool  // Complete has been called
	state     atomic.Int32 // deferredPending, ...
	resp      kmsg.Response
	// handoff carries what the writer still has to do, when Complete found the writer
	// at the slot and did not finish it; capacity 1, so Complete never blocks.
	handoff chan deferredHandoff
}

const (
	deferredPending int32 = iota
	deferredReady
	deferredHead
	deferredHeadSignal
	deferredTaken
	deferredTakenSignal
	deferredWritten
)

// deferredHandoff is what a Complete that took the write side leaves to the writer.
type deferredHandoff struct {
	resp     kmsg.Response // not yet prepared or written: the writer writes it
	parts    *Parts        // prepared, to be written by writeParts and released (pr)
	pr       PartsResponse
	buf      *[]byte // prepared frame; buf[written:] is still to be written
	written  int
	err      error // the direct write failed: the connection is closed
	abandon  bool  // Complete(nil)
	done     bool  // written whole by Complete
	booked   bool  // and its bookkeeping done (book): nothing left to do
	start    time.Time
	finished time.Time
}

// Defer returns a Deferred for this request's response; the handler returns
// RespondDeferred with it and calls Complete exactly once, from any goroutine, holding
// no lock (Complete may write to the network).
func (r *Request) Defer() *Deferred {
	d := &Deferred{c: r.conn, correlationID: r.CorrelationID, key: r.Key, version: r.Version, handoff: make(chan deferredHandoff, 1)}
	if r.Key == apiVersionsKey && r.Version > apiVersionsMaxVersion {
		d.version = 0
	}
	return d
}

// RespondDeferred queues the response d delivers (Complete). Responses after it wait
// for it, as with RespondLater. A nil d closes the connection.
func RespondDeferred(d *Deferred) Result {
	if d == nil {
		return Result{kind: resultClose, err: ErrBadResult}
	}
	return Result{kind: resultLater, deferred: d}
}

// signalWriter tells a Complete still to come, or one writing now, that the
// connection's writer waits at d (head → headSignal, taken → takenSignal), so that it
// hands over what it cannot write; it reports whether d is written already.
func (d *Deferred) signalWriter() bool {
	for {
		switch d.state.Load() {
		case deferredWritten:
			return true
		case deferredHead:
			if !d.state.CompareAndSwap(deferredHead, deferredHeadSignal) {
				continue
			}
		case deferredTaken:
			if !d.state.CompareAndSwap(deferredTaken, deferredTakenSignal) {
				continue
			}
		}
		return false
	}
}

// Complete delivers the response. It returns false, doing nothing, when Complete was
// called before. A nil resp closes the connection (ErrResponseAbandoned), as a
// RespondLater channel closed without a value does. It never blocks on the
// connection: a write that cannot complete at once is left to the writer.
func (d *Deferred) Complete(resp kmsg.Response) bool {
	if !d.completed.CompareAndSwap(false, true) {
		return false
	}
	d.resp = resp
	if d.state.CompareAndSwap(deferredPending, deferredReady) {
		return true // the writer has not reached it: it writes resp when it does
	}
	// The writer waits at this slot: the write side is ours until the handoff.
	signal := false
	for {
		if d.state.CompareAndSwap(deferredHead, deferredTaken) {
			break
		}
		if d.state.CompareAndSwap(deferredHeadSignal, deferredTakenSignal) {
			signal = true
			break
		}
	}
	var h deferredHandoff
	if resp == nil {
		h.abandon = true
	} else {
		h = d.c.writeDirect(d, resp)
	}
	if !h.done || d.closeAfter != nil {
		d.handoff <- h // the writer finishes it (and closes, for closeAfter)
		if d.bypassed {
			select {
			case d.c.kick <- struct{}{}:
			default:
			}
		}
		return true
	}
	d.c.book(d.key, &d.timing, h)
	h.booked = true
	if signal || !d.state.CompareAndSwap(deferredTaken, deferredWritten) {
		d.handoff <- h // the writer waits for it (takenSignal)
	}
	return true
}

// bypass registers sl's Deferred as if the writer had reached it, without queuing it,
// when nothing earlier on the connection is unwritten (owed counts sl already): its
// Complete then writes it and does its bookkeeping with no goroutine woken — neither
// the writer by the queue nor by the answer. It reports false (queue it) when Complete
// has already run.
func (c *conn) bypass(sl slot) bool {
	if c.owed.Load() != 1 {
		return false
	}
	d := sl.deferred
	d.timing, d.bypassed = sl.timing, true
	c.direct.Store(d)
	if d.state.CompareAndSwap(deferredPending, deferredHead) {
		return true
	}
	d.bypassed = false
	c.direct.Store(nil)
	return false
}

// awaitDirect is the writer before anything it writes: it waits until the Deferred
// the reader registered without queuing it (bypass), if any, is written, and finishes
// what its Complete left. It returns false when the connection closed.
func (c *conn) awaitDirect() bool {
	d := c.direct.Load()
	if d == nil {
		return true
	}
	if s := d.state.Load(); s == deferredPending || s == deferredReady {
		// The reader's bypass is registering d, or has given up on it (Complete came
		// first): nothing of it is the writer's, and the writer holds no slot queued
		// after it (the reader queues none until bypass returns). A kick left over from
		// an earlier Deferred brings the writer here at such a moment; waiting on d's
		// handoff then would wait for ever.
		return true
	}
	if d.signalWriter() {
		c.direct.CompareAndSwap(d, nil)
		return true
	}
	var h deferredHandoff
	select {
	case h = <-d.handoff:
	case <-c.ctx.Done():
		return false
	}
	c.direct.CompareAndSwap(d, nil)
	sl := slot{correlationID: d.correlationID, key: d.key, version: d.version, finish: d.finish, timing: d.timing, deferred: d}
	return c.finishDeferred(&sl, h)
}

// book does a fully written slot's bookkeeping (the writer's written, without the
// close, which a Complete that writes never has).
func (c *conn) book(key int16, timing *RequestTiming, h deferredHandoff) {
	timing.Ready, timing.WriteStart, timing.WriteFinish = h.start, h.start, h.finished
	if observe := c.srv.cfg.ObserveRequest; observe != nil {
		observe(key, *timing)
	}
	c.owed.Add(-1)
	c.touch()
	<-c.tokens
}

// awaitDeferred is the writer at a Deferred slot. When Complete came first it returns
// the response to write as usual; otherwise it waits for Complete's handoff, or, when
// the next slot arrives first (or the queue closes, more false) or the reader kicks
// for a Deferred it registered without queuing (bypass), for Complete to have written
// the slot. next is that slot (hasNext false when none came). ok is false when the
// connection closed.
func (c *conn) awaitDeferred(sl slot) (h deferredHandoff, next slot, more, hasNext, ok bool) {
	d := sl.deferred
	d.timing, d.closeAfter = sl.timing, sl.closeAfter
	if !d.state.CompareAndSwap(deferredPending, deferredHead) {
		// ready: Complete ran before the writer got here
		if d.resp == nil {
			return deferredHandoff{abandon: true}, slot{}, false, false, true
		}
		return deferredHandoff{resp: d.resp}, slot{}, false, false, true
	}
	if testHookWriterAtDeferred != nil {
		testHookWriterAtDeferred(d)
	}
	select {
	case h = <-d.handoff:
		return h, slot{}, false, false, true
	case next, more = <-c.queue:
		hasNext = true
	case <-c.kick:
		// The reader registered the next Deferred without queuing it (bypass, which it
		// does only once this one is booked: Complete wrote it, without waking the
		// writer), and that one's Complete left its write to the writer. Without this
		// case the writer waited here for a queued slot the client, still waiting for
		// that answer, never sent. The kick goes back for writeLoop's awaitDirect; a
		// kick left over from an earlier Deferred does no harm (signalWriter below).
		select {
		case c.kick <- struct{}{}:
		default:
		}
	case <-c.ctx.Done():
		return deferredHandoff{}, slot{}, false, false, false
	}
	// The next slot (or the queue's end, or a bypassed Deferred) came first: it may be
	// written only after this one, which Complete may have written meanwhile.
	if d.signalWriter() {
		return deferredHandoff{done: true, booked: true}, next, more, hasNext, true
	}
	select {
	case h = <-d.handoff:
		return h, next, more, hasNext, true
	case <-c.ctx.Done():
		return deferredHandoff{}, slot{}, false, false, false
	}
}

// testHookWriterAtDeferred, when set by a test, runs on the writer once it waits at a
// Deferred (state head).
var testHookWriterAtDeferred func(*Deferred)

// maxDirectFrame bounds a frame Complete encodes and writes itself: larger ones (fetch
// answers of many records, which leave by sendfile) are left to the writer.
const maxDirectFrame = 64 << 10

// writeDirect prepares resp as writeResponse would and writes as much of it as one
// non-blocking write takes, on the completing goroutine; what is left goes to the
// writer in the handoff.
func (c *conn) writeDirect(d *Deferred, resp kmsg.Response) deferredHandoff {
	return c.writeNonBlocking(d.correlationID, d.key, d.version, d.finish, resp)
}

// writeNonBlocking is writeDirect for the response to request correlationID (key, at
// version, OnResponse function finish) on any goroutine that owns the write side.
func (c *conn) writeNonBlocking(correlationID int32, key, version int16, finish func(kmsg.Response) time.Duration, resp kmsg.Response) deferredHandoff {
	h := deferredHandoff{start: time.Now()}
	if c == nil || resp.Key() != key {
		h.resp = resp // the writer reports a wrong key
		return h
	}
	tc, ok := c.nc.(*net.TCPConn)
	if !ok || !directWriteSupported {
		h.resp = resp
		return h
	}
	c.prepareResponse(version, finish, resp)
	bp := getBuffer()
	if pr, isParts := resp.(PartsResponse); isParts {
		p := getParts()
		if err := buildParts(p, correlationID, pr); err != nil {
			putParts(p)
			putBuffer(bp)
			pr.Release()
			h.err = err
			return h
		}
		if p.Len() > maxDirectFrame {
			putBuffer(bp)
			h.parts, h.pr = p, pr // sendfile: the writer's job
			return h
		}
		flat, err := p.AppendFlat((*bp)[:0])
		putParts(p)
		pr.Release()
		if err != nil {
			putBuffer(bp)
			h.err = err
			return h
		}
		*bp = flat
	} else {
		*bp = appendResponse((*bp)[:0], correlationID, resp)
	}
	n, err := tryWrite(tc, *bp)
	switch {
	case err != nil:
		putBuffer(bp)
		h.err = err
	case n == len(*bp):
		putBuffer(bp)
		h.finished, h.done = time.Now(), true
	default:
		h.buf, h.written = bp, n
	}
	return h
}

// writeNow writes, from the reader goroutine, a response that is ready when the
// reader has it — a handler's Respond, or a Deferred that Complete answered before
// the reader queued it (an acks=all produce on a partition whose ISR is its leader
// alone) — when nothing earlier on the connection is unwritten (owed counts sl
// already), so that the writer is neither woken by the queue nor, on an idle
// machine, a thread by the writer. It writes what one non-blocking write takes, as
// Complete does, and reports true when that was all of it; otherwise it turns sl
// into a handoff for the writer (the rest of the frame, or the whole response) and
// the caller queues it.
func (c *conn) writeNow(sl *slot) bool {
	if sl.closeAfter != nil || c.owed.Load() != 1 {
		return false
	}
	resp := sl.resp
	if d := sl.deferred; d != nil {
		if d.state.Load() != deferredReady || d.resp == nil {
			return false
		}
		resp = d.resp
	}
	if resp == nil {
		return false
	}
	h := c.writeNonBlocking(sl.correlationID, sl.key, sl.version, sl.finish, resp)
	switch {
	case h.done:
		c.book(sl.key, &sl.timing, h)
		return true
	case h.resp != nil:
		// Nothing prepared or written (TLS, no direct writes here, a wrong key): the
		// writer takes the slot as it is, timings and all.
		return false
	}
	sl.resp, sl.deferred, sl.handoff = nil, nil, &h
	return false
}
