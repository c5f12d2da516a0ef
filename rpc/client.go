package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxResponseBytes caps one response frame read by a Client (1 GiB).
const maxResponseBytes = 1 << 30

// Client is a small Kafka client for broker-to-broker requests: one TCP connection,
// requests pipelined, responses matched to requests in order by correlation id. It
// does no version negotiation: the caller sets every request's version explicitly
// with SetVersion (a request left at version 0 is sent as v0). All methods are safe
// for concurrent use. Any connection failure fails the Client for good; dial a new one.
type Client struct {
	nc net.Conn
	// rd reads responses from nc through a read-ahead buffer: a small response (a
	// follower's fetch answer of a few records) arrives in one read call instead of
	// two; a large one is read into its frame directly. Reader only.
	rd        *bufio.Reader
	formatter *kmsg.RequestFormatter

	// writeSem (capacity 1) serialises writes, so that the order of pending is the
	// order on the wire. Holding it never blocks the reader.
	writeSem chan struct{}
	// nextCorrelationID is guarded by writeSem.
	nextCorrelationID int32

	mu sync.Mutex
	// pending are the calls written and not yet answered, in wire order; guarded by mu.
	pending []*call
	// err is the reason the client failed, nil while it works; guarded by mu.
	err error

	// done is closed when the reader goroutine exits (at once for an inline client).
	done chan struct{}
	// inline: every call reads its own response on its goroutine (DialInline);
	// inlineMu makes the calls one at a time.
	inline   bool
	inlineMu sync.Mutex
}

// call is one request waiting for its response.
type call struct {
	correlationID int32
	// result receives exactly one value; capacity 1, so the reader never blocks on a
	// caller that gave up.
	result chan callResult
}

// callResult is a response body (after the correlation id) or a failure. pooled is
// the body's frame buffer when it came from the frame pools.
type callResult struct {
	body   []byte
	pooled *[]byte
	err    error
}

// Dial connects to a Kafka listener at addr ("host:port"); clientID goes in every
// request header. ctx bounds the dial only.
func Dial(ctx context.Context, addr, clientID string) (*Client, error) {
	var d net.Dialer
	return DialWith(ctx, d.DialContext, addr, clientID)
}

// DialFunc opens a connection, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// DialWith is Dial through dial (tests inject network faults this way).
func DialWith(ctx context.Context, dial DialFunc, addr, clientID string) (*Client, error) {
	return newClient(ctx, dial, addr, clientID, false)
}

// DialInline is DialWith for a client whose every call reads its own response on the
// calling goroutine instead of having a reader goroutine hand it over: one goroutine
// wake-up less per response, for a caller with one request in flight at a time (a
// follower's fetcher). Its calls are made one at a time, and a call whose ctx ends
// before its response arrives fails the client (the response cannot be skipped
// without reading it).
func DialInline(ctx context.Context, dial DialFunc, addr, clientID string) (*Client, error) {
	return newClient(ctx, dial, addr, clientID, true)
}

func newClient(ctx context.Context, dial DialFunc, addr, clientID string, inline bool) (*Client, error) {
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rpc: dial %s: %w", addr, err)
	}
	c := &Client{
		nc:        nc,
		rd:        bufio.NewReaderSize(nc, readAheadSize),
		formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		writeSem:  make(chan struct{}, 1),
		done:      make(chan struct{}),
		inline:    inline,
	}
	if inline {
		close(c.done) // no reader goroutine
	} else {
		go c.readLoop()
	}
	return c, nil
}

// Do sends req at the version the caller set and returns its decoded response. If ctx
// ends first Do returns ctx's error; the connection stays usable, and the late response
// is read and discarded. If ctx ends while req is being written, the connection is
// failed, since a half-written request cannot be taken back. Produce with acks=0 gets
// ErrNoResponseExpected: Kafka never answers it.
func (c *Client) Do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	// The frame is never released: the response's []byte fields may be kept.
	resp, _, err := c.DoPooled(ctx, req)
	return resp, err
}

// ResponseFrame is the pooled buffer a DoPooled response was decoded from.
type ResponseFrame struct{ pooled *[]byte }

// Release hands the buffer back to the frame pools (framepool.go). The response's
// []byte fields (Fetch RecordBatches, for one) alias it and must not be used after;
// call it once, when done with them. The zero ResponseFrame's Release does nothing.
func (f ResponseFrame) Release() { putFrame(f.pooled) }

// DoPooled is Do for a caller that copies what it keeps of the response's []byte
// fields (a follower appending fetched batches to its log): it calls Release on the
// returned frame when done, and the frame buffer is reused. On an error the frame is
// the zero ResponseFrame.
func (c *Client) DoPooled(ctx context.Context, req kmsg.Request) (kmsg.Response, ResponseFrame, error) {
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, ResponseFrame{}, ErrNoResponseExpected
	}
	if c.inline {
		return c.doInline(ctx, req)
	}
	cl := &call{result: make(chan callResult, 1)}
	if err := c.send(ctx, req, cl); err != nil {
		return nil, ResponseFrame{}, err
	}
	var res callResult
	select {
	case res = <-cl.result:
	case <-ctx.Done():
		return nil, ResponseFrame{}, ctx.Err() // the late frame is left to the collector
	}
	if res.err != nil {
		return nil, ResponseFrame{}, res.err
	}
	resp, err := decodeResponse(req, res.body)
	if err != nil {
		putFrame(res.pooled)
		return nil, ResponseFrame{}, err
	}
	return resp, ResponseFrame{res.pooled}, nil
}

