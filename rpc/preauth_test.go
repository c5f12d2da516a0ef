package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testPLAIN is a SASL server with one PLAIN user, alice:secret.
type testPLAIN struct{}

// validLogin is the PLAIN message testPLAIN accepts.
const validLogin = "\x00alice\x00secret"

func (testPLAIN) Mechanisms() []string { return []string{"PLAIN"} }

func (testPLAIN) NewSession(string, *ConnInfo) (SASLSession, error) { return &testPLAINSession{}, nil }

type testPLAINSession struct{ user string }

func (s *testPLAINSession) Step(msg []byte) ([]byte, bool, error) {
	if string(msg) != validLogin {
		return nil, false, errors.New("wrong credentials")
	}
	s.user = "alice"
	return nil, true, nil
}

func (s *testPLAINSession) Username() string { return s.user }

// saslRegistry serves Metadata with echoMetadata and registers the SASL apis, which a
// SASL listener answers itself (the broker registers them for other listeners).
func saslRegistry() *Registry {
	reg := metadataRegistry(echoMetadata)
	never := func(context.Context, *Request) Result { return CloseConnection(errors.New("served by the registry")) }
	reg.Register(saslHandshakeKey, 0, 1, never)
	reg.Register(saslAuthenticateKey, 0, 2, never)
	return reg
}

