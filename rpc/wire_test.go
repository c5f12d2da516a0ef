package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApiVersionsDowngradeBytes(t *testing.T) {
	srv := startServer(t, ServerConfig{}, metadataRegistry(echoMetadata))
	c := dialRaw(t, srv.addr)

	// kgo's first request: ApiVersions v5 (flexible header with a tag buffer).
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 5
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.0"
	sendRequest(t, c, req, 0x01020304)
	want := []byte{
		0, 0, 0, 16, // size
		1, 2, 3, 4, // correlation id; response header v0: no tag byte
		0, 35, // error_code UNSUPPORTED_VERSION at body bytes 0..1
		0, 0, 0, 1, // ApiKeys: int32 count 1 (v0 layout, not compact)
		0, 18, 0, 0, 0, 4, // {18, 0, 4}
	}
	if got := readRawFrame(t, c); !bytes.Equal(got, want) {
		t.Fatalf("downgrade reply\n got %x\nwant %x", got, want)
	}

	// A version far above ours with a body that is not ApiVersions at all: the body is
	// never decoded, the reply is the same.
	garbage := kbin.AppendInt16(kbin.AppendInt16(nil, 18), 1000)
	garbage = kbin.AppendInt32(garbage, 0x01020304)
	garbage = kbin.AppendNullableString(garbage, nil)
	garbage = append(garbage, 0xff, 0xff, 0xff)
	writeAll(t, c, withSize(garbage))
	if got := readRawFrame(t, c); !bytes.Equal(got, want) {
		t.Fatalf("downgrade reply to garbage\n got %x\nwant %x", got, want)
	}

	// The retry at v4 gets the table, response header v0 (no tag byte), flexible body.
	req.Version = 4
	sendRequest(t, c, req, 77)
	frame := readRawFrame(t, c)
	wantBody := srv.reg.ApiVersionsResponse(4).AppendTo(nil)
	if !bytes.Equal(frame, withSize(append([]byte{0, 0, 0, 77}, wantBody...))) {
		t.Fatalf("ApiVersions v4 reply %x, want body %x after the correlation id", frame, wantBody)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 4
	if err := resp.ReadFrom(frame[8:]); err != nil {
		t.Fatal(err)
	}
	if got, want := apiKeyRows(resp), [][3]int16{{3, 0, 12}, {18, 0, 4}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("advertised %v, want %v", got, want)
	}
}

func TestApiVersionsEveryVersion(t *testing.T) {
	srv := startServer(t, ServerConfig{}, metadataRegistry(echoMetadata))
	c := dialRaw(t, srv.addr)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "0"
		sendRequest(t, c, req, int32(v))
		frame := readRawFrame(t, c)
		want := withSize(append(binary.BigEndian.AppendUint32(nil, uint32(v)), srv.reg.ApiVersionsResponse(v).AppendTo(nil)...))
		if !bytes.Equal(frame, want) {
			t.Errorf("v%d: reply %x, want %x", v, frame, want)
		}
	}
}

func TestFlexibleHeaderTagsSkipped(t *testing.T) {
	var mu sync.Mutex
	var clientIDs []string
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(ctx context.Context, req *Request) Result {
		mu.Lock()
		clientIDs = append(clientIDs, *req.ClientID)
		mu.Unlock()
		return echoMetadata(ctx, req)
	}))
	c := dialRaw(t, srv.addr)
	writeAll(t, c, withSize(flexibleHeaderFrame(42, "tagged")))
	corr, body := readResponse(t, c)
	if corr != 42 {
		t.Fatalf("correlation id %d", corr)
	}
	if got := parseMetadata(t, body, 9).ClusterID; got == nil || *got != "tagged" {
		t.Fatalf("echoed %v, want tagged", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(clientIDs) != 1 || clientIDs[0] != "tagged-client" {
		t.Fatalf("client ids %q", clientIDs)
	}
}

func TestFlexibleResponseTagByte(t *testing.T) {
	srv := startServer(t, ServerConfig{}, metadataRegistry(echoMetadata))
	c := dialRaw(t, srv.addr)
	for _, v := range []int16{8, 9, 12} {
		sendRequest(t, c, metadataRequest(v, "x"), int32(v))
		frame := readRawFrame(t, c)
		want := &kmsg.MetadataResponse{Version: v}
		want.Default()
		want.ClusterID = kmsg.StringPtr("x")
		header := binary.BigEndian.AppendUint32(nil, uint32(v))
		if v >= 9 {
			header = append(header, 0) // response header v1: empty tag buffer
		}
		if wantFrame := withSize(append(header, want.AppendTo(nil)...)); !bytes.Equal(frame, wantFrame) {
			t.Errorf("Metadata v%d reply\n got %x\nwant %x", v, frame, wantFrame)
		}
	}
}

// TestPipelinedOutOfOrderCompletion sends 50 requests back to back. Even ones are
// answered at once, odd ones later, completed in reverse order; responses must still
// leave in request order.
func TestPipelinedOutOfOrderCompletion(t *testing.T) {
	const n = 50
	var mu sync.Mutex
	later := map[int]chan kmsg.Response{}
	handled := 0
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(_ context.Context, req *Request) Result {
		i := tagIndex(requestTag(req))
		mu.Lock()
		defer mu.Unlock()
		handled++
		if i%2 == 0 {
			return Respond(echoResponse(req))
		}
		ch := make(chan kmsg.Response, 1)
		later[i] = ch
		return RespondLater(ch)
	}))
	c := dialRaw(t, srv.addr)
	var batch []byte
	for i := range n {
		batch = append(batch, requestFrame(metadataRequest(9, fmt.Sprintf("t-%d", i)), int32(1000+i))...)
	}
	writeAll(t, c, batch)

	// Response 0 is immediate; everything after waits for response 1.
	roundTripResult := func(i int) {
		t.Helper()
		corr, body := readResponse(t, c)
		if corr != int32(1000+i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		if got := parseMetadata(t, body, 9).ClusterID; got == nil || *got != fmt.Sprintf("t-%d", i) {
			t.Fatalf("response %d echoes %v", i, got)
		}
	}
	roundTripResult(0)
	testwait.For(t, testTimeout, func() error {
		mu.Lock()
		defer mu.Unlock()
		if handled < n {
			return fmt.Errorf("%d of %d handled", handled, n)
		}
		return nil
	})
	mu.Lock()
	for i := n - 1; i >= 1; i -= 2 {
		resp := kmsg.NewPtrMetadataResponse()
		resp.ClusterID = kmsg.StringPtr(fmt.Sprintf("t-%d", i))
		later[i] <- resp // version is forced to the request's by the server
	}
	mu.Unlock()
	for i := 1; i < n; i++ {
		roundTripResult(i)
	}
}

