package integration

// franz-go end to end on both transaction versions: kgo takes the Transactions V2 path
// when a broker's ApiVersions finalizes transaction.version 2 (client.go
// supportsKIP890p2; a new cluster's level): Produce v12 without AddPartitionsToTxn,
// EndTxn v5 with the epoch bumped, TxnOffsetCommit v5 without AddOffsetsToTxn. A
// client capped below EndTxn v5 keeps TV1 on the same cluster.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	t.Parallel()
	c := StartCluster(t, 3, txnOptions()...)
	const topic = "txn-v2-kgo"
	c.CreateTopicRF(t, topic, 3, 3, nil)
	kgoTransactions(t, c, topic, "txn-v2-kgo-producer")
	if !sawOnAnyNode(c, kmsg.EndTxn, 5) || !sawOnAnyNode(c, kmsg.Produce, 12, 13) {
		t.Fatal("kgo did not take the TV2 path (EndTxn v5, Produce v12+)")
	}
	if sawOnAnyNode(c, kmsg.AddPartitionsToTxn, 0, 1, 2, 3) {
		t.Fatal("a TV2 client sent AddPartitionsToTxn")
	}
}

// TestTransactionsV1KgoOnTV2Cluster: a client capped below EndTxn v5 (an older
// client) keeps TV1 (AddPartitionsToTxn, EndTxn v4) on a cluster at TV2, exactly as
// before.
func TestTransactionsV1KgoOnTV2Cluster(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, txnOptions()...)
	const topic = "txn-v1-kgo"
	c.CreateTopicRF(t, topic, 3, 3, nil)
	tv1 := namedTopicVersions()
	tv1.SetMaxKeyVersion(kmsg.EndTxn.Int16(), 4)
	kgoTransactions(t, c, topic, "txn-v1-kgo-producer", kgo.MaxVersions(tv1))
	if sawOnAnyNode(c, kmsg.EndTxn, 5) || !sawOnAnyNode(c, kmsg.AddPartitionsToTxn, 3) {
		t.Fatal("kgo without TV2 did not take the TV1 path")
	}
}

// TestTransactionsV2KgoGroupTransactSession: a TV2 GroupTransactSession commits its
// offsets with TxnOffsetCommit v5, which adds the group's partition to the transaction
// itself: no AddOffsetsToTxn, and the offsets still commit with the transaction.
func TestTransactionsV2KgoGroupTransactSession(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, append(txnOptions(), groupOptions()...)...)
	kgoGroupTransactSession(t, c)
	if !sawOnAnyNode(c, kmsg.TxnOffsetCommit, 5) || !sawOnAnyNode(c, kmsg.EndTxn, 5) {
		t.Fatal("the session did not take the TV2 path (TxnOffsetCommit v5, EndTxn v5)")
	}
	if sawOnAnyNode(c, kmsg.AddOffsetsToTxn, 0, 1, 2, 3, 4) {
		t.Fatal("a TV2 session sent AddOffsetsToTxn")
	}
}
