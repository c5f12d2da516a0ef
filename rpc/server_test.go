package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// laterRegistry serves Metadata: tag "later" hands its response channel to laterCh and
// its handler context to ctxCh; other tags are echoed at once.
func laterRegistry(laterCh chan chan kmsg.Response, ctxCh chan context.Context) *Registry {
	return metadataRegistry(func(ctx context.Context, req *Request) Result {
		if requestTag(req) != "later" {
			return Respond(echoResponse(req))
		}
		ch := make(chan kmsg.Response, 1)
		laterCh <- ch
		if ctxCh != nil {
			ctxCh <- ctx
		}
		return RespondLater(ch)
	})
}

func TestShutdownWaitsForOwedResponse(t *testing.T) {
	laterCh := make(chan chan kmsg.Response, 1)
	srv := startServer(t, ServerConfig{}, laterRegistry(laterCh, nil))
	c := dialRaw(t, srv.addr)
	idle := dialRaw(t, srv.addr)
	roundTrip(t, idle, 4, 1, "idle")
	roundTrip(t, c, 4, 1, "first")
	sendRequest(t, c, metadataRequest(9, "later"), 7)
	ch := <-laterCh

	shutdownErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		shutdownErr <- srv.Shutdown(ctx)
	}()
	select {
	case <-srv.Stopping():
	case <-time.After(testTimeout):
		t.Fatal("Stopping not closed by Shutdown")
	}
	// The idle connection owes nothing: it is closed without waiting.
	expectClosed(t, idle)
	if nc, err := net.DialTimeout("tcp", srv.addr, testTimeout); err == nil {
		nc.Close()
		t.Fatal("a new connection was accepted during Shutdown")
	}
	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned %v with a response still owed", err)
	default:
	}

	ch <- echoResponseFor("later")
	corr, body := readResponse(t, c)
	if corr != 7 || *parseMetadata(t, body, 9).ClusterID != "later" {
		t.Fatalf("owed response: correlation id %d", corr)
	}
	select {
	case err := <-shutdownErr:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Shutdown did not return after the owed response was written")
	}
	expectClosed(t, c)
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

// TestShutdownDeadline: a response that never comes makes Shutdown return ctx's error,
// close the connection and cancel the handler's context.
func TestShutdownDeadline(t *testing.T) {
	laterCh := make(chan chan kmsg.Response, 1)
	ctxCh := make(chan context.Context, 1)
	srv := startServer(t, ServerConfig{}, laterRegistry(laterCh, ctxCh))
	c := dialRaw(t, srv.addr)
	sendRequest(t, c, metadataRequest(4, "later"), 1)
	<-laterCh
	handlerCtx := <-ctxCh

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown returned %v, want the deadline", err)
	}
	expectClosed(t, c)
	select {
	case <-handlerCtx.Done():
	default:
		t.Fatal("handler context not cancelled after Shutdown")
	}
	if n := srv.numConns(); n != 0 {
		t.Fatalf("%d connections still open", n)
	}
}

// TestCloseDropsOwedResponses: Close is immediate and idempotent, and Shutdown after it
// returns at once.
func TestCloseDropsOwedResponses(t *testing.T) {
	laterCh := make(chan chan kmsg.Response, 1)
	srv := startServer(t, ServerConfig{}, laterRegistry(laterCh, nil))
	var conns []net.Conn
	for i := range 5 {
		c := dialRaw(t, srv.addr)
		roundTrip(t, c, 4, int32(i), fmt.Sprint(i))
		conns = append(conns, c)
	}
	sendRequest(t, conns[0], metadataRequest(4, "later"), 9)
	<-laterCh
	for range 2 {
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		expectClosed(t, c)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown after Close: %v", err)
	}
}

func TestServeAfterClose(t *testing.T) {
	checkNoGoroutineLeak(t)
	s := NewServer(ServerConfig{}, NewRegistry())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln); err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Fatal("Serve after Close left the listener open")
	}
	if s.Addr() != nil {
		t.Fatalf("Addr %v after Close", s.Addr())
	}
}

func TestServeSeveralListeners(t *testing.T) {
	srv := startServer(t, ServerConfig{}, metadataRegistry(echoMetadata))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	roundTrip(t, dialRaw(t, ln.Addr().String()), 4, 1, "second listener")
	roundTrip(t, dialRaw(t, srv.addr), 4, 1, "first listener")
	if got := srv.Addr(); got == nil || got.String() != srv.addr {
		t.Fatalf("Addr %v, want the first listener %s", got, srv.addr)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
