package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/internal/testwait"
)

// allowedPrincipalsProperty is petrel.raft.allowed.principals.
const allowedPrincipalsProperty = "petrel.raft.allowed.principals"

// raftTestJAAS is a PLAIN JAAS configuration: the broker's own credentials and the
// users admin, alice and erin.
const raftTestJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" ` +
	`user_broker="broker-secret" user_admin="admin-secret" user_alice="alice-secret" user_erin="erin-secret";`

// saslPlaintextProps are the properties of a node whose only listener is
// SASL_PLAINTEXT (also the inter-broker listener), PLAIN.
func saslPlaintextProps() map[string]string {
	return map[string]string{
		"listeners":                                           "SASL_PLAINTEXT://127.0.0.1:0",
		"security.inter.broker.protocol":                      "SASL_PLAINTEXT",
		"sasl.mechanism.inter.broker.protocol":                "PLAIN",
		"sasl.enabled.mechanisms":                             "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": raftTestJAAS,
	}
}

// TestRaftSecurity_PlaintextRaftRefusedWhenListenersAuthenticate: a node whose listeners
// use SASL or SSL does not start with a plaintext Raft transport unless
// petrel.raft.security.protocol=PLAINTEXT says so (a stranger's 18-byte TimeoutNow moved
// such a cluster's term); when it does, every start logs one WARN that Raft is
// unauthenticated, and nothing else at WARN or ERROR.
func TestRaftSecurity_PlaintextRaftRefusedWhenListenersAuthenticate(t *testing.T) {
	ca := newRaftTestCA(t)
	server := ca.issue("broker")
	mixedSASL := map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": raftTestJAAS,
	}
	mixedSSL := map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"ssl.keystore.location":   server.keystore,
		"ssl.truststore.location": ca.truststore,
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
	}{
		{"SASL_PLAINTEXT only", saslPlaintextProps()},
		{"PLAINTEXT inter-broker, SASL_PLAINTEXT clients", mixedSASL},
		{"PLAINTEXT inter-broker, SSL clients", mixedSSL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Start(Config{NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: tc.props,
				Logger: hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, "node-0 "), Level: hclog.Info})})
			if err == nil {
				b.Shutdown(context.Background())
				t.Fatal("the node started with a plaintext, unauthenticated Raft transport")
			}
			if !errors.Is(err, config.ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), config.RaftSecurityProtocolProperty) {
				t.Fatalf("refused with %v; want ErrInvalidBrokerConfig naming %s", err, config.RaftSecurityProtocolProperty)
			}
		})
	}

	t.Run("explicit PLAINTEXT warns at every start", func(t *testing.T) {
		props := saslPlaintextProps()
		props[config.RaftSecurityProtocolProperty] = "PLAINTEXT"
		dir := t.TempDir()
		for start := range 2 {
			var logs testwait.Buffer
			b, err := Start(Config{NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: props,
				Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
			if err != nil {
				t.Fatalf("start %d: %v", start, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = b.WaitReady(ctx)
			if e := b.Shutdown(ctx); err == nil {
				err = e
			}
			cancel()
			if err != nil {
				t.Fatalf("start %d: %v\n%s", start, err, logs.String())
			}
			warnings := warnAndErrorLines(logs.String())
			if len(warnings) != 1 || !strings.Contains(warnings[0], "[WARN]") || !strings.Contains(warnings[0], "unauthenticated") {
				t.Fatalf("start %d logged %d WARN/ERROR lines, want the one WARN that Raft is unauthenticated:\n%s",
					start, len(warnings), strings.Join(warnings, "\n"))
			}
		}
	})
}

// warnAndErrorLines are the WARN and ERROR lines of a node's log (hashicorp/raft's
// election at start is INFO: raft_logger.go).
func warnAndErrorLines(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
			out = append(out, line)
		}
	}
	return out
}

// TestRaftSecurity_StartChecks: the Raft security properties are checked before
// anything starts.
func TestRaftSecurity_StartChecks(t *testing.T) {
	ca := newRaftTestCA(t)
	server := ca.issue("broker")
	ssl := func(extra map[string]string) map[string]string {
		p := map[string]string{
			"listeners":                      "SSL://127.0.0.1:0",
			"security.inter.broker.protocol": "SSL",
			"ssl.keystore.location":          server.keystore,
			"ssl.truststore.location":        ca.truststore,
		}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		props   map[string]string
		refused string // "" starts
	}{
		{"SSL inter-broker listener: mutual TLS by default", ssl(nil), ""},
		{"principals in User: form", ssl(map[string]string{allowedPrincipalsProperty: "User:CN=broker; User:CN=other,O=Example"}), ""},
		{"a principal without User:", ssl(map[string]string{allowedPrincipalsProperty: "CN=broker"}), allowedPrincipalsProperty},
		{"an empty principal", ssl(map[string]string{allowedPrincipalsProperty: "User:"}), allowedPrincipalsProperty},
		{"principals for a plaintext Raft", map[string]string{allowedPrincipalsProperty: "User:CN=broker"}, allowedPrincipalsProperty},
		{"SSL without a keystore", map[string]string{config.RaftSecurityProtocolProperty: "SSL"}, config.RaftSecurityProtocolProperty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testwait.Buffer
			b, err := Start(Config{NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: tc.props,
				Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
			if tc.refused == "" {
				if err != nil {
					t.Fatal(err)
				}
				b.Shutdown(context.Background())
				if got := warnAndErrorLines(logs.String()); len(got) > 0 {
					t.Fatalf("warnings:\n%s", strings.Join(got, "\n"))
				}
				return
			}
			if err == nil {
				b.Shutdown(context.Background())
				t.Fatal("started")
			}
			if !errors.Is(err, config.ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("refused with %v; want ErrInvalidBrokerConfig naming %s", err, tc.refused)
			}
		})
	}
}

// TestRaftTLS_PeerPrincipalChecked: with Raft mutual TLS, a CA signature is not
// enough. The node accepting a connection refuses a dialer whose certificate's
// principal is not allowed (an application's CN=app-client), or that has none; the
// dialer refuses a server whose principal is not allowed. Allowed by default: the
// node's own certificate's principal (the inter-broker principal) and super.users;
// petrel.raft.allowed.principals replaces them.
func TestRaftTLS_PeerPrincipalChecked(t *testing.T) {
	ca := newRaftTestCA(t)
	server, app, admin := ca.issue("broker"), ca.issue("app-client"), ca.issue("admin")
	props := func(extra ...string) map[string]string {
		p := map[string]string{
			"listeners":                      "SSL://127.0.0.1:0",
			"security.inter.broker.protocol": "SSL",
			"ssl.keystore.location":          server.keystore,
			"ssl.truststore.location":        ca.truststore,
			"super.users":                    "User:CN=admin",
		}
		for i := 0; i+1 < len(extra); i += 2 {
			p[extra[i]] = extra[i+1]
		}
		return p
	}
	// clientTLS dials as a stranger would: trusting the CA, with cert when given.
	clientTLS := func(cert *raftTestCert) *tls.Config {
		c := &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		if cert != nil {
			c.Certificates = []tls.Certificate{cert.pair}
		}
		return c
	}

	t.Run("accepting side", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			props   map[string]string
			cert    *raftTestCert
			allowed bool
		}{
			{"the inter-broker principal", props(), &server, true},
			{"a super user", props(), &admin, true},
			{"an application certificate of the same CA", props(), &app, false},
			{"no certificate", props(), nil, false},
			{"a listed principal", props(allowedPrincipalsProperty, "User:CN=app-client"), &app, true},
			{"the inter-broker principal, not listed", props(allowedPrincipalsProperty, "User:CN=app-client"), &server, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				addr := raftEchoServer(t, &Config{NodeID: 0, Properties: tc.props})
				d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: clientTLS(tc.cert)}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err := func() error {
					conn, err := d.DialContext(ctx, "tcp", addr)
					if err != nil {
						return err
					}
					defer conn.Close()
					return echoRoundTrip(conn)
				}()
				if tc.allowed && err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !tc.allowed && err == nil {
					t.Fatal("the Raft transport served a peer whose principal is not allowed")
				}
			})
		}
	})

	t.Run("dialing side", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			cert    raftTestCert // the server's
			allowed bool
		}{
			{"the inter-broker principal", server, true},
			{"an application certificate of the same CA", app, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				addr := plainTLSEchoServer(t, &tls.Config{Certificates: []tls.Certificate{tc.cert.pair},
					ClientCAs: ca.pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				var d net.Dialer
				sln, dial, err := secureRaft(&Config{NodeID: 1, Properties: props()}, ln, d.DialContext)
				if err != nil {
					t.Fatal(err)
				}
				sln.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err = func() error {
					conn, err := dial(ctx, "tcp", addr)
					if err != nil {
						return err
					}
					defer conn.Close()
					return echoRoundTrip(conn)
				}()
				if tc.allowed && err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !tc.allowed && err == nil {
					t.Fatal("the Raft dialer talked to a server whose principal is not allowed")
				}
			})
		}
	})
}

// raftEchoServer serves cfg's secured Raft listener on 127.0.0.1:0: each connection
// echoes one byte. It stops at cleanup.
func raftEchoServer(t *testing.T, cfg *Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	sln, _, err := secureRaft(cfg, ln, d.DialContext)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	serveEcho(t, sln)
	return ln.Addr().String()
}

// plainTLSEchoServer is a TLS server with config on 127.0.0.1:0 echoing one byte per
// connection, standing for another Raft member.
func plainTLSEchoServer(t *testing.T, config *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", config)
	if err != nil {
		t.Fatal(err)
	}
	serveEcho(t, ln)
	return ln.Addr().String()
}

// serveEcho accepts on ln until cleanup, echoing one byte on each connection.
func serveEcho(t *testing.T, ln net.Listener) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				b := make([]byte, 1)
				if _, err := io.ReadFull(c, b); err != nil {
					return
				}
				_, _ = c.Write(b)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
}

// echoRoundTrip writes a byte and reads it back.
func echoRoundTrip(conn net.Conn) error {
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte{'r'}); err != nil {
		return err
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(conn, b); err != nil {
		return err
	}
	if b[0] != 'r' {
		return errors.New("echo mismatch")
	}
	return nil
}
