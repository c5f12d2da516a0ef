package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aLongTimeAgo is a read deadline in the past: it wakes a blocked Read at once.
var aLongTimeAgo = time.Unix(1, 0)

// slot is one owed response, queued by the reader in request order.
type slot struct {
	correlationID int32
	key           int16
	// version is the version the response is encoded at: the request's, or 0 for the
	// ApiVersions downgrade reply.
	version int16
	// Exactly one of resp, later, deferred, handoff and closeReason is set.
	resp        kmsg.Response
	later       <-chan kmsg.Response
	deferred    *Deferred
	closeReason error
	// handoff is what the reader's writeNow could not write at once.
	handoff *deferredHandoff
	// closeAfter, when set, closes the connection for this reason once the response is
	// written (a failed authentication).
	closeAfter error
	// timing is filled in as the request goes (ServerConfig.ObserveRequest).
	timing RequestTiming
	// finish is Result.OnResponse's function, or nil.
	finish func(kmsg.Response) time.Duration
}

// conn is one client connection: a reader goroutine that reads frames, decodes them
// and runs handlers in order, and a writer goroutine that writes responses in the same
// order. The reader owns the read side of nc; the writer owns the write side.
type conn struct {
	srv *Server
	nc  net.Conn
	log hclog.Logger

	// ctx is handed to handlers; cancel runs in close.
	ctx    context.Context
	cancel context.CancelFunc

	// info is put on every request. It is replaced, never modified, when an
	// ApiVersions v3+ request names the client software. Reader goroutine only.
	info *ConnInfo

	// queue carries owed responses from reader to writer in request order. Its
	// capacity is MaxInflight and the reader holds a token per entry, so a send never
	// blocks. The reader closes it when it stops for Shutdown.
	queue chan slot
	// tokens bounds owed responses: the reader puts one before reading each frame (and
	// blocks when MaxInflight are owed), the writer takes one after writing a response,
	// the reader takes its own back for NoResponse.
	tokens chan struct{}
	// owed counts queued responses not yet written.
	owed atomic.Int64
	// lastActive is the UnixNano time of the last frame read or response written.
	lastActive atomic.Int64

	// stop is closed by stopReading: the reader stops at the next frame boundary.
	stop     chan struct{}
	stopOnce sync.Once
	// done is closed once the connection is closed.
	done      chan struct{}
	closeOnce sync.Once

	// direct is the Deferred the reader registered without queuing it (bypass): the
	// writer must see it written before it writes anything after it. kick (capacity
	// 1) wakes the writer when that Deferred's Complete could not write it all.
	direct atomic.Pointer[Deferred]
	kick   chan struct{}

	// mutedUntil is the UnixNano time until which the reader reads no request: a
	// client quota throttle (Result.OnResponse), set by the writer.
	mutedUntil atomic.Int64

	// clientID is the previous request's client id, shared by the next request when
	// equal. Reader goroutine only.
	clientID *string

	// sizeBuf holds a frame's size prefix. Reader goroutine only.
	sizeBuf [4]byte
	// rd reads nc, as the TLS handshake left it, through a read-ahead buffer
	// (readFull). Reader goroutine only.
	rd *bufio.Reader

	// security is the listener's TLS and SASL state (authn.go). Reader goroutine only.
	security connSecurity
	// release, when set, gives the connection back to its listener's Limiter; set
	// before the goroutines start, called once by close.
	release func()
}

// newConn prepares a connection; the caller starts readLoop and writeLoop.
func newConn(s *Server, nc net.Conn, id uint64) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	c := &conn{
		srv:    s,
		nc:     nc,
		log:    s.log.With("conn", id, "remote", nc.RemoteAddr().String()),
		ctx:    ctx,
		cancel: cancel,
		info:   &ConnInfo{ID: id, RemoteAddr: nc.RemoteAddr(), LocalAddr: nc.LocalAddr(), Principal: AnonymousPrincipal, ListenerName: "PLAINTEXT"},
		queue:  make(chan slot, s.cfg.MaxInflight),
		tokens: make(chan struct{}, s.cfg.MaxInflight),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		kick:   make(chan struct{}, 1),
	}
	c.touch()
	return c
}

