package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// header builds a request header (no size) with a null client id.
func header(key, version int16, correlationID int32) []byte {
	b := kbin.AppendInt16(kbin.AppendInt16(nil, key), version)
	return kbin.AppendNullableString(kbin.AppendInt32(b, correlationID), nil)
}

// TestBadInputClosesConnection sends each kind of bad input on its own connection and
// expects that connection closed, while another connection keeps being served.
func TestBadInputClosesConnection(t *testing.T) {
	sizeOnly := func(size int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(size)) }
	tests := []struct {
		name     string
		input    []byte
		halfOpen bool   // close our write side after the input (EOF mid-frame)
		logged   string // expected in the server log
	}{
		{name: "size 2^31-1", input: sizeOnly(math.MaxInt32), logged: "[WARN]  rpc: closing connection"},
		{name: "size -1", input: sizeOnly(-1), logged: "[WARN]  rpc: closing connection"},
		{name: "size min int32", input: sizeOnly(math.MinInt32), logged: "request size out of range"},
		{name: "size below header", input: append(sizeOnly(5), 0, 3, 0, 4, 0), logged: "request size out of range"},
		{name: "size 0", input: sizeOnly(0), logged: "request size out of range"},
		{name: "unknown key", input: withSize(append(header(1000, 0, 1), 0, 0, 0, 0)), logged: "unknown or unserved api key"},
		{name: "unserved key", input: requestFrame(kmsg.NewPtrCreateTopicsRequest(), 1), logged: "CreateTopics"},
		{name: "unsupported version", input: requestFrame(metadataRequest(13, "x"), 1), logged: "unsupported api version"},
		{name: "garbage body", input: withSize(append(header(3, 4, 1), 0x7f, 0xff, 0xff, 0xff, 1, 2)), logged: "malformed request body"},
		{name: "client id past frame", input: withSize(append(header(3, 4, 1)[:8], 0, 50, 'a', 'b')), logged: "malformed request header"},
		{name: "truncated frame then EOF", input: append(sizeOnly(100), header(3, 4, 1)...), halfOpen: true, logged: "connection ended inside a request"},
		{name: "truncated size then EOF", input: []byte{0, 0}, halfOpen: true, logged: "connection ended inside a request"},
	}
	srv := startServer(t, ServerConfig{}, metadataRegistry(echoMetadata)) // MaxRequestBytes 100 MiB
	good := dialRaw(t, srv.addr)
	roundTrip(t, good, 4, 1, "before")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			bad := dialRaw(t, srv.addr)
			writeAll(t, bad, tt.input)
			if tt.halfOpen {
				if err := bad.(*net.TCPConn).CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			expectClosed(t, bad)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
				t.Errorf("allocated %d bytes for a bad frame", grown)
			}
			roundTrip(t, good, 4, int32(100+i), fmt.Sprintf("after-%d", i))
			testwait.For(t, testTimeout, func() error {
				if !strings.Contains(srv.logs.String(), tt.logged) {
					return fmt.Errorf("log lacks %q", tt.logged)
				}
				return nil
			})
		})
	}
	testwait.For(t, testTimeout, func() error {
		if n := srv.numConns(); n != 1 {
			return fmt.Errorf("%d connections open, want only the good one", n)
		}
		return nil
	})
}

func TestIdleTimeout(t *testing.T) {
	const idle = 200 * time.Millisecond
	srv := startServer(t, ServerConfig{IdleTimeout: idle}, metadataRegistry(echoMetadata))
	start := time.Now()
	c := dialRaw(t, srv.addr)
	expectClosed(t, c)
	if elapsed := time.Since(start); elapsed < idle {
		t.Fatalf("closed after %s, before the idle timeout %s", elapsed, idle)
	}
	testwait.For(t, testTimeout, func() error {
		if !strings.Contains(srv.logs.String(), "connection idle") {
			return errors.New("idle close not logged")
		}
		return nil
	})

	// A connection in use is served, then closed once idle.
	c = dialRaw(t, srv.addr)
	roundTrip(t, c, 4, 1, "active")
	expectClosed(t, c)
}

// TestIdleTimeoutWaitsForOwedResponse keeps a response owed for several idle periods:
// the connection stays open, the response arrives, then the idle close happens.
func TestIdleTimeoutWaitsForOwedResponse(t *testing.T) {
	const idle = 100 * time.Millisecond
	laterCh := make(chan chan kmsg.Response, 1)
	srv := startServer(t, ServerConfig{IdleTimeout: idle}, metadataRegistry(func(_ context.Context, req *Request) Result {
		ch := make(chan kmsg.Response, 1)
		laterCh <- ch
		return RespondLater(ch)
	}))
	c := dialRaw(t, srv.addr)
	sendRequest(t, c, metadataRequest(4, "slow"), 5)
	ch := <-laterCh
	testwait.For(t, testTimeout, func() error {
		if n := srv.idleRenewals.Load(); n < 3 {
			return fmt.Errorf("%d idle periods passed with the response owed", n)
		}
		return nil
	})
	resp := kmsg.NewPtrMetadataResponse()
	resp.ClusterID = kmsg.StringPtr("slow")
	ch <- resp
	corr, body := readResponse(t, c)
	if corr != 5 || *parseMetadata(t, body, 4).ClusterID != "slow" {
		t.Fatalf("owed response lost: correlation id %d", corr)
	}
	expectClosed(t, c)
}

