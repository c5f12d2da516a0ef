package integration

// Bounds on what an unauthenticated or excessive client may cost (docs/security.md,
// "Before authentication and connection limits"): a SASL listener reads no frame over
// sasl.server.max.receive.size before authentication, max.connections holds accepting
// back (the inter-broker listener exempt), max.connections.per.ip and its overrides
// close the excess at once, connections.max.idle.ms closes idle connections, and failed
// logins from one host are answered one per connection.failed.authentication.delay.ms
// however many run in parallel.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startSASLNode is a one-node cluster with a PLAINTEXT listener (the inter-broker one)
// and a SASL_PLAINTEXT listener offering PLAIN; its Raft transport is plaintext.
func startSASLNode(t *testing.T, extra ...Option) *secureNode {
	t.Helper()
	opts := []Option{
		WithProperty("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
		WithProperty("petrel.raft.security.protocol", "PLAINTEXT"),
		WithProperty("sasl.enabled.mechanisms", "PLAIN"),
		WithProperty("listener.name.sasl_plaintext.plain.sasl.jaas.config", plainJAAS()),
	}
	return &secureNode{Cluster: StartCluster(t, 1, append(opts, extra...)...)}
}

// apiVersionsOK sends ApiVersions on rc and reports whether an answer came within
// wait: false when the connection was closed or nothing arrived.
func apiVersionsOK(rc *rawConn, wait time.Duration) bool {
	req := kmsg.NewPtrApiVersionsRequest()
	if err := rc.nc.SetWriteDeadline(time.Now().Add(rawTimeout)); err != nil {
		return false
	}
	if _, err := rc.nc.Write(rc.frame(req)); err != nil {
		return false
	}
	return readAnswer(rc, wait) == nil
}

// readAnswer reads one response frame within wait.
func readAnswer(rc *rawConn, wait time.Duration) error {
	if err := rc.nc.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(rc.nc, size[:]); err != nil {
		return err
	}
	_, err := io.CopyN(io.Discard, rc.nc, int64(binary.BigEndian.Uint32(size[:])))
	return err
}

// closedWithin reports whether the broker closed nc (EOF or reset) within wait.
func closedWithin(nc net.Conn, wait time.Duration) error {
	if err := nc.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	var b [512]byte
	for {
		_, err := nc.Read(b[:])
		switch {
		case err == nil:
			continue // whatever the broker answered before closing
		case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
			return nil
		default:
			return fmt.Errorf("not closed within %s: %w", wait, err)
		}
	}
}

// TestSecurity_PreAuthFrameBound: 50 connections to a SASL listener each announce a
// 100 MiB frame before authenticating and send its first 2 MiB. Each is closed after
// its size prefix, and the broker's heap does not grow with what they announce or send.
// Before sasl.server.max.receive.size each held a 4 MiB frame buffer (the buffer
// doubles from 1 MiB as bytes arrive) for connections.max.idle.ms: 200 MiB.
func TestSecurity_PreAuthFrameBound(t *testing.T) {
	s := startSASLNode(t)
	addr := s.addr("SASL_PLAINTEXT")
	// ApiVersions before authentication is still served, under the bound.
	if !apiVersionsOK(dialRaw(t, addr), rawTimeout) {
		t.Fatal("ApiVersions before authentication was not answered")
	}
	const conns, announced, sent = 50, 100 << 20, 2 << 20
	before := heapInUse()
	chunk := make([]byte, 64<<10)
	ncs := make([]net.Conn, conns)
	var wg sync.WaitGroup
	for i := range ncs {
		nc := dialRaw(t, addr).nc
		ncs[i] = nc
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = nc.SetWriteDeadline(time.Now().Add(rawTimeout))
			size := binary.BigEndian.AppendUint32(nil, announced)
			if _, err := nc.Write(size); err != nil {
				return
			}
			for n := 0; n < sent; n += len(chunk) {
				if _, err := nc.Write(chunk); err != nil {
					return // closed by the broker: the point
				}
			}
		}()
	}
	wg.Wait()
	grown := int64(heapInUse()) - int64(before)
	t.Logf("heap in use grew by %.1f MiB with %d connections each announcing %d MiB and sending %d MiB before authentication",
		float64(grown)/(1<<20), conns, announced>>20, sent>>20)
	if grown > 64<<20 {
		t.Errorf("heap in use grew by %d MiB, the bound is 64 MiB", grown>>20)
	}
	errs := make([]error, conns)
	for i, nc := range ncs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = closedWithin(nc, closeWithin)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Errorf("connections left open after announcing %d MiB before authentication: %v", announced>>20, err)
	}
	// The listener still serves, and authenticated clients may send large requests.
	rc := dialRaw(t, addr)
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.Version, handshake.Mechanism = 1, "PLAIN"
	if r := rc.roundTrip(handshake).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: error %d", r.ErrorCode)
	}
	authReq := kmsg.NewPtrSASLAuthenticateRequest()
	authReq.Version, authReq.SASLAuthBytes = 1, []byte("\x00"+plainUser+"\x00"+plainPassword)
	if r := rc.roundTrip(authReq).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslAuthenticate: error %d", r.ErrorCode)
	}
	big := kmsg.NewPtrMetadataRequest()
	big.Version, big.AllowAutoTopicCreation = 9, false
	for i := range 30000 { // ~0.7 MiB, over the pre-authentication bound
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr(fmt.Sprintf("no-such-topic-%08d", i))
		big.Topics = append(big.Topics, topic)
	}
	if f := rc.frame(big); len(f) <= 524288 {
		t.Fatalf("the authenticated request is %d bytes, not over the bound", len(f))
	}
	rc.correlationID--
	if resp := rc.roundTrip(big).(*kmsg.MetadataResponse); len(resp.Topics) != len(big.Topics) {
		t.Fatalf("Metadata of %d topics answered %d", len(big.Topics), len(resp.Topics))
	}
}

