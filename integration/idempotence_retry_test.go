package integration

// A real client retry: kgo's connection loses the response to a Produce the broker has
// already written, kgo sends the same batch again (same producer id, epoch and
// sequence), and the broker answers the duplicate with the original offsets: every
// record once, no gap, no copy.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errResponseDropped is what a client reads instead of a dropped Produce response.
var errResponseDropped = errors.New("test: produce response dropped")

// responseDropper wraps a client's connections; the first Produce response to arrive
// on any of them is read whole (so the broker has handled the request) and then
// replaced by a broken connection.
type responseDropper struct {
	dropped atomic.Int32
}

func (d *responseDropper) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &droppingConn{Conn: c, d: d}, nil
}

// droppingConn remembers the api key of each request written, in order, and hands
// responses to the client a whole frame at a time, matched to them in order.
type droppingConn struct {
	net.Conn
	d       *responseDropper
	mu      sync.Mutex
	keys    []int16 // api keys of requests whose responses have not been read
	pending []byte  // the rest of the frame being delivered
}

func (c *droppingConn) Write(p []byte) (int, error) {
	// kgo writes each request with one Write: size, api key, ...
	if len(p) >= 6 {
		c.mu.Lock()
		c.keys = append(c.keys, int16(binary.BigEndian.Uint16(p[4:6])))
		c.mu.Unlock()
	}
	return c.Conn.Write(p)
}

func (c *droppingConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		var size [4]byte
		if _, err := io.ReadFull(c.Conn, size[:]); err != nil {
			return 0, err
		}
		frame := make([]byte, 4+int(binary.BigEndian.Uint32(size[:])))
		copy(frame, size[:])
		if _, err := io.ReadFull(c.Conn, frame[4:]); err != nil {
			return 0, err
		}
		c.mu.Lock()
		key := int16(-1)
		if len(c.keys) > 0 {
			key, c.keys = c.keys[0], c.keys[1:]
		}
		c.mu.Unlock()
		if key == int16(kmsg.Produce) && c.d.dropped.CompareAndSwap(0, 1) {
			c.Conn.Close()
			return 0, errResponseDropped
		}
		c.pending = frame
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func TestIdempotence_ClientRetryAfterLostResponse(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	const topic = "idem-lost-response"
	c.CreateTopic(t, topic, 1, nil)
	d := &responseDropper{}
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.Dialer(d.dial), kgo.RequestRetries(10))
	const n = 20
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r := kgo.StringRecord(fmt.Sprintf("lost-%05d", i))
		err := cl.ProduceSync(ctx, r).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.Offset != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d", i, r.Offset)
		}
	}
	if d.dropped.Load() != 1 {
		t.Fatal("no produce response was dropped: the test did not force a retry")
	}
	consumeExactlyOnce(t, c, topic, "lost-%05d", n)
}
