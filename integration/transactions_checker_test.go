package integration

// An aborted-read checker over a history, as Jepsen's: a transactional producer runs
// a sequence of transactions, committing the even ones and aborting the odd ones,
// while the transaction coordinator is killed (kill -9) and later a partition leader.
// Then a read_committed consumer reads the whole topic: no record of an aborted
// transaction, every transaction whole or absent (never torn), every acknowledged
// commit present.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTransactionAbortedReadChecker(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, txnOptions()...)
	const topic, id = "txn-checker", "txn-checker-producer"
	const txns, perTxn = 12, 6
	c.CreateTopicRF(t, topic, 3, 3, nil)
	coord := txnCoordinatorOf(t, c, 0, id)
	newProducer := func() *kgo.Client {
		return newClient(t, c.Addrs(), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(20*time.Second))
	}
	producer := newProducer()
	type outcome int
	const (
		aborted outcome = iota
		committed
		unknown
	)
	outcomes := make([]outcome, txns)
	killedLeader := -1
	for n := range txns {
		switch n {
		case 4:
			c.Kill(coord)
		case 8:
			c.Restart(coord)
			killedLeader = int(c.WaitConverged().Topics[topic].Partitions[0].Leader)
			c.Kill(killedLeader)
		}
		ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
		commit := n%2 == 0
		if err := producer.BeginTransaction(); err != nil {
			// kgo fails a sharded AddPartitionsToTxn to a broker its metadata has just
			// dropped ("unknown broker") without a retry and makes its producer id fatal;
			// an application then makes a new producer, whose InitProducerID (same
			// transactional id, next epoch) ends what the old one left open (the old one
			// is closed at cleanup).
			t.Logf("transaction %d: begin: %v; a new producer", n, err)
			producer = newProducer()
			if err := producer.BeginTransaction(); err != nil {
				t.Fatalf("transaction %d: begin with a new producer: %v", n, err)
			}
		}
		var produceErr error
		for i := range perTxn {
			if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("t%02d-%d", n, i))).FirstErr(); err != nil {
				produceErr = err
				break
			}
		}
		end := kgo.TryAbort
		if commit && produceErr == nil {
			end = kgo.TryCommit
		}
		err := producer.EndTransaction(ctx, end)
		cancel()
		switch {
		case err != nil:
			t.Logf("transaction %d: ending it: %v (outcome unknown)", n, err)
			outcomes[n] = unknown
		case end == kgo.TryCommit:
			outcomes[n] = committed
		default:
			if produceErr != nil {
				t.Logf("transaction %d: produce failed, aborted: %v", n, produceErr)
			}
			outcomes[n] = aborted
		}
		if err != nil {
			// Start clean: the producer's next transaction needs a usable state.
			if rerr := producer.AbortBufferedRecords(testContext(t)); rerr != nil {
				t.Fatalf("transaction %d: resetting the producer: %v", n, rerr)
			}
		}
	}
	want := 0
	for _, o := range outcomes {
		if o != aborted {
			want += perTxn
		}
	}
	got := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), want)
	seen := make([]int, txns)
	for _, v := range got {
		var n, i int
		if _, err := fmt.Sscanf(v, "t%02d-%d", &n, &i); err != nil || n < 0 || n >= txns {
			t.Fatalf("unexpected record %q", v)
		}
		seen[n]++
	}
	var bad []string
	for n, o := range outcomes {
		switch {
		case o == aborted && seen[n] > 0:
			bad = append(bad, fmt.Sprintf("aborted read: transaction %d has %d records visible", n, seen[n]))
		case o == committed && seen[n] != perTxn:
			bad = append(bad, fmt.Sprintf("transaction %d committed, %d of %d records visible", n, seen[n], perTxn))
		case seen[n] != 0 && seen[n] != perTxn:
			bad = append(bad, fmt.Sprintf("torn transaction %d: %d of %d records visible", n, seen[n], perTxn))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("history %v (0 aborted, 1 committed, 2 unknown), killed coordinator %d and leader %d:\n%s",
			outcomes, coord, killedLeader, strings.Join(bad, "\n"))
	}
}