// readLoop is the reader goroutine.
func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	err := c.handshakeTLS()
	if err == nil {
		// After the handshake: a TLS listener's nc is the tls.Conn (setListener).
		c.rd = bufio.NewReaderSize(c.nc, readAheadSize)
		err = c.serveRequests()
	}
	switch {
	case errors.Is(err, errStopped):
		close(c.queue) // the writer writes what is owed, then closes
	case errors.Is(err, errHandedToWriter):
		// The writer closes the connection when it reaches the queued close.
	default:
		c.close(err)
	}
}

// serveRequests reads, decodes and dispatches requests until an error or a stop.
func (c *conn) serveRequests() error {
	for {
		select {
		case c.tokens <- struct{}{}:
		case <-c.stop:
			return errStopped
		case <-c.ctx.Done():
			return net.ErrClosed // already closed; close below is a no-op
		}
		if err := c.waitUnmuted(); err != nil {
			return err
		}
		frame, pooled, err := c.readFrame()
		if err != nil {
			return err
		}
		received := time.Now()
		weight := min(int64(len(frame)), c.srv.cfg.QueuedMaxRequestBytes)
		if err := c.checkPreAuthKey(frame); err != nil {
			c.srv.budget.Release(weight)
			return err
		}
		req, err := decodeRequestAfter(frame, c.srv.reg, c.clientID)
		if err != nil {
			c.srv.budget.Release(weight)
			return err
		}
		c.clientID = req.ClientID
		req.Conn = c.info
		req.conn = c
		res, gated := c.authenticate(req)
		if gated && res.kind == resultInvalid {
			c.srv.budget.Release(weight)
			return fmt.Errorf("%w: %s before authentication", ErrUnauthenticated, kmsg.NameForKey(req.Key))
		}
		if c.log.IsTrace() {
			c.log.Trace("request", "api", kmsg.NameForKey(req.Key), "version", req.Version, "correlation_id", req.CorrelationID)
		}
		started := time.Now()
		if !gated {
			res = c.dispatch(req)
		}
		handled := time.Now()
		if c.srv.reg.releasesFrame(req.Key) {
			// The handler is done with the frame (framepool.go: the ownership rule).
			putFrame(pooled)
		}
		c.srv.budget.Release(weight)
		sl := slot{correlationID: req.CorrelationID, key: req.Key, version: req.Version,
			timing: RequestTiming{Received: received, Started: started, Handled: handled, Ready: handled}}
		if req.Key == apiVersionsKey && req.Version > apiVersionsMaxVersion {
			sl.version = 0
		}
		switch res.kind {
		case resultNone:
			<-c.tokens
			if observe := c.srv.cfg.ObserveRequest; observe != nil {
				sl.timing.WriteStart, sl.timing.WriteFinish = handled, handled
				observe(req.Key, sl.timing)
			}
			continue
		case resultRespond:
			sl.resp, sl.finish, sl.closeAfter = res.resp, res.finish, res.closeAfter
		case resultLater:
			sl.later, sl.deferred, sl.finish, sl.closeAfter = res.later, res.deferred, res.finish, res.closeAfter
			if sl.deferred != nil {
				sl.deferred.finish = res.finish // before the writer can reach it
			}
		case resultClose:
			sl.closeReason = res.err
		default:
			sl.closeReason = fmt.Errorf("%w: zero Result from the %s handler", ErrBadResult, kmsg.NameForKey(req.Key))
		}
		c.owed.Add(1)
		if sl.deferred != nil && sl.closeAfter == nil && c.bypass(sl) {
			continue // its Complete writes it (deferred.go)
		}
		if c.writeNow(&sl) {
			continue // written here (deferred.go)
		}
		c.queue <- sl
		if sl.closeReason != nil || sl.closeAfter != nil {
			return errHandedToWriter
		}
	}
}

