package integration

// Strangers on the Raft port of a cluster whose listeners authenticate clients. A
// forged 18-byte TimeoutNow from anyone who could reach a plaintext Raft port moved a
// SASL cluster's term from 2 to 5, and a forged AppendEntries could write metadata
// (ACLs, SCRAM credentials). Plaintext Raft is now refused at start on such a cluster
// (broker/raft_security_test.go); with Raft mutual TLS a stranger is refused whether it
// has no certificate or an application certificate the cluster's CA signed.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/internal/testwait"
)

// hashicorp/raft NetworkTransport rpc types (net_transport.go): a request is the type
// byte, then the request in msgpack; the answer is an error string, then the response.
const (
	raftRPCAppendEntries byte = 0
	raftRPCTimeoutNow    byte = 3
)

// raftFrame is one NetworkTransport request.
func raftFrame(t testing.TB, rpcType byte, req any) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteByte(rpcType)
	if err := codec.NewEncoder(&buf, &codec.MsgpackHandle{}).Encode(req); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sendRaftFrame dials addr (TLS with config when given), writes frame and reads the
// answer's error string. A nil error means the node answered: it processed the frame.
func sendRaftFrame(ctx context.Context, addr string, config *tls.Config, frame []byte) error {
	var conn net.Conn
	var err error
	nd := &net.Dialer{Timeout: 5 * time.Second}
	if config != nil {
		conn, err = (&tls.Dialer{NetDialer: nd, Config: config}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = nd.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write(frame); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	var rpcError string
	if err := codec.NewDecoder(bufio.NewReader(conn), &codec.MsgpackHandle{}).Decode(&rpcError); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

// TestSecurity_RaftStrangerFramesRefused: on a 3-node SASL_SSL cluster (Raft mutual
// TLS by default, as the inter-broker listener uses TLS) a stranger's TimeoutNow and
// AppendEntries (a higher term, as a new leader would send) are not processed by any
// node, whether it speaks plaintext, TLS without a certificate, or TLS with an
// application's certificate (CN=app-client) signed by the cluster's CA; the Raft term
// does not move. The nodes accept each other: the default allowed principals hold the
// inter-broker principal.
func TestSecurity_RaftStrangerFramesRefused(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "cluster-ca")
	server := ca.issue("broker", false)
	app := ca.issue("app-client", false)
	// Slow failure detection, so that only a stranger could move the term.
	opts := []Option{WithProperty("controller.quorum.fetch.timeout.ms", "3000"), WithProperty("controller.quorum.election.timeout.ms", "3000")}
	for k, v := range saslSSLProperties(ca, server.keystore, plainJAAS()) {
		opts = append(opts, WithProperty(k, v))
	}
	c := StartCluster(t, 3, opts...)
	ctrl := c.Controller()
	term := c.Node(ctrl).ControllerEpoch()
	terms := func() []uint64 {
		var out []uint64
		for i := range 3 {
			out = append(out, c.Node(i).ControllerEpoch())
		}
		return out
	}
	testwait.For(t, convergeTimeout, func() error {
		for i, tm := range terms() {
			if tm != term {
				return fmt.Errorf("node-%d is at term %d, the controller at %d", i, tm, term)
			}
		}
		return nil
	})

	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("666"), Addr: []byte("127.0.0.1:1")}
	frames := []struct {
		name  string
		frame []byte
	}{
		{"TimeoutNow", raftFrame(t, raftRPCTimeoutNow, &raft.TimeoutNowRequest{RPCHeader: header})},
		{"AppendEntries", raftFrame(t, raftRPCAppendEntries, &raft.AppendEntriesRequest{RPCHeader: header,
			Term: term + 1, Leader: []byte("127.0.0.1:1"), LeaderCommitIndex: 0})},
	}
	strangers := []struct {
		name   string
		config *tls.Config
	}{
		{"plaintext", nil},
		{"TLS without a certificate", ca.clientTLS(nil)},
		{"TLS with an application certificate of the cluster's CA", ca.clientTLS(&app)},
	}
	ctx := testContext(t)
	for _, s := range strangers {
		for _, f := range frames {
			for i := range 3 {
				if err := sendRaftFrame(ctx, c.nodes[i].raftAddr, s.config, f.frame); err == nil {
					t.Errorf("%s: node-%d answered a %s", s.name, i, f.name)
				}
			}
		}
	}
	if got := terms(); fmt.Sprint(got) != fmt.Sprint([]uint64{term, term, term}) {
		t.Fatalf("Raft terms %v after the strangers' frames, were all %d", got, term)
	}
	if now := c.Controller(); now != ctrl {
		t.Fatalf("the controller moved from node-%d to node-%d", ctrl, now)
	}
}