// TestHandlerCloseConnection: responses owed before a CloseConnection are written, then
// the connection closes and later requests are never handled.
func TestHandlerCloseConnection(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	laterCh := make(chan chan kmsg.Response, 1)
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(_ context.Context, req *Request) Result {
		tag := requestTag(req)
		mu.Lock()
		seen = append(seen, tag)
		mu.Unlock()
		switch tag {
		case "later":
			ch := make(chan kmsg.Response, 1)
			laterCh <- ch
			return RespondLater(ch)
		case "close":
			return CloseConnection(errors.New("acks=0 produce failed"))
		}
		return Respond(echoResponse(req))
	}))
	c := dialRaw(t, srv.addr)
	var batch []byte
	for i, tag := range []string{"now", "later", "close", "never"} {
		batch = append(batch, requestFrame(metadataRequest(4, tag), int32(i))...)
	}
	writeAll(t, c, batch)
	corr, _ := readResponse(t, c)
	if corr != 0 {
		t.Fatalf("first response has correlation id %d", corr)
	}
	ch := <-laterCh
	ch <- echoResponseFor("later")
	corr, body := readResponse(t, c)
	if corr != 1 || *parseMetadata(t, body, 4).ClusterID != "later" {
		t.Fatalf("owed response: correlation id %d", corr)
	}
	expectClosed(t, c)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "now,later,close" {
		t.Fatalf("handled %v; nothing after the close may run", seen)
	}
	testwait.For(t, testTimeout, func() error {
		if !strings.Contains(srv.logs.String(), "acks=0 produce failed") {
			return errors.New("close reason not logged")
		}
		return nil
	})
}

// echoResponseFor is a Metadata response carrying tag.
func echoResponseFor(tag string) *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	resp.ClusterID = kmsg.StringPtr(tag)
	return resp
}

// TestFaultyHandlersCloseConnection covers results that close the connection: an
// abandoned RespondLater, a panic, a zero Result, a nil response, a response of the
// wrong key. The server keeps serving other connections.
func TestFaultyHandlersCloseConnection(t *testing.T) {
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(_ context.Context, req *Request) Result {
		switch requestTag(req) {
		case "abandon":
			ch := make(chan kmsg.Response)
			close(ch)
			return RespondLater(ch)
		case "nil-later":
			ch := make(chan kmsg.Response, 1)
			ch <- nil
			return RespondLater(ch)
		case "panic":
			panic("handler bug")
		case "zero":
			return Result{}
		case "nil":
			return Respond(nil)
		case "wrong-key":
			return Respond(kmsg.NewPtrProduceResponse())
		}
		return Respond(echoResponse(req))
	}))
	good := dialRaw(t, srv.addr)
	for i, tt := range []struct{ tag, logged string }{
		{"abandon", "delayed response abandoned"},
		{"nil-later", "delayed response abandoned"},
		{"panic", "handler bug"},
		{"zero", "zero Result"},
		{"nil", "Respond(nil)"},
		{"wrong-key", "Produce response to a Metadata request"},
	} {
		c := dialRaw(t, srv.addr)
		sendRequest(t, c, metadataRequest(4, tt.tag), 1)
		expectClosed(t, c)
		roundTrip(t, good, 4, int32(i), "still-serving")
		testwait.For(t, testTimeout, func() error {
			if !strings.Contains(srv.logs.String(), tt.logged) {
				return fmt.Errorf("%s: log lacks %q", tt.tag, tt.logged)
			}
			return nil
		})
	}
}

// TestConnInfo checks the connection description handed to handlers, including the
// client software named by ApiVersions v3+.
func TestConnInfo(t *testing.T) {
	infos := make(chan *ConnInfo, 4)
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(ctx context.Context, req *Request) Result {
		infos <- req.Conn
		return echoMetadata(ctx, req)
	}))
	c := dialRaw(t, srv.addr)
	roundTrip(t, c, 4, 1, "a")
	first := <-infos
	if first.ClientSoftwareName != "" || first.ID == 0 ||
		first.RemoteAddr.String() != c.LocalAddr().String() || first.LocalAddr.String() != srv.addr {
		t.Fatalf("conn info %+v", first)
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "petrel-test", "9.9"
	sendRequest(t, c, av, 2)
	readResponse(t, c)
	roundTrip(t, c, 4, 3, "b")
	second := <-infos
	if second.ClientSoftwareName != "petrel-test" || second.ClientSoftwareVersion != "9.9" || second.ID != first.ID {
		t.Fatalf("conn info after ApiVersions %+v", second)
	}
	if first.ClientSoftwareName != "" {
		t.Fatal("an earlier ConnInfo was modified")
	}
	other := dialRaw(t, srv.addr)
	roundTrip(t, other, 4, 1, "c")
	if third := <-infos; third.ID == first.ID {
		t.Fatalf("two connections share id %d", third.ID)
	}
}