// dispatch runs the handler of req (ApiVersions is built in), turning a panic into a
// connection close.
func (c *conn) dispatch(req *Request) (res Result) {
	if req.Key == apiVersionsKey {
		return c.apiVersions(req)
	}
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panicked", "api", kmsg.NameForKey(req.Key), "version", req.Version,
				"panic", r, "stack", string(debug.Stack()))
			res = Result{kind: resultClose, err: fmt.Errorf("%w: %s: %v", ErrHandlerPanic, kmsg.NameForKey(req.Key), r)}
		}
	}()
	return c.srv.reg.handler(req.Key)(c.ctx, req)
}

// apiVersions answers ApiVersions from the registry, or with the KIP-511 downgrade
// reply above version 4, and records the client software of v3+ requests.
func (c *conn) apiVersions(req *Request) Result {
	if req.Version > apiVersionsMaxVersion {
		return Respond(downgradeResponse())
	}
	body := req.Body.(*kmsg.ApiVersionsRequest)
	if req.Version >= 3 && (body.ClientSoftwareName != c.info.ClientSoftwareName ||
		body.ClientSoftwareVersion != c.info.ClientSoftwareVersion) {
		info := *c.info
		info.ClientSoftwareName, info.ClientSoftwareVersion = body.ClientSoftwareName, body.ClientSoftwareVersion
		c.info = &info
		c.log.Debug("client software", "name", info.ClientSoftwareName, "version", info.ClientSoftwareVersion)
	}
	var software string
	if req.Version >= 3 {
		software = body.ClientSoftwareName
	}
	return Respond(c.srv.reg.apiVersionsResponseFor(req.Version, software))
}

// waitUnmuted waits until a client quota throttle has passed, or the connection
// stops or closes.
func (c *conn) waitUnmuted() error {
	until := c.mutedUntil.Load()
	if until == 0 {
		return nil
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		c.touch()
		return nil
	case <-c.stop:
		return errStopped
	case <-c.ctx.Done():
		return net.ErrClosed
	}
}

// initialFrameBuffer is the first allocation for a request body; larger bodies grow as
// their bytes arrive.
const initialFrameBuffer = 1 << 20

// readFrame reads one size-prefixed request. The size is checked before anything is
// allocated. A frame of up to maxPooledFrame bytes is read into buffers from the frame
// pools, and pooled is then its buffer, to be released only as framepool.go's
// ownership rule says; a larger one gets fresh buffers. Decoded []byte fields alias
// the frame.
func (c *conn) readFrame() (frame []byte, pooled *[]byte, err error) {
	if err := c.readFull(c.sizeBuf[:], true); err != nil {
		return nil, nil, err
	}
	size := int32(binary.BigEndian.Uint32(c.sizeBuf[:]))
	if limit, preAuth := c.maxRequestBytes(); size < minRequestHeaderSize || size > limit {
		when := ""
		if preAuth {
			when = " before authentication (sasl.server.max.receive.size)"
		}
		return nil, nil, fmt.Errorf("%w: %d bytes%s (allowed %d-%d)", ErrFrameSize, size, when, minRequestHeaderSize, limit)
	}
	if frame, pooled, err = c.readBody(int(size)); err != nil {
		return nil, nil, err
	}
	// A request that arrived while the connection is muted by a quota throttle waits
	// here, before it takes any of the budget.
	if err := c.waitUnmuted(); err != nil {
		putFrame(pooled)
		return nil, nil, err
	}
	weight := min(int64(size), c.srv.cfg.QueuedMaxRequestBytes)
	if err := c.srv.budget.Acquire(c.ctx, weight); err != nil {
		putFrame(pooled)
		return nil, nil, err
	}
	c.touch()
	return frame, pooled, nil
}