// startListener is startServer serving one listener configured by lc.
func startListener(t *testing.T, cfg ServerConfig, reg *Registry, lc ListenerConfig) *testServer {
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
	go func() { served <- s.ServeListener(ln, lc) }()
	runningServers.Add(1)
	t.Cleanup(func() {
		defer runningServers.Add(-1)
		_ = s.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("ServeListener returned %v", err)
			}
		case <-time.After(testTimeout):
			t.Error("ServeListener did not return after Close")
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	testwait.For(t, testTimeout, func() error {
		if s.Addr() == nil {
			return errors.New("not serving yet")
		}
		return nil
	})
	return &testServer{Server: s, addr: ln.Addr().String(), logs: logs}
}

// paddedFrame is req's frame grown with trailing bytes (ignored by the decoder) to
// size bytes after the size prefix.
func paddedFrame(t *testing.T, req kmsg.Request, correlationID int32, size int) []byte {
	t.Helper()
	f := requestFrame(req, correlationID)
	if len(f)-4 > size {
		t.Fatalf("request of %d bytes does not fit %d", len(f)-4, size)
	}
	f = append(f, make([]byte, size-(len(f)-4))...)
	binary.BigEndian.PutUint32(f, uint32(size))
	return f
}

// saslLogin runs SaslHandshake and SaslAuthenticate with password on c and returns
// SaslAuthenticate's error code.
func saslLogin(t *testing.T, c net.Conn, password string) int16 {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	sendRequest(t, c, hs, 1)
	if _, body := readResponse(t, c); len(body) < 2 || binary.BigEndian.Uint16(body) != 0 {
		t.Fatalf("SaslHandshake answered % x", body)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 1, []byte("\x00alice\x00"+password)
	sendRequest(t, c, auth, 2)
	_, body := readResponse(t, c)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = 1
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp.ErrorCode
}

// TestPreAuthFrameBound: on a SASL listener a frame over SASLMaxReceiveSize before
// authentication closes the connection from its size prefix, one at the bound is
// served, and after authentication MaxRequestBytes applies; a plain listener knows no
// such bound.
func TestPreAuthFrameBound(t *testing.T) {
	const bound = 1024
	cfg := ServerConfig{MaxRequestBytes: 1 << 20}
	// The SASL listener closes before the plain one starts (checkNoGoroutineLeak).
	t.Run("SASL listener", func(t *testing.T) {
		sasl := startListener(t, cfg, saslRegistry(), ListenerConfig{Name: "SASL_PLAINTEXT", SASL: testPLAIN{}, SASLMaxReceiveSize: bound})
		apiVersions := kmsg.NewPtrApiVersionsRequest()
		apiVersions.Version = 3
		apiVersions.ClientSoftwareName, apiVersions.ClientSoftwareVersion = "t", "1"

		t.Run("at the bound ApiVersions is served", func(t *testing.T) {
			c := dialRaw(t, sasl.addr)
			writeAll(t, c, paddedFrame(t, apiVersions, 5, bound))
			if corr, _ := readResponse(t, c); corr != 5 {
				t.Fatalf("correlation id %d", corr)
			}
		})
		t.Run("one byte over closes", func(t *testing.T) {
			c := dialRaw(t, sasl.addr)
			writeAll(t, c, paddedFrame(t, apiVersions, 5, bound+1))
			expectClosed(t, c)
		})
		t.Run("a 100 MiB size prefix closes at once", func(t *testing.T) {
			c := dialRaw(t, sasl.addr)
			writeAll(t, c, binary.BigEndian.AppendUint32(nil, 100<<20))
			expectClosed(t, c)
			if !strings.Contains(sasl.logs.String(), "before authentication (sasl.server.max.receive.size)") {
				t.Fatal("the close does not name sasl.server.max.receive.size")
			}
		})
		t.Run("another api before authentication closes before its body is decoded", func(t *testing.T) {
			c := dialRaw(t, sasl.addr)
			f := append(header(3, 4, 9), 0x7f, 0xff, 0xff, 0xff) // Metadata claiming 2^31 topics
			writeAll(t, c, binary.BigEndian.AppendUint32(nil, uint32(len(f))))
			writeAll(t, c, f)
			expectClosed(t, c)
			testwait.For(t, testTimeout, func() error {
				if !strings.Contains(sasl.logs.String(), "Metadata (key 3)") {
					return errors.New("no pre-authentication refusal of Metadata logged")
				}
				return nil
			})
		})
		t.Run("after authentication the request limit applies", func(t *testing.T) {
			c := dialRaw(t, sasl.addr)
			if code := saslLogin(t, c, "secret"); code != 0 {
				t.Fatalf("login: error %d", code)
			}
			writeAll(t, c, paddedFrame(t, metadataRequest(4, "big"), 7, 64<<10))
			if corr, _ := readResponse(t, c); corr != 7 {
				t.Fatalf("correlation id %d", corr)
			}
		})
		t.Run("a failed login still closes under the bound", func(t *testing.T) {
			c := dialRaw(t, sasl.addr)
			if code := saslLogin(t, c, "wrong"); code != kerr.SaslAuthenticationFailed.Code {
				t.Fatalf("login: error %d", code)
			}
			expectClosed(t, c)
		})
	})

	t.Run("a plain listener has no such bound", func(t *testing.T) {
		plain := startServer(t, cfg, metadataRegistry(echoMetadata))
		c := dialRaw(t, plain.addr)
		writeAll(t, c, paddedFrame(t, metadataRequest(4, "big"), 8, 64<<10))
		if corr, _ := readResponse(t, c); corr != 8 {
			t.Fatalf("correlation id %d", corr)
		}
	})
}

// FuzzPreAuthFrames feeds arbitrary bytes as the first bytes of a connection on a SASL
// listener, in process through net.Pipe: the connection must end (no hang) once the
// client closes, without a panic, and without allocating more than a small multiple of
// what was sent, whatever frame sizes the bytes claim.
func FuzzPreAuthFrames(f *testing.F) {
	frame := func(req kmsg.Request, version int16, corr int32) []byte {
		req.SetVersion(version)
		return requestFrame(req, corr)
	}
	apiVersions := frame(kmsg.NewPtrApiVersionsRequest(), 3, 1)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	handshake := frame(hs, 1, 2)
	login := func(password string) []byte {
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.SASLAuthBytes = []byte("\x00alice\x00" + password)
		return frame(a, 2, 3)
	}
	metadata := requestFrame(metadataRequest(4, "t"), 4)
	f.Add(apiVersions)
	f.Add(bytes.Join([][]byte{apiVersions, handshake, login("secret"), metadata}, nil))
	f.Add(bytes.Join([][]byte{handshake, login("wrong"), metadata}, nil))
	f.Add(metadata)
	f.Add(binary.BigEndian.AppendUint32(nil, 100<<20))
	f.Add(append(binary.BigEndian.AppendUint32(nil, 4096), header(36, 2, 1)...))
	f.Add(bytes.Join([][]byte{handshake, login("secret"), binary.BigEndian.AppendUint32(nil, 1<<20)}, nil))

	srv := NewServer(ServerConfig{MaxRequestBytes: 1 << 20, IdleTimeout: 5 * time.Second}, saslRegistry())
	f.Cleanup(func() { _ = srv.Close() })
	lc := &ListenerConfig{Name: "SASL_PLAINTEXT", SASL: testPLAIN{}, SASLMaxReceiveSize: 4096}
	// run plays input as one connection and returns the bytes the process allocated
	// meanwhile.
	run := func(t *testing.T, input []byte) uint64 {
		client, server := net.Pipe()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // reads the answers, as a client would
			defer wg.Done()
			_, _ = io.Copy(io.Discard, client)
		}()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		srv.startConn(server, lc)
		_ = client.SetWriteDeadline(time.Now().Add(testTimeout))
		_, _ = client.Write(input) // fails early when the server closes
		_ = client.Close()
		// Inputs run one at a time, so the server's WaitGroup counts only this
		// connection's reader and writer: once it is done, nothing of it still runs.
		ended := make(chan struct{})
		go func() {
			srv.wg.Wait()
			wg.Wait()
			close(ended)
		}()
		select {
		case <-ended:
		case <-time.After(testTimeout):
			t.Fatalf("the connection did not end within %s of the client closing", testTimeout)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		// A connection costs tens of KiB (its queue, read-ahead buffer, logger); a frame
		// read costs its size, decoding a few times that. A frame size trusted
		// before authentication would cost up to the 1 MiB request limit, which only
		// a successful login may unlock.
		bound := uint64(512<<10 + 32*len(input))
		if bytes.Contains(input, []byte(validLogin)) {
			bound += 2 << 20
		}
		// The count is process-wide: the fuzzing engine allocates now and then while an
		// input runs, so an input fails only when three runs all exceed the bound.
		got := run(t, input)
		for range 2 {
			if got <= bound {
				return
			}
			got = min(got, run(t, input))
		}
		if got > bound {
			t.Fatalf("%d bytes allocated for %d bytes of input, the bound is %d", got, len(input), bound)
		}
	})
}

// countingLimiter admits up to max connections at once, refusing (or, with hold,
// holding back) the rest; it checks that every admitted connection is released once.
type countingLimiter struct {
	max  int
	hold bool

	mu       sync.Mutex
	admitted int
	released int
	freed    chan struct{}
}

func (l *countingLimiter) Admit(_ string, _ net.Addr, stop <-chan struct{}) bool {
	for {
		l.mu.Lock()
		if l.admitted-l.released < l.max {
			l.admitted++
			l.mu.Unlock()
			return true
		}
		if !l.hold {
			l.mu.Unlock()
			return false
		}
		if l.freed == nil {
			l.freed = make(chan struct{})
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return false
		}
	}
}

func (l *countingLimiter) Release(string, net.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.released++
	if l.released > l.admitted {
		panic("released more connections than admitted")
	}
	if l.freed != nil {
		close(l.freed)
		l.freed = nil
	}
}

func (l *countingLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.admitted - l.released
}

// TestConnectionLimiter: a connection the limiter refuses is closed before anything is
// read; an admitted one is released once when it closes; an accept held back by the
// limiter goes on when a connection closes, and ends with Close.
func TestConnectionLimiter(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		lim := &countingLimiter{max: 2}
		s := startListener(t, ServerConfig{}, metadataRegistry(echoMetadata), ListenerConfig{Name: "PLAINTEXT", Limiter: lim})
		a, b := dialRaw(t, s.addr), dialRaw(t, s.addr)
		roundTrip(t, a, 4, 1, "a")
		roundTrip(t, b, 4, 1, "b")
		refused := dialRaw(t, s.addr)
		expectClosed(t, refused)
		a.Close()
		testwait.For(t, testTimeout, func() error {
			if n := lim.open(); n != 1 {
				return errors.New("the closed connection was not released")
			}
			return nil
		})
		roundTrip(t, dialRaw(t, s.addr), 4, 1, "c")
	})
	t.Run("held", func(t *testing.T) {
		lim := &countingLimiter{max: 1, hold: true}
		s := startListener(t, ServerConfig{}, metadataRegistry(echoMetadata), ListenerConfig{Name: "PLAINTEXT", Limiter: lim})
		first := dialRaw(t, s.addr)
		roundTrip(t, first, 4, 1, "first")
		held := dialRaw(t, s.addr)
		sendRequest(t, held, metadataRequest(4, "held"), 2)
		if err := held.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, err := held.Read(make([]byte, 1)); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
			t.Fatalf("the held connection was answered: %v", err)
		}
		first.Close()
		corr, body := readResponse(t, held)
		if got := parseMetadata(t, body, 4).ClusterID; corr != 2 || got == nil || *got != "held" {
			t.Fatalf("held connection answered %d %v", corr, got)
		}
		// A third is held when the server closes: Close ends the wait (the leak check
		// at cleanup sees the accept goroutine gone).
		_ = dialRaw(t, s.addr)
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
