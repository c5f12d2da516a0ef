package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// dialClient dials srv with a Client closed at cleanup.
func dialClient(t *testing.T, addr string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cl, err := Dial(ctx, addr, "petrel-replica")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// doMetadata sends a tagged Metadata request and checks the echo.
func doMetadata(ctx context.Context, cl *Client, version int16, tag string) error {
	resp, err := cl.Do(ctx, metadataRequest(version, tag))
	if err != nil {
		return err
	}
	m := resp.(*kmsg.MetadataResponse)
	if m.Version != version || m.ClusterID == nil || *m.ClusterID != tag {
		return fmt.Errorf("v%d %q: got v%d %v", version, tag, m.Version, m.ClusterID)
	}
	return nil
}

func TestClientDo(t *testing.T) {
	clientIDs := make(chan string, 8)
	srv := startServer(t, ServerConfig{}, metadataRegistry(func(ctx context.Context, req *Request) Result {
		clientIDs <- *req.ClientID
		return echoMetadata(ctx, req)
	}))
	cl := dialClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, v := range []int16{4, 8, 9, 12} { // header v1 and v2, response header v0 and v1
		if err := doMetadata(ctx, cl, v, fmt.Sprintf("v%d", v)); err != nil {
			t.Fatal(err)
		}
		if id := <-clientIDs; id != "petrel-replica" {
			t.Fatalf("client id %q", id)
		}
	}
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		resp, err := cl.Do(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.ErrorCode != 0 || fmt.Sprint(apiKeyRows(av)) != fmt.Sprint(apiKeyRows(srv.reg.ApiVersionsResponse(v))) {
			t.Fatalf("ApiVersions v%d: error %d, keys %v", v, av.ErrorCode, apiKeyRows(av))
		}
	}
	// Above our maximum the client reads the v0 downgrade reply.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 5
	resp, err := cl.Do(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if av := resp.(*kmsg.ApiVersionsResponse); av.ErrorCode != 35 || fmt.Sprint(apiKeyRows(av)) != "[[18 0 4]]" {
		t.Fatalf("downgrade: error %d, keys %v", av.ErrorCode, apiKeyRows(av))
	}
	p := kmsg.NewPtrProduceRequest()
	p.Version, p.Acks = 9, 0
	if _, err := cl.Do(ctx, p); !errors.Is(err, ErrNoResponseExpected) {
		t.Fatalf("acks=0 produce: %v", err)
	}
}

func TestClientConcurrent(t *testing.T) {
	const goroutines, perGoroutine = 8, 100
	srv := startServer(t, ServerConfig{MaxInflight: 4}, metadataRegistry(echoMetadata))
	cl := dialClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				version := int16(4 + (g+i)%9) // 4..12, mixing flexible and not
				if err := doMetadata(ctx, cl, version, fmt.Sprintf("g%d-%d", g, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestClientAbandonedCall: a Do whose ctx ends leaves the connection usable; its late
// response is read and dropped.
func TestClientAbandonedCall(t *testing.T) {
	laterCh := make(chan chan kmsg.Response, 1)
	srv := startServer(t, ServerConfig{}, laterRegistry(laterCh, nil))
	cl := dialClient(t, srv.addr)

	short, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cl.Do(short, metadataRequest(4, "later"))
		done <- err
	}()
	ch := <-laterCh
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned Do: %v", err)
	}
	ch <- echoResponseFor("later")

	ctx, cancel2 := context.WithTimeout(context.Background(), testTimeout)
	defer cancel2()
	if err := doMetadata(ctx, cl, 4, "next"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Err(); err != nil {
		t.Fatalf("client failed: %v", err)
	}
}

// TestClientClose: Close fails waiting calls and later ones with ErrClientClosed.
func TestClientClose(t *testing.T) {
	laterCh := make(chan chan kmsg.Response, 1)
	srv := startServer(t, ServerConfig{}, laterRegistry(laterCh, nil))
	cl := dialClient(t, srv.addr)
	done := make(chan error, 1)
	go func() {
		_, err := cl.Do(context.Background(), metadataRequest(4, "later"))
		done <- err
	}()
	<-laterCh
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClientClosed) {
			t.Fatalf("waiting Do: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("waiting Do not failed by Close")
	}
	if _, err := cl.Do(context.Background(), metadataRequest(4, "after")); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
	if err := cl.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestClientServerGone: the server closing the connection fails waiting calls.
func TestClientServerGone(t *testing.T) {
	laterCh := make(chan chan kmsg.Response, 1)
	srv := startServer(t, ServerConfig{}, laterRegistry(laterCh, nil))
	cl := dialClient(t, srv.addr)
	done := make(chan error, 1)
	go func() {
		_, err := cl.Do(context.Background(), metadataRequest(4, "later"))
		done <- err
	}()
	<-laterCh
	srv.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Do succeeded after the server closed")
		}
	case <-time.After(testTimeout):
		t.Fatal("Do not failed when the server closed")
	}
	if cl.Err() == nil {
		t.Fatal("client not failed")
	}
}

// dialInline dials addr with an inline Client (DialInline) closed at cleanup.
func dialInline(t *testing.T, addr string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var d net.Dialer
	cl, err := DialInline(ctx, d.DialContext, addr, "petrel-replica")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// An inline client reads each response on the calling goroutine: calls from several
// goroutines are made one at a time and each gets its own answer; DoPooled's frame is
// released as for the ordinary client.
func TestInlineClientDo(t *testing.T) {
	srv := startServer(t, ServerConfig{}, metadataRegistry(echoMetadata))
	cl := dialInline(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := doMetadata(ctx, cl, 9, fmt.Sprintf("g%d-%d", g, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	resp, frame, err := cl.DoPooled(ctx, metadataRequest(12, "pooled"))
	if err != nil || *resp.(*kmsg.MetadataResponse).ClusterID != "pooled" {
		t.Fatalf("DoPooled: %v", err)
	}
	frame.Release()
}

// A call of an inline client whose ctx ends before its answer fails the client (the
// answer cannot be skipped unread); Close while a call waits fails it with
// ErrClientClosed; neither blocks.
func TestInlineClientCancelAndClose(t *testing.T) {
	laterCh := make(chan chan kmsg.Response, 2)
	srv := startServer(t, ServerConfig{}, laterRegistry(laterCh, nil))
	cl := dialInline(t, srv.addr)
	short, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cl.Do(short, metadataRequest(4, "later"))
		done <- err
	}()
	<-laterCh
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("cancelled call did not return")
	}
	if cl.Err() == nil {
		t.Fatal("an inline client cancelled mid-read is still usable")
	}

	cl = dialInline(t, srv.addr)
	go func() {
		_, err := cl.Do(context.Background(), metadataRequest(4, "later"))
		done <- err
	}()
	<-laterCh
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClientClosed) {
			t.Fatalf("waiting call after Close: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Close did not fail the waiting call")
	}
}
