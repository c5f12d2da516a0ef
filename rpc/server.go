package rpc

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/semaphore"
)

// Defaults of ServerConfig, Kafka's where Kafka has one.
const (
	// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes (100 MiB).
	DefaultMaxRequestBytes int32 = 104857600
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms (10 minutes).
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultMaxInflight is the default per-connection limit of owed responses.
	DefaultMaxInflight = 100
)

// ServerConfig configures a Server. Zero fields take the defaults.
type ServerConfig struct {
	// MaxRequestBytes caps one request frame (socket.request.max.bytes); a larger size
	// prefix closes the connection before anything is allocated.
	MaxRequestBytes int32
	// IdleTimeout (connections.max.idle.ms) closes a connection that has read no
	// request and owed no response for this long. It also bounds a stalled write of a
	// response and a request stalled half-read.
	IdleTimeout time.Duration
	// MaxInflight is how many responses a connection may owe (queued or waiting on
	// RespondLater) before its reader stops reading, pushing back on the client.
	MaxInflight int
	// QueuedMaxRequestBytes (Kafka's queued.max.request.bytes) bounds the bytes of
	// requests being read, decoded and handled at once across all connections. kmsg
	// allocates arrays at the length a frame claims, up to ~32x the frame size, so
	// without a server-wide bound many connections sending hostile frames could exhaust
	// memory. Default: MaxRequestBytes. Readers wait for room.
	QueuedMaxRequestBytes int64
	// Logger receives the server's logs, under the name "rpc".
	Logger hclog.Logger
	// ObserveRequest, when set, is called on the connection's writer goroutine once a
	// request's response is written (on the reader goroutine for requests answered with
	// NoResponse), with the request's timing. It must not block.
	ObserveRequest func(key int16, t RequestTiming)
}

// RequestTiming is one request's life on a connection, split as Kafka's RequestMetrics
// split it: queue (frame read until its handler starts), local (the handler), remote
// (Handled until Ready: a RespondLater answer), response queue (until the writer
// starts writing it, after earlier responses) and response send.
type RequestTiming struct {
	Received    time.Time // the request's frame was read
	Started     time.Time // its handler started
	Handled     time.Time // its handler returned
	Ready       time.Time // its response existed (Handled, unless answered later)
	WriteStart  time.Time // the writer began writing the response
	WriteFinish time.Time // the response was written
}

// withDefaults fills in zero fields.
func (c ServerConfig) withDefaults() ServerConfig {
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	if c.QueuedMaxRequestBytes <= 0 {
		c.QueuedMaxRequestBytes = int64(c.MaxRequestBytes)
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// serverState is the server's life cycle: running, then draining (Shutdown), then closed.
type serverState uint8

const (
	stateRunning serverState = iota
	stateDraining
	stateClosed
)

// Server accepts Kafka connections and dispatches their requests through a Registry.
// Every connection has a reader goroutine, which decodes requests and runs handlers in
// order, and a writer goroutine, which writes responses in request order. All methods
// are safe for concurrent use.
type Server struct {
	cfg ServerConfig
	// budget holds QueuedMaxRequestBytes; each request holds its frame size from read
	// to the end of its handler call.
	budget *semaphore.Weighted
	reg    *Registry
	log    hclog.Logger

	// ctx is the parent of every connection's context; cancel runs in Close.
	ctx    context.Context
	cancel context.CancelFunc

	// quit is closed when the server leaves stateRunning; accept loops stop on it.
	quit chan struct{}

	mu sync.Mutex
	// state is guarded by mu.
	state serverState
	// listeners are the listeners of running Serve calls, in order; guarded by mu.
	listeners []net.Listener
	// conns are the open connections; guarded by mu.
	conns map[*conn]struct{}

	// nextConnID numbers connections.
	nextConnID atomic.Uint64
	// wg counts every connection goroutine; Add happens under mu while running.
	wg sync.WaitGroup

	// idleRenewals counts idle timeouts skipped because responses were owed (tests).
	idleRenewals atomic.Int64
}

// NewServer returns a Server answering through reg. reg must be fully registered: it
// is frozen here and Register panics afterwards.
func NewServer(cfg ServerConfig, reg *Registry) *Server {
	cfg = cfg.withDefaults()
	reg.frozen.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg:    cfg,
		budget: semaphore.NewWeighted(cfg.QueuedMaxRequestBytes),
		reg:    reg,
		log:    cfg.Logger.Named("rpc"),
		ctx:    ctx,
		cancel: cancel,
		quit:   make(chan struct{}),
		conns:  make(map[*conn]struct{}),
	}
}

// Serve accepts connections on ln until Shutdown or Close, then returns nil. It returns
// an accept error that is not temporary. Serve closes ln when it returns, and may run
// on several listeners at once. Called after Shutdown or Close, it closes ln and
// returns nil. Its connections are PLAINTEXT, on the listener named PLAINTEXT.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(ln, plaintextListener)
}

