package integration

// Listeners, TLS and SASL from the outside: one node serving PLAINTEXT (the
// inter-broker listener), SSL (client certificates required), SASL_PLAINTEXT and
// SASL_SSL; kgo connects on each with each mechanism; wrong credentials, expired
// certificates and plaintext to a TLS port are refused, the connection closed and
// nothing served.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// secureNode is a one-node cluster with all four security protocols.
type secureNode struct {
	*Cluster
	ca     *testCA
	client issued // a client certificate, CN=client
}

// addr is the bound address of the named listener.
func (s *secureNode) addr(listener string) string {
	a := s.Node(0).ListenerAddr(listener)
	if a == nil {
		s.t.Fatalf("no listener %s", listener)
	}
	return a.String()
}

func startSecureNode(t *testing.T, extra ...Option) *secureNode {
	t.Helper()
	ca := newTestCA(t, "petrel-test-ca")
	server := ca.issue("broker", false)
	opts := []Option{
		WithProperty("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"),
		WithProperty("petrel.raft.security.protocol", "PLAINTEXT"), // one node: no Raft peer
		WithProperty("ssl.keystore.type", "PEM"),
		WithProperty("ssl.keystore.location", server.keystore),
		WithProperty("ssl.truststore.type", "PEM"),
		WithProperty("ssl.truststore.location", ca.truststore),
		WithProperty("listener.name.ssl.ssl.client.auth", "required"),
		WithProperty("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"),
		WithProperty("listener.name.sasl_plaintext.plain.sasl.jaas.config", plainJAAS()),
		WithProperty("listener.name.sasl_ssl.plain.sasl.jaas.config", plainJAAS()),
	}
	c := StartCluster(t, 1, append(opts, extra...)...)
	s := &secureNode{Cluster: c, ca: ca, client: ca.issue("client", false)}
	// SCRAM users are created over the PLAINTEXT listener, as an operator would on an
	// internal network (kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[...]').
	adm := kadm.NewClient(newClient(t, []string{s.addr("PLAINTEXT")}))
	ctx, cancel := context.WithTimeout(testContext(t), 15*time.Second)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: scramUser, Mechanism: kadm.ScramSha256, Iterations: 8192, Password: scramPassword},
		{User: scramUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: scramPassword},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("upsert SCRAM %s: %v", r.User, r.Err)
		}
	}
	return s
}

// roundTrip produces one record to topic with cl and reads it back.
func roundTrip(t *testing.T, cl *kgo.Client, topic, value string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), 15*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	cl.AddConsumeTopics(topic)
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("fetch: %w", err)
		}
		var found bool
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == value })
		if found {
			return nil
		}
	}
	return fmt.Errorf("record %q not read back: %w", value, ctx.Err())
}

func TestSecurity_KgoEveryListenerAndMechanism(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	s.CreateTopic(t, "secure", 1, nil)
	cases := []struct {
		name, listener string
		opts           []kgo.Opt
		principal      string
	}{
		{"SSL client certificate", "SSL", []kgo.Opt{dialTLS(s.ca.clientTLS(&s.client))}, "User:CN=client,O=Petrel tests"},
		{"SASL_PLAINTEXT PLAIN", "SASL_PLAINTEXT", []kgo.Opt{saslOpt("PLAIN", plainUser, plainPassword)}, "User:" + plainUser},
		{"SASL_PLAINTEXT SCRAM-SHA-256", "SASL_PLAINTEXT", []kgo.Opt{saslOpt("SCRAM-SHA-256", scramUser, scramPassword)}, "User:" + scramUser},
		{"SASL_PLAINTEXT SCRAM-SHA-512", "SASL_PLAINTEXT", []kgo.Opt{saslOpt("SCRAM-SHA-512", scramUser, scramPassword)}, "User:" + scramUser},
		{"SASL_SSL PLAIN", "SASL_SSL", []kgo.Opt{dialTLS(s.ca.clientTLS(nil)), saslOpt("PLAIN", plainUser, plainPassword)}, "User:" + plainUser},
		{"SASL_SSL SCRAM-SHA-512", "SASL_SSL", []kgo.Opt{dialTLS(s.ca.clientTLS(nil)), saslOpt("SCRAM-SHA-512", scramUser, scramPassword)}, "User:" + scramUser},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := s.addr(tc.listener)
			cl := newClient(t, []string{addr}, tc.opts...)
			if err := roundTrip(t, cl, "secure", fmt.Sprintf("v%d", i)); err != nil {
				t.Fatal(err)
			}
			// Metadata answers with the endpoints of the listener the request came in on.
			ctx, cancel := context.WithTimeout(testContext(t), 10*time.Second)
			defer cancel()
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(addr)
			if len(resp.Brokers) != 1 || strconv.Itoa(int(resp.Brokers[0].Port)) != port {
				t.Fatalf("Metadata on %s advertised %+v, expected port %s", tc.listener, resp.Brokers, port)
			}
		})
	}
}