// readBody reads a frame body of size bytes in chunks that grow with what arrives
// (from initialFrameBuffer, doubling), so that a client announcing a large frame and
// stalling holds memory only for about the bytes it sent. The budget
// (QueuedMaxRequestBytes) is taken once the frame is complete, for its decoding and
// handling: a stalled connection holds none of it. Up to maxPooledFrame the chunks are
// pooled buffers (each outgrown one goes back at once) and pooled is the last.
func (c *conn) readBody(size int) (frame []byte, pooled *[]byte, err error) {
	grow := func(n int) {
		if p := getFrame(n); p != nil {
			next := append((*p)[:0], frame...)
			putFrame(pooled)
			frame, pooled = next, p
			return
		}
		frame = append(make([]byte, 0, n), frame...) // a fresh array: pooled is released
		putFrame(pooled)
		pooled = nil
	}
	grow(min(size, initialFrameBuffer))
	for len(frame) < size {
		if len(frame) == cap(frame) {
			grow(min(size, 2*cap(frame)))
		}
		chunk := frame[len(frame):min(cap(frame), size)]
		if err := c.readFull(chunk, false); err != nil {
			putFrame(pooled)
			return nil, nil, err
		}
		frame = frame[:len(frame)+len(chunk)]
	}
	return frame, pooled, nil
}

// readFull fills buf, applying the idle rules. frameStart marks the size prefix: only
// there may the connection wait indefinitely, as long as responses are owed or
// something happened within IdleTimeout. Elsewhere a read that makes no progress for
// IdleTimeout fails. It returns io.EOF only for a clean end between frames, and
// errStopped once stopReading was called.
//
// Reads go through the connection's read-ahead buffer (a bufio.Reader): a frame of up
// to its size — the size prefix and the body of a produce or fetch request — arrives
// in one read call instead of two (and the call that finds the socket empty), with
// one deadline set instead of two; bytes of the next frames that came with it wait
// there. A part already buffered whole is taken without a deadline.
func (c *conn) readFull(buf []byte, frameStart bool) error {
	if c.rd.Buffered() >= len(buf) {
		_, _ = io.ReadFull(c.rd, buf) // from the buffer: cannot fail
		if frameStart && c.stopping() {
			return errStopped
		}
		return nil
	}
	idle := c.srv.cfg.IdleTimeout
	if err := c.setReadDeadline(time.Now().Add(idle)); err != nil {
		return err
	}
	got, mark := 0, 0 // mark is got when the deadline was last set
	for got < len(buf) {
		n, err := c.rd.Read(buf[got:])
		got += n
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			if errors.Is(err, io.EOF) {
				if frameStart && got == 0 {
					return io.EOF
				}
				return fmt.Errorf("%w: %d of %d bytes", ErrTruncatedFrame, got, len(buf))
			}
			return err
		}
		if c.stopping() {
			return errStopped
		}
		now := time.Now()
		var next time.Time
		switch {
		case got > mark:
			next = now.Add(idle)
		case frameStart && got == 0 && c.owed.Load() > 0:
			c.srv.idleRenewals.Add(1)
			next = now.Add(idle)
		case frameStart && got == 0:
			last := time.Unix(0, c.lastActive.Load())
			if now.Sub(last) >= idle {
				return fmt.Errorf("%w: nothing read or owed for %s", ErrIdleTimeout, idle)
			}
			next = last.Add(idle)
		default:
			return fmt.Errorf("%w: request stalled after %d of %d bytes", ErrIdleTimeout, got, len(buf))
		}
		mark = got
		if err := c.setReadDeadline(next); err != nil {
			return err
		}
	}
	return nil
}

// readAheadSize is the size of a connection's (and a Client's) read-ahead buffer: a
// 1 KiB record's produce or fetch request, or a follower's fetch answer of it, fits it
// whole; a larger read goes straight to its frame.
const readAheadSize = 4 << 10

// setReadDeadline sets the read deadline, then reports errStopped if stopReading has
// run. Checking after setting means a concurrent stopReading is never missed: either
// its past deadline lands last, or this check sees stop closed.
func (c *conn) setReadDeadline(t time.Time) error {
	if err := c.nc.SetReadDeadline(t); err != nil {
		return err
	}
	if c.stopping() {
		return errStopped
	}
	return nil
}

// stopReading makes the reader stop at the next frame boundary (Shutdown); a request
// half-read is dropped. Owed responses are still written.
func (c *conn) stopReading() {
	c.stopOnce.Do(func() { close(c.stop) })
	_ = c.nc.SetReadDeadline(aLongTimeAgo)
}