// TestNoResponseKeepsOrder interleaves acks=0 produces with Metadata requests: nothing
// is written for the produces and the other responses keep their order.
func TestNoResponseKeepsOrder(t *testing.T) {
	var mu sync.Mutex
	produces := 0
	reg := metadataRegistry(echoMetadata)
	reg.Register(0, 0, 11, func(_ context.Context, req *Request) Result {
		body := req.Body.(*kmsg.ProduceRequest)
		mu.Lock()
		produces++
		mu.Unlock()
		if body.Acks == 0 {
			return NoResponse()
		}
		return Respond(body.ResponseKind())
	})
	srv := startServer(t, ServerConfig{MaxInflight: 2}, reg)
	c := dialRaw(t, srv.addr)
	var batch []byte
	for i := range 20 {
		if i%2 == 1 {
			p := kmsg.NewPtrProduceRequest()
			p.Version, p.Acks = 7, 0
			batch = append(batch, requestFrame(p, int32(i))...)
			continue
		}
		batch = append(batch, requestFrame(metadataRequest(4, fmt.Sprintf("t-%d", i)), int32(i))...)
	}
	writeAll(t, c, batch)
	for i := 0; i < 20; i += 2 {
		corr, body := readResponse(t, c)
		if corr != int32(i) {
			t.Fatalf("got correlation id %d, want %d", corr, i)
		}
		if got := parseMetadata(t, body, 4).ClusterID; *got != fmt.Sprintf("t-%d", i) {
			t.Fatalf("response %d echoes %q", i, *got)
		}
	}
	// The next bytes on the wire are the answer to a fresh request: nothing was
	// written for any acks=0 produce.
	roundTrip(t, c, 4, 99, "last")
	mu.Lock()
	defer mu.Unlock()
	if produces != 10 {
		t.Fatalf("%d produces handled, want 10", produces)
	}
}

// TestBackpressure checks that with MaxInflight owed responses the reader stops: a
// handler never runs while MaxInflight responses are still owed.
func TestBackpressure(t *testing.T) {
	const maxInflight, n = 3, 12
	var mu sync.Mutex
	var pending []chan kmsg.Response
	violations := 0
	srv := startServer(t, ServerConfig{MaxInflight: maxInflight}, metadataRegistry(func(_ context.Context, req *Request) Result {
		mu.Lock()
		defer mu.Unlock()
		if len(pending) >= maxInflight {
			violations++
		}
		ch := make(chan kmsg.Response, 1)
		pending = append(pending, ch)
		return RespondLater(ch)
	}))
	c := dialRaw(t, srv.addr)
	var batch []byte
	for i := range n {
		batch = append(batch, requestFrame(metadataRequest(4, fmt.Sprintf("t-%d", i)), int32(i))...)
	}
	writeAll(t, c, batch)
	for i := range n {
		testwait.For(t, testTimeout, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(pending) == 0 {
				return fmt.Errorf("request %d not handled yet", i)
			}
			return nil
		})
		mu.Lock()
		ch := pending[0]
		pending = pending[1:]
		resp := kmsg.NewPtrMetadataResponse()
		resp.ClusterID = kmsg.StringPtr(fmt.Sprintf("t-%d", i))
		ch <- resp
		mu.Unlock()
		corr, body := readResponse(t, c)
		if corr != int32(i) || *parseMetadata(t, body, 4).ClusterID != fmt.Sprintf("t-%d", i) {
			t.Fatalf("response %d: correlation id %d", i, corr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if violations != 0 {
		t.Fatalf("a handler ran %d times while %d responses were owed", violations, maxInflight)
	}
}