// TestSecurity_ConnectionsPerIP: max.connections.per.ip.overrides limits 127.0.0.2 to
// two connections; a third is closed at once while 127.0.0.1 is not limited, and a
// connection closed makes room again.
func TestSecurity_ConnectionsPerIP(t *testing.T) {
	probe, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: rawTimeout}).Dial("tcp", "127.0.0.1:1")
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Skip("no 127.0.0.2 on this host's loopback")
	}
	if probe != nil {
		probe.Close()
	}
	s := startSASLNode(t, WithProperty("max.connections.per.ip.overrides", "127.0.0.2:2"))
	addr := s.addr("PLAINTEXT")
	dialFrom2 := func(t *testing.T) *rawConn {
		t.Helper()
		nc, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: rawTimeout}).Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return &rawConn{t: t, nc: nc}
	}
	first, second := dialFrom2(t), dialFrom2(t)
	for _, rc := range []*rawConn{first, second} {
		if !apiVersionsOK(rc, rawTimeout) {
			t.Fatal("a connection within the per-IP limit was not served")
		}
	}
	third := dialFrom2(t)
	if err := closedWithin(third.nc, closeWithin); err != nil {
		t.Fatalf("a third connection from 127.0.0.2: %v", err)
	}
	// 127.0.0.1 is under the default (unlimited).
	for range 5 {
		if !apiVersionsOK(dialRaw(t, addr), rawTimeout) {
			t.Fatal("a connection from 127.0.0.1 was not served")
		}
	}
	// Once the broker has seen one close, there is room for one more.
	first.nc.Close()
	testwait.For(t, testTimeout, func() error {
		if !apiVersionsOK(dialFrom2(t), 2*time.Second) {
			return errors.New("no room after a connection from 127.0.0.2 closed")
		}
		return nil
	})
	// The overrides are dynamic: raised to 3, a third connection is served.
	ctx, cancel := context.WithTimeout(testContext(t), testTimeout)
	defer cancel()
	v := "127.0.0.2:3"
	adm := kadm.NewClient(newClient(t, []string{addr}))
	if resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "max.connections.per.ip.overrides", Value: &v}}, 0); err != nil || resp[0].Err != nil {
		t.Fatalf("altering max.connections.per.ip.overrides: %v %v", err, resp)
	}
	testwait.For(t, testTimeout, func() error {
		if !apiVersionsOK(dialFrom2(t), 2*time.Second) {
			return errors.New("a third connection from 127.0.0.2 is refused after raising its override to 3")
		}
		return nil
	})
}

