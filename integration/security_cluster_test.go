package integration

// A 3-node cluster whose only listener is SASL_SSL: brokers register, heartbeat,
// replicate and elect with their inter-broker credentials (PLAIN, from the listener's
// JAAS configuration) and the Raft transport runs mutual TLS. A fourth node without
// the credentials and certificates can neither join Raft nor fetch.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// saslSSLProperties are the properties of a SASL_SSL-only node whose keystore is
// keystore.
func saslSSLProperties(ca *testCA, keystore, jaas string) map[string]string {
	return map[string]string{
		"listeners":                                     "SASL_SSL://127.0.0.1:0",
		"inter.broker.listener.name":                    "SASL_SSL",
		"sasl.mechanism.inter.broker.protocol":          "PLAIN",
		"sasl.enabled.mechanisms":                       "PLAIN,SCRAM-SHA-512",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
		"ssl.keystore.type":                             "PEM",
		"ssl.keystore.location":                         keystore,
		"ssl.truststore.type":                           "PEM",
		"ssl.truststore.location":                       ca.truststore,
	}
}

func TestSecurity_SASLSSLClusterReplicatesAndElects(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "cluster-ca")
	server := ca.issue("broker", false)
	var opts []Option
	for k, v := range saslSSLProperties(ca, server.keystore, plainJAAS()) {
		opts = append(opts, WithProperty(k, v))
	}
	c := StartCluster(t, 3, opts...)
	secure := []kgo.Opt{dialTLS(ca.clientTLS(nil)), saslOpt("PLAIN", plainUser, plainPassword)}
	cl := c.Client(t, append(secure, kgo.RequiredAcks(kgo.AllISRAcks()))...)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(testContext(t), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "replicated"); err != nil {
		t.Fatal(err)
	}
	// Every replica joins the ISR: the followers fetch over SASL_SSL.
	testwait.For(t, 30*time.Second, func() error {
		p := c.Node(0).Image().Topic("replicated")
		if p == nil || len(p.Partitions) == 0 || len(p.Partitions[0].ISR) != 3 {
			return fmt.Errorf("ISR not full yet: %+v", p)
		}
		return nil
	})
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "replicated", Value: []byte(recordValue("r", i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 20)
	leader := int(c.Node(0).Image().Topic("replicated").Partitions[0].Leader)
	c.Kill(leader)
	testwait.For(t, 30*time.Second, func() error {
		for _, i := range c.live() {
			if l := c.Node(i).Image().Topic("replicated").Partitions[0].Leader; l < 0 || int(l) == leader {
				return fmt.Errorf("node-%d still sees leader %d", i, l)
			}
		}
		return nil
	})
	produce(20, 40)
	consumer := newClient(t, c.Addrs(), append(secure, kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	seen := map[string]bool{}
	for len(seen) < 40 && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if len(seen) != 40 {
		t.Fatalf("read %d of 40 records back", len(seen))
	}

	t.Run("a node without the credentials cannot join nor fetch", func(t *testing.T) {
		stranger := newTestCA(t, "stranger-ca")
		cert := stranger.issue("intruder", false)
		// Its own CA trusts the cluster's certificates, so only the cluster's side can
		// refuse it.
		props := saslSSLProperties(stranger, cert.keystore,
			`org.apache.kafka.common.security.plain.PlainLoginModule required username="`+brokerUser+`" password="guess" user_x="y";`)
		writePEM(t, stranger.truststore, append(mustRead(t, stranger.truststore), mustRead(t, ca.truststore)...))
		b, err := broker.Start(broker.Config{
			NodeID: 7, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
			Voters: c.voters, JoinAddrs: c.joinAddrs, Properties: props,
			Logger: hclog.New(&hclog.LoggerOptions{Output: &testLogWriter{t: t, prefix: "intruder "}, Level: hclog.Warn}),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Kill)
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		defer wcancel()
		if err := b.WaitReady(wctx); err == nil {
			t.Fatal("the intruder became ready")
		}
		voters, nonvoters, err := c.Node(c.live()[0]).RaftServers()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(append(voters, nonvoters...), 7) {
			t.Fatalf("the intruder joined Raft: voters %v, non-voters %v", voters, nonvoters)
		}
		// Straight to a member's Raft port with the stranger's certificate: the TLS
		// handshake is refused.
		conf := ca.clientTLS(&cert)
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: conf}
		raftAddr := c.nodes[c.live()[0]].raftAddr
		if conn, err := d.DialContext(ctx, "tcp", raftAddr); err == nil {
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := conn.Read(make([]byte, 1)); err == nil {
				t.Fatal("the Raft transport accepted a stranger's certificate")
			}
			conn.Close()
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := osReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