// send writes req and queues cl for its response.
func (c *Client) send(ctx context.Context, req kmsg.Request, cl *call) error {
	select {
	case c.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.writeSem }()

	cl.correlationID = c.nextCorrelationID
	c.nextCorrelationID++
	if c.nextCorrelationID < 0 {
		c.nextCorrelationID = 0
	}
	bp := getBuffer() // the frame is written before send returns
	defer putBuffer(bp)
	*bp = c.formatter.AppendRequest((*bp)[:0], req, cl.correlationID)
	frame := *bp

	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.pending = append(c.pending, cl) // before writing: the response may come at once
	c.mu.Unlock()

	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.nc.SetWriteDeadline(aLongTimeAgo)
		close(fired)
	})
	_, err := c.nc.Write(frame)
	if !stop() {
		<-fired
		_ = c.nc.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("rpc: writing %s: %w", kmsg.NameForKey(req.Key()), ctx.Err())
		} else {
			err = fmt.Errorf("rpc: writing %s: %w", kmsg.NameForKey(req.Key()), err)
		}
		c.fail(err)
		return err
	}
	return nil
}

// decodeResponse decodes body (a response frame after its correlation id) as the
// response to req: flexible responses other than ApiVersions skip the header tag
// buffer, and an ApiVersions reply with UNSUPPORTED_VERSION is read in the v0 layout.
func decodeResponse(req kmsg.Request, body []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		rd := kbin.Reader{Src: body}
		kmsg.SkipTags(&rd)
		if !rd.Ok() {
			return nil, fmt.Errorf("%w: %s header tags", ErrMalformedResponse, kmsg.NameForKey(resp.Key()))
		}
		body = rd.Src
	}
	if resp.Key() == apiVersionsKey && len(body) >= 2 && int16(binary.BigEndian.Uint16(body)) == kerr.UnsupportedVersion.Code {
		resp.SetVersion(0)
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %w", ErrMalformedResponse, kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return resp, nil
}

// readLoop reads responses and hands each to the oldest pending call.
func (c *Client) readLoop() {
	defer close(c.done)
	for {
		cl, res, err := c.readOne()
		if err != nil {
			c.fail(err)
			return
		}
		cl.result <- res
	}
}

// readOne reads the next response and takes the oldest pending call, which it must
// answer; an error fails the client (after the call, if any, got ErrCorrelationMismatch).
func (c *Client) readOne() (*call, callResult, error) {
	var sizeBuf [4]byte
	if _, err := io.ReadFull(c.rd, sizeBuf[:]); err != nil {
		return nil, callResult{}, fmt.Errorf("rpc: reading response: %w", err)
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 4 || size > maxResponseBytes {
		return nil, callResult{}, fmt.Errorf("%w: frame size %d", ErrMalformedResponse, size)
	}
	var frame []byte
	pooled := getFrame(int(size))
	if pooled != nil {
		frame = *pooled
	} else {
		frame = make([]byte, size)
	}
	if _, err := io.ReadFull(c.rd, frame); err != nil {
		putFrame(pooled)
		return nil, callResult{}, fmt.Errorf("rpc: reading response: %w", err)
	}
	correlationID := int32(binary.BigEndian.Uint32(frame))
	c.mu.Lock()
	var cl *call
	if len(c.pending) > 0 {
		cl = c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
	}
	c.mu.Unlock()
	if cl == nil || cl.correlationID != correlationID {
		want := "none"
		if cl != nil {
			want = fmt.Sprint(cl.correlationID)
			cl.result <- callResult{err: ErrCorrelationMismatch}
		}
		putFrame(pooled)
		return nil, callResult{}, fmt.Errorf("%w: got %d, expected %s", ErrCorrelationMismatch, correlationID, want)
	}
	return cl, callResult{body: frame[4:], pooled: pooled}, nil
}

// doInline is DoPooled on a DialInline client: it sends req and reads the response
// itself. ctx ending first fails the client.
func (c *Client) doInline(ctx context.Context, req kmsg.Request) (kmsg.Response, ResponseFrame, error) {
	c.inlineMu.Lock()
	defer c.inlineMu.Unlock()
	cl := &call{result: make(chan callResult, 1)}
	if err := c.send(ctx, req, cl); err != nil {
		return nil, ResponseFrame{}, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetReadDeadline(aLongTimeAgo) })
	got, res, err := c.readOne()
	if !stop() && err == nil {
		// ctx ended as the read finished: the deadline may land on the next call's read.
		err = ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("rpc: reading %s: %w", kmsg.NameForKey(req.Key()), ctx.Err())
		}
		if got != nil {
			putFrame(res.pooled)
		}
		c.fail(err)
		if ctx.Err() != nil {
			return nil, ResponseFrame{}, ctx.Err()
		}
		return nil, ResponseFrame{}, c.Err() // the first failure: ErrClientClosed after Close
	}
	if got != cl { // only this call is pending
		putFrame(res.pooled)
		err := fmt.Errorf("%w: an answer for another call", ErrCorrelationMismatch)
		c.fail(err)
		return nil, ResponseFrame{}, err
	}
	resp, err := decodeResponse(req, res.body)
	if err != nil {
		putFrame(res.pooled)
		return nil, ResponseFrame{}, err
	}
	return resp, ResponseFrame{res.pooled}, nil
}

// fail records err as the client's failure (the first one wins), closes the
// connection and fails every pending call.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	err = c.err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	_ = c.nc.Close()
	for _, cl := range pending {
		cl.result <- callResult{err: err}
	}
}

// Close closes the connection, fails calls still waiting with ErrClientClosed and
// waits for the reader goroutine. It is idempotent and returns nil.
func (c *Client) Close() error {
	c.fail(ErrClientClosed)
	<-c.done
	return nil
}

// Err returns why the client failed, or nil while it works.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
