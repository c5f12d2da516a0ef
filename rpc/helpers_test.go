package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

// runningServers counts the servers started by startServer or startListener and not
// yet closed by their cleanup (the package's tests do not run in parallel).
var runningServers atomic.Int32

// checkNoGoroutineLeak records the goroutine count and, at cleanup (after every later
// cleanup, such as the server's Close), waits until it is back at or below it.
//
// The count is taken with no other test server running: a running server's accept
// goroutine starts a connection's writer after its reader (startConn), so the reader
// may have read and handled a request, and the test gone on to this count, before the
// writer exists; counted later, that writer, alive until its own server closes, reads
// as a leak here. A test with several servers closes each before the next starts (a
// subtest per server).
func checkNoGoroutineLeak(t *testing.T) {
	t.Helper()
	if n := runningServers.Load(); n != 0 {
		t.Fatalf("%d test server(s) still running: close each before starting the next (a subtest per server), or their goroutines skew the leak check", n)
	}
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		testwait.For(t, testTimeout, func() error {
			if n := runtime.NumGoroutine(); n > base {
				return fmt.Errorf("%d goroutines, %d before the test", n, base)
			}
			return nil
		})
	})
}

// testServer is a running Server on 127.0.0.1 with its log.
type testServer struct {
	*Server
	addr string
	logs *testwait.Buffer
}

// startServer serves reg on a fresh 127.0.0.1 port, checks for goroutine leaks, and
// closes the server at cleanup, checking that Serve returned nil.
func startServer(t *testing.T, cfg ServerConfig, reg *Registry) *testServer {
	t.Helper()
	checkNoGoroutineLeak(t)
	logs := &testwait.Buffer{}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(cfg, reg)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	runningServers.Add(1)
	t.Cleanup(func() {
		defer runningServers.Add(-1)
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve returned %v", err)
			}
		case <-time.After(testTimeout):
			t.Error("Serve did not return after Close")
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	testwait.For(t, testTimeout, func() error {
		if s.Addr() == nil {
			return errors.New("Serve has not registered its listener")
		}
		return nil
	})
	return &testServer{Server: s, addr: ln.Addr().String(), logs: logs}
}

// dialRaw opens a raw TCP connection, closed at cleanup.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// requestFrame is a whole request frame, size included, with client id "raw".
func requestFrame(req kmsg.Request, correlationID int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, correlationID)
}

// writeAll writes b or fails the test.
func writeAll(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if err := c.SetWriteDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// sendRequest writes req as a frame.
func sendRequest(t *testing.T, c net.Conn, req kmsg.Request, correlationID int32) {
	t.Helper()
	writeAll(t, c, requestFrame(req, correlationID))
}

// readRawFrame reads one response frame, size prefix included.
func readRawFrame(t *testing.T, c net.Conn) []byte {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("reading response size: %v", err)
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	if _, err := io.ReadFull(c, frame[4:]); err != nil {
		t.Fatalf("reading response: %v", err)
	}
	return frame
}

// readResponse reads one response frame and returns its correlation id and the bytes
// after it.
func readResponse(t *testing.T, c net.Conn) (int32, []byte) {
	t.Helper()
	frame := readRawFrame(t, c)
	return int32(binary.BigEndian.Uint32(frame[4:])), frame[8:]
}

// expectClosed fails unless the server closes c (EOF or reset) without sending more.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	n, err := c.Read(b[:])
	switch {
	case n > 0:
		t.Fatalf("expected the connection to close, got byte %#x", b[0])
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	default:
		t.Fatalf("expected the connection to close, got %v", err)
	}
}

// metadataRequest is a Metadata request naming one topic, used as a tag echoed back by
// echoMetadata.
func metadataRequest(version int16, tag string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr(tag)
	req.Topics = append(req.Topics, topic)
	return req
}

// requestTag returns the first topic name of a Metadata request.
func requestTag(req *Request) string {
	body := req.Body.(*kmsg.MetadataRequest)
	if len(body.Topics) == 0 || body.Topics[0].Topic == nil {
		return ""
	}
	return *body.Topics[0].Topic
}

// echoResponse answers a Metadata request with its tag as ClusterID (v2+).
func echoResponse(req *Request) *kmsg.MetadataResponse {
	resp := req.Body.ResponseKind().(*kmsg.MetadataResponse)
	resp.ClusterID = kmsg.StringPtr(requestTag(req))
	return resp
}

// echoMetadata is a Metadata handler answering at once with echoResponse.
func echoMetadata(_ context.Context, req *Request) Result {
	return Respond(echoResponse(req))
}

// parseMetadata decodes the bytes after a Metadata response's correlation id.
func parseMetadata(t *testing.T, body []byte, version int16) *kmsg.MetadataResponse {
	t.Helper()
	if version >= 9 {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("flexible Metadata v%d response lacks the empty header tag buffer", version)
		}
		body = body[1:]
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = version
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding Metadata v%d response: %v", version, err)
	}
	return resp
}

// roundTrip sends a tagged Metadata request and checks the echoed response.
func roundTrip(t *testing.T, c net.Conn, version int16, correlationID int32, tag string) {
	t.Helper()
	sendRequest(t, c, metadataRequest(version, tag), correlationID)
	corr, body := readResponse(t, c)
	if corr != correlationID {
		t.Fatalf("correlation id %d, want %d", corr, correlationID)
	}
	if got := parseMetadata(t, body, version).ClusterID; got == nil || *got != tag {
		t.Fatalf("response tag %v, want %q", got, tag)
	}
}

// tagIndex parses the number after "t-" in a tag.
func tagIndex(tag string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(tag, "t-"))
	if err != nil {
		return -1
	}
	return i
}

// metadataRegistry serves Metadata 0-12 with h.
func metadataRegistry(h Handler) *Registry {
	reg := NewRegistry()
	reg.Register(3, 0, 12, h)
	return reg
}
