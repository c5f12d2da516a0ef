package perf

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawFetchSlack is how far a Fetch response frame may exceed fetch.max.bytes (the
// frame's own fields, and the one batch a broker sends even when it is larger).
const rawFetchSlack = 16 << 20

// rawFetchConn is `perf fetch`'s own connection to one leader: Fetch requests written
// and read one at a time, every response read into the same buffer, so that the
// client side costs one copy out of the socket and nothing else. PLAINTEXT only.
type rawFetchConn struct {
	nc            net.Conn
	version       int16
	formatter     *kmsg.RequestFormatter
	correlationID int32
	out           []byte // the request frame, reused
	in            []byte // the response frame, reused; RecordBatches alias it
}

// dialRawFetch connects to l's leader.
func dialRawFetch(ctx context.Context, l *rawLeader, timeout time.Duration) (*rawFetchConn, error) {
	d := net.Dialer{Timeout: min(timeout, 5*time.Second)}
	nc, err := d.DialContext(ctx, "tcp", l.addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to broker %d at %s: %w", l.broker, l.addr, err)
	}
	return &rawFetchConn{nc: nc, version: l.fetchVersion, formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID("petrel-cli"))}, nil
}

func (c *rawFetchConn) close() { _ = c.nc.Close() }

// fetch sends req and reads its response within timeout. The response's record
// batches are valid until the next call.
func (c *rawFetchConn) fetch(req *kmsg.FetchRequest, sizes fetchSizes, timeout time.Duration) (*kmsg.FetchResponse, error) {
	req.SetVersion(c.version)
	c.correlationID++
	c.out = c.formatter.AppendRequest(c.out[:0], req, c.correlationID)
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(c.out); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	n := int64(int32(binary.BigEndian.Uint32(size[:])))
	if n < 4 || n > int64(sizes.maxBytes)+rawFetchSlack {
		return nil, fmt.Errorf("response frame of %d bytes (fetch.max.bytes is %d)", n, sizes.maxBytes)
	}
	if int64(cap(c.in)) < n {
		c.in = make([]byte, n)
	}
	frame := c.in[:n]
	if _, err := io.ReadFull(c.nc, frame); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != c.correlationID {
		return nil, fmt.Errorf("response correlation id %d, want %d", got, c.correlationID)
	}
	body := kbin.Reader{Src: frame[4:]}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if resp.IsFlexible() {
		kmsg.SkipTags(&body) // the response header's tagged fields
	}
	if err := body.Complete(); err != nil {
		return nil, fmt.Errorf("response header: %w", err)
	}
	if err := resp.ReadFrom(body.Src); err != nil {
		return nil, fmt.Errorf("decoding the Fetch response: %w", err)
	}
	return resp, nil
}
