package integration

// Transactional producers of other clients (kafkajs, confluent-kafka-python through
// librdkafka): one transaction committed, one aborted; read_committed sees exactly
// the committed records, read_uncommitted both, and neither returns control records
// as data (consumeTxnTopic checks that).

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// scriptTxnRecords is how many records each of the script's two transactions sends.
const scriptTxnRecords = 50

func testScriptTransactions(t *testing.T, s scriptClient) {
	c := StartCluster(t, 1, txnOptions()...)
	topic := s.name + "-txn"
	c.CreateTopic(t, topic, 2, nil)
	out := s.run(t, "txn", strings.Join(c.Addrs(), ","), topic, "2", s.name+"-txn-producer", fmt.Sprint(scriptTxnRecords))
	if want := fmt.Sprintf("committed %d aborted %d", scriptTxnRecords, scriptTxnRecords); strings.TrimSpace(out) != want {
		t.Fatalf("%s txn printed %q, want %q", s.name, out, want)
	}
	var want []string
	for i := range scriptTxnRecords {
		want = append(want, fmt.Sprintf("committed-%05d", i))
	}
	committed := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), scriptTxnRecords)
	slices.Sort(committed)
	if !slices.Equal(committed, want) {
		t.Fatalf("read_committed got %d records %v, want the %d committed", len(committed), committed, scriptTxnRecords)
	}
	all := consumeTxnTopic(t, c, topic, kgo.ReadUncommitted(), 2*scriptTxnRecords)
	aborted := 0
	for _, v := range all {
		if strings.HasPrefix(v, "aborted-") {
			aborted++
		}
	}
	if len(all) != 2*scriptTxnRecords || aborted != scriptTxnRecords {
		t.Fatalf("read_uncommitted got %d records (%d aborted), want %d (%d aborted)", len(all), aborted,
			2*scriptTxnRecords, scriptTxnRecords)
	}
}

func TestKafkajs_TransactionalProduce(t *testing.T) {
	s := kafkajsClient(t)
	t.Parallel()
	testScriptTransactions(t, s)
}

func TestConfluentPython_TransactionalProduce(t *testing.T) {
	s := confluentClient(t)
	t.Parallel()
	testScriptTransactions(t, s)
}
