package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// find-hanging's table: kafka-transactions.sh's columns, only open transactions older
// than the timeout, by topic, partition and producer id.
func TestWriteHanging(t *testing.T) {
	now := time.UnixMilli(10 * 60000)
	producers := []kadm.DescribedProducer{
		{Topic: "b", Partition: 0, ProducerID: 7, ProducerEpoch: 1, CoordinatorEpoch: 2, CurrentTxnStartOffset: 40, LastTimestamp: 0},
		{Topic: "a", Partition: 1, ProducerID: 9, ProducerEpoch: 0, CoordinatorEpoch: -1, CurrentTxnStartOffset: 5, LastTimestamp: 3 * 60000},
		{Topic: "a", Partition: 1, ProducerID: 3, CurrentTxnStartOffset: -1, LastTimestamp: 0},          // no open transaction
		{Topic: "a", Partition: 0, ProducerID: 4, CurrentTxnStartOffset: 1, LastTimestamp: 9*60000 + 1}, // too recent
	}
	var out bytes.Buffer
	if err := writeHanging(&out, producers, 5*time.Minute, now, false); err != nil {
		t.Fatal(err)
	}
	want := "Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset LastTimestamp Duration(min)\n" +
		"a     1         9          0             -1               5           180000        7\n" +
		"b     0         7          1             2                40          0             10\n"
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// abort's and find-hanging's flags are checked before anything is sent.
func TestTransactionsAbort_Flags(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustFail(t, "--partition is required", "", "transactions", "abort", bs, "--topic", "t", "--start-offset", "0")
	mustFail(t, "give --start-offset, or --producer-id", "", "transactions", "abort", bs, "--topic", "t", "--partition", "0")
	mustFail(t, "not both", "", "transactions", "abort", bs, "--topic", "t", "--partition", "0", "--start-offset", "0", "--producer-id", "1")
	mustFail(t, "--producer-epoch must be between", "", "transactions", "abort", bs, "--topic", "t", "--partition", "0", "--producer-id", "1", "--coordinator-epoch", "0")
	mustFail(t, "--start-offset must be 0 or more", "", "transactions", "abort", bs, "--topic", "t", "--partition", "0", "--start-offset", "-3")
	mustFail(t, "exactly one of --broker-id and --topic", "", "transactions", "find-hanging", bs)
	mustFail(t, "exactly one of --broker-id and --topic", "", "transactions", "find-hanging", bs, "--broker-id", "0", "--topic", "t")
	mustFail(t, "--partition needs --topic", "", "transactions", "find-hanging", bs, "--broker-id", "0", "--partition", "0")
}