// stopping reports whether stopReading has run.
func (c *conn) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// touch records activity for the idle timeout.
func (c *conn) touch() {
	c.lastActive.Store(time.Now().UnixNano())
}

// writeLoop is the writer goroutine: it writes owed responses in request order,
// waiting on RespondLater channels in turn.
func (c *conn) writeLoop() {
	defer c.srv.wg.Done()
	var next slot // a slot read while waiting at a Deferred (awaitDeferred)
	var hasNext, nextOK bool
	for {
		var sl slot
		var ok bool
		if hasNext {
			sl, ok, hasNext = next, nextOK, false
		} else {
			select {
			case sl, ok = <-c.queue:
			case <-c.kick:
				if !c.awaitDirect() {
					return
				}
				continue
			case <-c.ctx.Done():
				return
			}
		}
		// Nothing is written before the Deferred the reader did not queue.
		if !c.awaitDirect() {
			return
		}
		if !ok {
			c.close(errDrained)
			return
		}
		if sl.closeReason != nil {
			c.close(sl.closeReason)
			return
		}
		if testHookWriterSlot != nil {
			testHookWriterSlot()
		}
		resp := sl.resp
		if sl.handoff != nil {
			if !c.finishDeferred(&sl, *sl.handoff) {
				return
			}
			continue
		}
		if sl.deferred != nil {
			h, n, more, got, ok := c.awaitDeferred(sl)
			if !ok {
				return
			}
			next, nextOK, hasNext = n, more, got
			if !c.finishDeferred(&sl, h) {
				return
			}
			continue
		}
		if sl.later != nil {
			select {
			case r, ok := <-sl.later:
				if !ok || r == nil {
					c.close(fmt.Errorf("%w: %s correlation id %d", ErrResponseAbandoned, kmsg.NameForKey(sl.key), sl.correlationID))
					return
				}
				resp = r
				sl.timing.Ready = time.Now()
			case <-c.ctx.Done():
				return
			}
		}
		observe := c.srv.cfg.ObserveRequest
		if observe != nil {
			sl.timing.WriteStart = time.Now()
		}
		if err := c.writeResponse(sl, resp); err != nil {
			c.close(err)
			return
		}
		if observe != nil {
			sl.timing.WriteFinish = time.Now()
			observe(sl.key, sl.timing)
		}
		if !c.written(sl) {
			return
		}
	}
}

// testHookWriterSlot, when set by a test, runs on the writer for every slot it takes.
var testHookWriterSlot func()

// written ends a response's slot once it is written: the close it asks for, or the
// bookkeeping of owed responses. It returns false when the connection closed.
func (c *conn) written(sl slot) bool {
	if sl.closeAfter != nil {
		c.close(sl.closeAfter)
		return false
	}
	c.owed.Add(-1)
	c.touch()
	<-c.tokens
	return true
}

// finishDeferred does what a Deferred's Complete left to the writer (deferred.go):
// nothing but the bookkeeping when Complete wrote the whole frame, the rest of the
// frame, or the whole response. It returns false when the connection closed.
func (c *conn) finishDeferred(sl *slot, h deferredHandoff) bool {
	observe := c.srv.cfg.ObserveRequest
	switch {
	case h.abandon:
		c.close(fmt.Errorf("%w: %s correlation id %d", ErrResponseAbandoned, kmsg.NameForKey(sl.key), sl.correlationID))
		return false
	case h.err != nil:
		c.close(h.err)
		return false
	case h.resp != nil:
		sl.timing.Ready = time.Now()
		sl.timing.WriteStart = sl.timing.Ready
		if err := c.writeResponse(*sl, h.resp); err != nil {
			c.close(err)
			return false
		}
		sl.timing.WriteFinish = time.Now()
	case h.parts != nil:
		sl.timing.Ready, sl.timing.WriteStart = h.start, h.start
		err := c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
		if err == nil {
			err = writeParts(c.nc, h.parts)
		}
		h.pr.Release()
		putParts(h.parts)
		if err != nil {
			c.close(err)
			return false
		}
		sl.timing.WriteFinish = time.Now()
	case h.buf != nil:
		sl.timing.Ready, sl.timing.WriteStart = h.start, h.start
		err := c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
		if err == nil {
			_, err = c.nc.Write((*h.buf)[h.written:])
		}
		putBuffer(h.buf)
		if err != nil {
			c.close(err)
			return false
		}
		sl.timing.WriteFinish = time.Now()
	case h.booked: // written whole and booked by Complete
		return true
	default: // written whole by Complete
		sl.timing.Ready, sl.timing.WriteStart, sl.timing.WriteFinish = h.start, h.start, h.finished
	}
	if observe != nil {
		observe(sl.key, sl.timing)
	}
	return c.written(*sl)
}