// ServeListener is Serve with the listener's name and security (TLS, SASL).
func (s *Server) ServeListener(ln net.Listener, lc ListenerConfig) error {
	s.mu.Lock()
	if s.state != stateRunning {
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.listeners = append(s.listeners, ln)
	s.mu.Unlock()
	s.log.Info("serving Kafka protocol", "addr", ln.Addr().String(), "listener", lc.Name)
	defer func() {
		s.forgetListener(ln)
		_ = ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !s.running() { // our own Shutdown or Close closed ln
				return nil
			}
			var te interface{ Temporary() bool }
			if !errors.As(err, &te) || !te.Temporary() {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed, retrying", "error", err, "backoff", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.quit:
				t.Stop()
				return nil
			}
			continue
		}
		backoff = 0
		if !s.admit(nc, &lc) {
			continue
		}
		s.startConn(nc, &lc)
	}
}

// Stopping returns a channel closed when Shutdown or Close begins. Handler contexts are
// cancelled only when their connection closes, so that Shutdown can still write owed
// responses; a long-poll (a parked Fetch) that wants to answer early when the server is
// stopping selects on this channel.
func (s *Server) Stopping() <-chan struct{} {
	return s.quit
}

// Addr returns the address of the first listener being served, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return nil
	}
	return s.listeners[0].Addr()
}

// Shutdown stops accepting connections and reading requests, waits until every
// response already owed has been written (or ctx ends), then closes all connections as
// Close does. Requests half-read when Shutdown starts are dropped unanswered. It returns
// ctx's error if ctx ended first, else nil. It is idempotent and may run concurrently
// with Close.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.state == stateRunning {
		s.stopLocked(stateDraining)
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.log.Info("shutting down", "connections", len(conns))
	for _, c := range conns {
		c.stopReading()
	}
	var err error
	for _, c := range conns {
		select {
		case <-c.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			s.log.Warn("shutdown deadline reached with responses still owed", "error", err)
			break
		}
	}
	_ = s.Close()
	return err
}

// Close closes the listeners and every connection at once, dropping owed responses,
// cancels handler contexts and waits for the connection goroutines to exit. It is
// idempotent and returns nil. It must not be called from a Handler.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.state != stateClosed {
		s.stopLocked(stateClosed)
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	for _, c := range conns {
		c.close(ErrServerClosed)
	}
	s.cancel()
	s.wg.Wait()
	return nil
}

// stopLocked moves the server to state (draining or closed). Leaving stateRunning
// closes every listener, then quit, so whoever sees quit closed also sees the listeners
// closed. The caller holds s.mu.
func (s *Server) stopLocked(state serverState) {
	wasRunning := s.state == stateRunning
	s.state = state
	if !wasRunning {
		return
	}
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
	close(s.quit)
}

// running reports whether Shutdown and Close have not begun.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateRunning
}

// forgetListener removes ln once its Serve call returns.
func (s *Server) forgetListener(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range s.listeners {
		if l == ln {
			s.listeners = append(s.listeners[:i], s.listeners[i+1:]...)
			return
		}
	}
}

// admit asks the listener's Limiter to admit nc, which may hold the accept loop back;
// a connection refused is closed at once. It reports whether nc is admitted.
func (s *Server) admit(nc net.Conn, lc *ListenerConfig) bool {
	if lc.Limiter == nil {
		return true
	}
	if lc.Limiter.Admit(lc.Name, nc.RemoteAddr(), s.quit) {
		return true
	}
	_ = nc.Close()
	return false
}

// startConn registers nc and starts its reader and writer, or closes nc if the server
// is no longer running. A connection admitted by the listener's Limiter is released to
// it when it closes.
func (s *Server) startConn(nc net.Conn, lc *ListenerConfig) {
	c := newConn(s, nc, s.nextConnID.Add(1))
	c.setListener(lc)
	if lim := lc.Limiter; lim != nil {
		name, remote := lc.Name, nc.RemoteAddr()
		c.release = func() { lim.Release(name, remote) }
	}
	s.mu.Lock()
	if s.state != stateRunning {
		s.mu.Unlock()
		c.close(ErrServerClosed)
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	c.log.Debug("connection accepted")
	go c.readLoop()
	go c.writeLoop()
}

// forgetConn removes a closed connection.
func (s *Server) forgetConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// numConns returns the number of open connections (tests).
func (s *Server) numConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