// TestSecurity_MaxConnections: with max.connections=3 a fourth connection on a client
// listener is held back (Kafka blocks accepting) while one on the inter-broker listener
// is served; once connections close the held one is served.
func TestSecurity_MaxConnections(t *testing.T) {
	s := startSASLNode(t,
		WithProperty("listeners", "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
		WithProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"),
		WithProperty("max.connections", "3"))
	external := s.addr("EXTERNAL")
	var served []*rawConn
	for range 3 {
		rc := dialRaw(t, external)
		if !apiVersionsOK(rc, rawTimeout) {
			t.Fatal("a connection within max.connections was not served")
		}
		served = append(served, rc)
	}
	held := dialRaw(t, external)
	if apiVersionsOK(held, time.Second) {
		t.Fatal("a fourth connection was served with max.connections=3")
	}
	// The inter-broker listener is exempt (Kafka protects replication).
	inter := dialRaw(t, s.addr("PLAINTEXT"))
	if !apiVersionsOK(inter, rawTimeout) {
		t.Fatal("a connection on the inter-broker listener was not served at max.connections")
	}
	// It counts, though: two must close before the held connection is accepted.
	inter.nc.Close()
	served[0].nc.Close()
	if err := readAnswer(held, rawTimeout); err != nil {
		t.Fatalf("the held connection was not served after two closed: %v", err)
	}
}

// TestSecurity_IdleConnectionsClosed: connections.max.idle.ms closes a connection that
// sent nothing and one that went quiet after a request, not before the idle time.
func TestSecurity_IdleConnectionsClosed(t *testing.T) {
	const idle = 500 * time.Millisecond
	s := startSASLNode(t, WithProperty("connections.max.idle.ms", fmt.Sprint(idle.Milliseconds())))
	for _, listener := range []string{"PLAINTEXT", "SASL_PLAINTEXT"} {
		t.Run(listener, func(t *testing.T) {
			silent := dialRaw(t, s.addr(listener))
			quiet := dialRaw(t, s.addr(listener))
			start := time.Now()
			if !apiVersionsOK(quiet, rawTimeout) {
				t.Fatal("ApiVersions was not answered")
			}
			answered := time.Now()
			for _, c := range []struct {
				name  string
				rc    *rawConn
				since time.Time
			}{{"silent", silent, start}, {"quiet", quiet, answered}} {
				if err := closedWithin(c.rc.nc, 20*idle); err != nil {
					t.Fatalf("%s connection: %v", c.name, err)
				}
				if d := time.Since(c.since); d < idle-50*time.Millisecond {
					t.Fatalf("%s connection closed after %s, before connections.max.idle.ms %s", c.name, d, idle)
				}
			}
		})
	}
}

// TestSecurity_ParallelFailedLoginsPaced: 20 connections from one host send a wrong
// password at once; the failures are answered one per
// connection.failed.authentication.delay.ms, so the i-th answer comes no sooner than
// i delays after the attempts began.
func TestSecurity_ParallelFailedLoginsPaced(t *testing.T) {
	const delay, attempts = 100 * time.Millisecond, 20
	s := startSASLNode(t, WithProperty("connection.failed.authentication.delay.ms", fmt.Sprint(delay.Milliseconds())))
	addr := s.addr("SASL_PLAINTEXT")
	conns := make([]*rawConn, attempts)
	for i := range conns {
		rc := dialRaw(t, addr)
		handshake := kmsg.NewPtrSASLHandshakeRequest()
		handshake.Version, handshake.Mechanism = 1, "PLAIN"
		if r := rc.roundTrip(handshake).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
			t.Fatalf("SaslHandshake: error %d", r.ErrorCode)
		}
		conns[i] = rc
	}
	frames := make([][]byte, attempts)
	for i, rc := range conns {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, []byte("\x00"+plainUser+"\x00wrong")
		frames[i] = rc.frame(req)
	}
	answers := make([]time.Duration, attempts)
	errs := make([]error, attempts)
	var wg sync.WaitGroup
	start := time.Now()
	for i, rc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := rc.nc.Write(frames[i]); err != nil {
				errs[i] = err
				return
			}
			if err := rc.nc.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
				errs[i] = err
				return
			}
			var size [4]byte
			if _, err := io.ReadFull(rc.nc, size[:]); err != nil {
				errs[i] = fmt.Errorf("attempt %d: %w", i, err)
				return
			}
			answers[i] = time.Since(start)
			body := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(rc.nc, body); err != nil {
				errs[i] = err
				return
			}
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			resp.Version = 1
			if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
				errs[i] = fmt.Errorf("attempt %d: answer %+v, %v", i, resp, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	slices.Sort(answers)
	t.Logf("%d parallel failures answered between %s and %s", attempts, answers[0], answers[attempts-1])
	for i, at := range answers {
		if want := time.Duration(i+1) * delay; at < want {
			t.Fatalf("answer %d of %d came %s after the attempts began, before %s (one per %s): answers %v",
				i+1, attempts, at, want, delay, answers)
		}
	}
}
