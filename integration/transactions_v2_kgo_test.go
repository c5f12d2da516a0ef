package integration

// franz-go end to end on both transaction versions: kgo takes the Transactions V2 path
// when a broker's ApiVersions finalizes transaction.version 2 (client.go
// supportsKIP890p2): Produce v12 without AddPartitionsToTxn, EndTxn v5 with the epoch
// bumped, TxnOffsetCommit v5 without AddOffsetsToTxn. Without it kgo keeps TV1 on the
// same cluster.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// finalizedFeaturesDialer returns a kgo dialer whose connections add features (name:
// finalized level) to every ApiVersions response, as a broker of a cluster that
// finalized them answers. The brokers advertise the levels themselves once the feature
// records exist; until then this is how a test shows kgo a TV2 cluster.
func finalizedFeaturesDialer(features map[string]int16) func(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &featuresConn{Conn: conn, features: features, apiVersions: map[int32]int16{}}, nil
	}
}

// featuresConn rewrites ApiVersions responses; it notes the correlation ids of the
// ApiVersions requests written through it.
type featuresConn struct {
	net.Conn
	features map[string]int16

	mu          sync.Mutex
	written     []byte          // request bytes not yet framed; guarded by mu
	apiVersions map[int32]int16 // correlation id -> ApiVersions request version; guarded by mu
	pending     []byte          // the response frame being read (Read's goroutine only)
}

func (c *featuresConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.written = append(c.written, p...)
	for len(c.written) >= 4 {
		n := int(binary.BigEndian.Uint32(c.written))
		if len(c.written) < 4+n {
			break
		}
		frame := c.written[4 : 4+n]
		if n >= 8 && int16(binary.BigEndian.Uint16(frame)) == kmsg.ApiVersions.Int16() {
			c.apiVersions[int32(binary.BigEndian.Uint32(frame[4:]))] = int16(binary.BigEndian.Uint16(frame[2:]))
		}
		c.written = c.written[4+n:]
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *featuresConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		var size [4]byte
		if _, err := io.ReadFull(c.Conn, size[:]); err != nil {
			return 0, err
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c.Conn, body); err != nil {
			return 0, err
		}
		c.pending = c.rewrite(body)
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// rewrite returns the framed response body (correlation id first), with the features
// added when it answers an ApiVersions request of v3 or later.
func (c *featuresConn) rewrite(body []byte) []byte {
	frame := func(b []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...) }
	if len(body) < 4 {
		return frame(body)
	}
	corr := int32(binary.BigEndian.Uint32(body))
	c.mu.Lock()
	version, ok := c.apiVersions[corr]
	delete(c.apiVersions, corr)
	c.mu.Unlock()
	if !ok || version < 3 {
		return frame(body)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != 0 {
		return frame(body)
	}
	resp.FinalizedFeaturesEpoch = 1
	for name, level := range c.features {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = name, 0, level
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, level, level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	return frame(resp.AppendTo(binary.BigEndian.AppendUint32(nil, uint32(corr))))
}

// kgoTransactions runs a committed, an aborted and a committed transaction of 10
// records each through a kgo producer made with opts, and checks what read_committed
// and read_uncommitted see.
func kgoTransactions(t *testing.T, c *Cluster, topic, id string, opts ...kgo.Opt) {
	t.Helper()
	opts = append([]kgo.Opt{kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, opts...)
	producer := c.Client(t, opts...)
	ctx := testContext(t)
	for _, tx := range []struct {
		prefix string
		end    kgo.TransactionEndTry
	}{{"committed", kgo.TryCommit}, {"aborted", kgo.TryAbort}, {"committed2", kgo.TryCommit}} {
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", tx.prefix, i))).FirstErr(); err != nil {
				t.Fatalf("produce in the %s transaction: %v", tx.prefix, err)
			}
		}
		if err := producer.EndTransaction(ctx, tx.end); err != nil {
			t.Fatalf("ending the %s transaction: %v", tx.prefix, err)
		}
	}
	committed := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), 20)
	for _, v := range committed {
		if strings.HasPrefix(v, "aborted") {
			t.Fatalf("read_committed returned an aborted record %q", v)
		}
	}
	if len(committed) != 20 {
		t.Fatalf("read_committed got %d records, want 20", len(committed))
	}
	if all := consumeTxnTopic(t, c, topic, kgo.ReadUncommitted(), 30); len(all) != 30 {
		t.Fatalf("read_uncommitted got %d records, want 30", len(all))
	}
}

// sawOnAnyNode reports whether any node of c received key at one of versions.
func sawOnAnyNode(c *Cluster, key kmsg.Key, versions ...int16) bool {
	for i := range c.nodes {
		for _, v := range versions {
			if c.SawRequest(i, key.Int16(), v) {
				return true
			}
		}
	}
	return false
}

func TestTransactionsV2Kgo(t *testing.T) {
	withTransactionVersion(t, 2)
	c := StartCluster(t, 3, txnOptions()...)
	const topic = "txn-v2-kgo"
	c.CreateTopicRF(t, topic, 3, 3, nil)
	kgoTransactions(t, c, topic, "txn-v2-kgo-producer",
		kgo.Dialer(finalizedFeaturesDialer(map[string]int16{"transaction.version": 2})))
	if !sawOnAnyNode(c, kmsg.EndTxn, 5) || !sawOnAnyNode(c, kmsg.Produce, 12, 13) {
		t.Fatal("kgo did not take the TV2 path (EndTxn v5, Produce v12+)")
	}
	if sawOnAnyNode(c, kmsg.AddPartitionsToTxn, 0, 1, 2, 3) {
		t.Fatal("a TV2 client sent AddPartitionsToTxn")
	}
}

// TestTransactionsV1KgoOnTV2Cluster: a client that does not see transaction.version 2
// keeps TV1 (AddPartitionsToTxn, EndTxn v4) on a cluster at TV2, exactly as before.
func TestTransactionsV1KgoOnTV2Cluster(t *testing.T) {
	withTransactionVersion(t, 2)
	c := StartCluster(t, 3, txnOptions()...)
	const topic = "txn-v1-kgo"
	c.CreateTopicRF(t, topic, 3, 3, nil)
	kgoTransactions(t, c, topic, "txn-v1-kgo-producer")
	if sawOnAnyNode(c, kmsg.EndTxn, 5) || !sawOnAnyNode(c, kmsg.AddPartitionsToTxn, 3) {
		t.Fatal("kgo without TV2 did not take the TV1 path")
	}
}

// TestTransactionsV2KgoGroupTransactSession: a TV2 GroupTransactSession commits its
// offsets with TxnOffsetCommit v5, which adds the group's partition to the transaction
// itself: no AddOffsetsToTxn, and the offsets still commit with the transaction.
func TestTransactionsV2KgoGroupTransactSession(t *testing.T) {
	withTransactionVersion(t, 2)
	c := StartCluster(t, 3, append(txnOptions(), groupOptions()...)...)
	kgoGroupTransactSession(t, c, kgo.Dialer(finalizedFeaturesDialer(map[string]int16{"transaction.version": 2})))
	if !sawOnAnyNode(c, kmsg.TxnOffsetCommit, 5) || !sawOnAnyNode(c, kmsg.EndTxn, 5) {
		t.Fatal("the session did not take the TV2 path (TxnOffsetCommit v5, EndTxn v5)")
	}
	if sawOnAnyNode(c, kmsg.AddOffsetsToTxn, 0, 1, 2, 3, 4) {
		t.Fatal("a TV2 session sent AddOffsetsToTxn")
	}
}