// writeResponse encodes resp at the slot's version with throttle 0 (or the throttle
// its OnResponse function asks for, muting the connection) and writes it.
func (c *conn) writeResponse(sl slot, resp kmsg.Response) error {
	if resp.Key() != sl.key {
		return fmt.Errorf("%w: %s response to a %s request", ErrResponseKey, kmsg.NameForKey(resp.Key()), kmsg.NameForKey(sl.key))
	}
	c.prepareResponse(sl.version, sl.finish, resp)
	if pr, ok := resp.(PartsResponse); ok {
		return c.writeParts(sl, pr)
	}
	bp := getBuffer()
	defer putBuffer(bp)
	*bp = appendResponse((*bp)[:0], sl.correlationID, resp)
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout)); err != nil {
		return err
	}
	_, err := c.nc.Write(*bp)
	return err
}

// prepareResponse sets resp's version and its throttle: 0, or what the OnResponse
// function finish asks for, which also mutes the connection.
func (c *conn) prepareResponse(version int16, finish func(kmsg.Response) time.Duration, resp kmsg.Response) {
	resp.SetVersion(version)
	var throttle time.Duration
	if finish != nil {
		throttle = max(finish(resp), 0)
	}
	if t, ok := resp.(kmsg.SetThrottleResponse); ok {
		t.SetThrottle(int32(min(throttle.Milliseconds(), 1<<31-1)))
	}
	if throttle > 0 {
		c.mutedUntil.Store(time.Now().Add(throttle).UnixNano())
	}
}

// writeParts writes a response made of bytes and file sections (parts.go, send.go),
// then releases it.
func (c *conn) writeParts(sl slot, pr PartsResponse) error {
	defer pr.Release()
	p := getParts()
	defer putParts(p)
	if err := buildParts(p, sl.correlationID, pr); err != nil {
		return err
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout)); err != nil {
		return err
	}
	return writeParts(c.nc, p)
}

// close closes the connection once: handlers' ctx is cancelled, owed responses are
// dropped, and reason is logged at a level matching its cause.
func (c *conn) close(reason error) {
	c.closeOnce.Do(func() {
		c.logClose(reason)
		c.cancel()
		_ = c.nc.Close()
		c.srv.forgetConn(c)
		if c.release != nil {
			c.release()
		}
		close(c.done)
	})
}

// logClose logs why the connection closed: programming errors at Error, client
// protocol violations and handler closes at Warn, idle and torn requests at Info, the
// ordinary ends at Debug.
func (c *conn) logClose(reason error) {
	isAny := func(targets ...error) bool {
		for _, t := range targets {
			if errors.Is(reason, t) {
				return true
			}
		}
		return false
	}
	switch {
	case isAny(ErrHandlerPanic, ErrBadResult, ErrResponseKey, ErrShortSection):
		c.log.Error("closing connection", "reason", reason)
	case isAny(ErrFrameSize, ErrMalformedHeader, ErrUnauthenticated, ErrAuthenticationFailed, ErrUnknownKey, ErrUnsupportedVersion, ErrMalformedRequest,
		ErrClosedByHandler, ErrResponseAbandoned):
		c.log.Warn("closing connection", "reason", reason)
	case isAny(ErrIdleTimeout, ErrTruncatedFrame):
		c.log.Info("closing connection", "reason", reason)
	default:
		c.log.Debug("connection closed", "reason", reason)
	}
}