func TestSecurity_Refusals(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	expired := s.ca.issue("expired-client", true)
	other := newTestCA(t, "stranger-ca")
	stranger := other.issue("stranger", false)
	cases := []struct {
		name, listener string
		opts           []kgo.Opt
		want           error // a Kafka error, or nil for a TLS/connection failure
	}{
		{"PLAIN wrong password", "SASL_PLAINTEXT", []kgo.Opt{saslOpt("PLAIN", plainUser, "wrong")}, kerr.SaslAuthenticationFailed},
		{"PLAIN unknown user", "SASL_SSL", []kgo.Opt{dialTLS(s.ca.clientTLS(nil)), saslOpt("PLAIN", "mallory", "x")}, kerr.SaslAuthenticationFailed},
		{"SCRAM-SHA-256 wrong password", "SASL_PLAINTEXT", []kgo.Opt{saslOpt("SCRAM-SHA-256", scramUser, "wrong")}, kerr.SaslAuthenticationFailed},
		{"SCRAM-SHA-512 unknown user", "SASL_SSL", []kgo.Opt{dialTLS(s.ca.clientTLS(nil)), saslOpt("SCRAM-SHA-512", "mallory", "x")}, kerr.SaslAuthenticationFailed},
		{"PLAIN user is no SCRAM user", "SASL_PLAINTEXT", []kgo.Opt{saslOpt("SCRAM-SHA-256", plainUser, plainPassword)}, kerr.SaslAuthenticationFailed},
		{"expired client certificate", "SSL", []kgo.Opt{dialTLS(s.ca.clientTLS(&expired))}, nil},
		{"untrusted client certificate", "SSL", []kgo.Opt{dialTLS(s.ca.clientTLS(&stranger))}, nil},
		{"no client certificate", "SSL", []kgo.Opt{dialTLS(s.ca.clientTLS(nil))}, nil},
		{"plaintext to the SSL port", "SSL", nil, nil},
		{"plaintext to the SASL_SSL port", "SASL_SSL", []kgo.Opt{saslOpt("PLAIN", plainUser, plainPassword)}, nil},
		{"no SASL on the SASL port", "SASL_PLAINTEXT", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]kgo.Opt{kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}, tc.opts...)
			cl := newClient(t, []string{s.addr(tc.listener)}, opts...)
			ctx, cancel := context.WithTimeout(testContext(t), 10*time.Second)
			defer cancel()
			_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if err == nil {
				t.Fatal("Metadata was served")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, expected %v", err, tc.want)
			}
		})
	}
}

// rawFrame writes one request on nc and returns the response body (after the
// correlation id), or the read error.
func rawFrame(t *testing.T, nc net.Conn, req kmsg.Request, corr int32) ([]byte, error) {
	t.Helper()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	if _, err := nc.Write(f.AppendRequest(nil, req, corr)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, body); err != nil {
		return nil, err
	}
	return body[4:], nil
}

func TestSecurity_RawSASLRules(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t, WithProperty("listener.name.sasl_plaintext.connections.max.reauth.ms", "600000"))
	dial := func(t *testing.T) net.Conn {
		nc, err := net.DialTimeout("tcp", s.addr("SASL_PLAINTEXT"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		return nc
	}
	handshake := func(t *testing.T, nc net.Conn, mech string) *kmsg.SASLHandshakeResponse {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = 1, mech
		body, err := rawFrame(t, nc, req, 1)
		if err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 1
		if err := resp.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	authenticate := func(t *testing.T, nc net.Conn, msg []byte) *kmsg.SASLAuthenticateResponse {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, msg
		body, err := rawFrame(t, nc, req, 2)
		if err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = 1
		if err := resp.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	expectClosed := func(t *testing.T, nc net.Conn) {
		t.Helper()
		if _, err := rawFrame(t, nc, kmsg.NewPtrMetadataRequest(), 9); err == nil {
			t.Fatal("the connection still serves requests")
		}
	}

	t.Run("Metadata before authentication closes the connection", func(t *testing.T) {
		nc := dial(t)
		if _, err := rawFrame(t, nc, kmsg.NewPtrMetadataRequest(), 1); err == nil {
			t.Fatal("Metadata was answered before authentication")
		}
	})
	t.Run("unsupported mechanism", func(t *testing.T) {
		nc := dial(t)
		resp := handshake(t, nc, "GSSAPI")
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 3 {
			t.Fatalf("handshake %+v", resp)
		}
		expectClosed(t, nc)
	})
	t.Run("wrong password answers SASL_AUTHENTICATION_FAILED and closes", func(t *testing.T) {
		nc := dial(t)
		if resp := handshake(t, nc, "PLAIN"); resp.ErrorCode != 0 {
			t.Fatalf("handshake %+v", resp)
		}
		resp := authenticate(t, nc, []byte("\x00"+plainUser+"\x00wrong"))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("authenticate: error %d, expected %d", resp.ErrorCode, kerr.SaslAuthenticationFailed.Code)
		}
		expectClosed(t, nc)
	})
	t.Run("success serves requests and tells the session lifetime", func(t *testing.T) {
		nc := dial(t)
		handshake(t, nc, "PLAIN")
		resp := authenticate(t, nc, []byte("\x00"+plainUser+"\x00"+plainPassword))
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 600000 {
			t.Fatalf("authenticate %+v, expected success with session_lifetime_ms 600000", resp)
		}
		if _, err := rawFrame(t, nc, kmsg.NewPtrMetadataRequest(), 3); err != nil {
			t.Fatalf("Metadata after authentication: %v", err)
		}
		// KIP-368 re-authentication on the same connection, as the same principal.
		handshake(t, nc, "PLAIN")
		if resp := authenticate(t, nc, []byte("\x00"+plainUser+"\x00"+plainPassword)); resp.ErrorCode != 0 {
			t.Fatalf("re-authentication %+v", resp)
		}
		// Re-authenticating as someone else is refused.
		handshake(t, nc, "PLAIN")
		if resp := authenticate(t, nc, []byte("\x00"+brokerUser+"\x00"+brokerPass)); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("re-authentication as another principal %+v", resp)
		}
		expectClosed(t, nc)
	})
}
