package integration

// AddOffsetsToTxn before __consumer_offsets exists. Kafka answers it from the group
// coordinator's partitionFor(group) (offsets.topic.num.partitions while the topic is
// missing) and never COORDINATOR_NOT_AVAILABLE for the missing topic; Petrel creates the
// topic first, as FindCoordinator does. A transactional producer's first
// send_offsets_to_transaction on a fresh cluster must succeed: librdkafka's gave up
// after 60 s of COORDINATOR_NOT_AVAILABLE.

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// javaPartitionFor is Kafka's partitionFor of a coordinator key:
// abs(javaStringHashCode(key)) % partitions, abs(MinInt32) being 0 (ASCII keys).
func javaPartitionFor(key string, partitions int32) int32 {
	var h int32
	for i := 0; i < len(key); i++ {
		h = 31*h + int32(key[i])
	}
	switch {
	case h == math.MinInt32:
		h = 0 // Kafka's Utils.abs
	case h < 0:
		h = -h
	}
	return h % partitions
}

// addOffsetsOnce sends AddOffsetsToTxn to tc until it gets an answer other than the
// coordinator's NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
// CONCURRENT_TRANSACTIONS, and returns it: COORDINATOR_NOT_AVAILABLE is returned, not
// retried.
func (x *txnOffsets) addOffsetsOnce(tc int, id string, pid int64, epoch int16) int16 {
	raw := x.c.rawTo(x.t, tc)
	var code int16
	testwait.For(x.t, groupWait, func() error {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, x.group
		code = raw.do(testContext(x.t), req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
		switch code {
		case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code:
			return fmt.Errorf("AddOffsetsToTxn: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	return code
}

// txnPartitions is the partitions of id's transaction at tc, as "topic-partition".
func (x *txnOffsets) txnPartitions(tc int, id string) []string {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := x.c.rawTo(x.t, tc).do(testContext(x.t), req).(*kmsg.DescribeTransactionsResponse)
	var out []string
	for _, s := range resp.TransactionStates {
		for _, t := range s.Topics {
			for _, p := range t.Partitions {
				out = append(out, fmt.Sprintf("%s-%d", t.Topic, p))
			}
		}
	}
	slices.Sort(out)
	return out
}

// On a fresh cluster, AddOffsetsToTxn creates __consumer_offsets (with
// offsets.topic.num.partitions) and adds the group's partition of it; the
// transaction's TxnOffsetCommit and commit then go through as usual.
func TestAddOffsetsToTxnCreatesOffsetsTopic(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, append(append(txnOptions(), groupOptions()...),
		WithProperty("offsets.topic.num.partitions", "5"))...)
	x := &txnOffsets{t: t, c: c, group: "fresh-txn-group", topic: "fresh-txn-in"}
	c.CreateTopic(t, x.topic, 1, nil)
	const id = "fresh-txn"
	tc := txnCoordinatorOf(t, c, 0, id)
	if c.WaitConverged().Topics[offsetsTopicName].Name != "" {
		t.Fatal("__consumer_offsets exists before any group was looked up")
	}
	init := initTxnProducer(t, c, tc, id, -1, -1)
	if init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(init.ErrorCode))
	}
	pid, epoch := init.ProducerID, init.ProducerEpoch
	if code := x.addOffsetsOnce(tc, id, pid, epoch); code != 0 {
		t.Fatalf("AddOffsetsToTxn without __consumer_offsets: %v, want no error", kerr.ErrorForCode(code))
	}
	if got := len(c.WaitConverged().Topics[offsetsTopicName].Partitions); got != 5 {
		t.Fatalf("__consumer_offsets has %d partitions, want 5 (offsets.topic.num.partitions)", got)
	}
	want := []string{fmt.Sprintf("%s-%d", offsetsTopicName, javaPartitionFor(x.group, 5))}
	if got := x.txnPartitions(tc, id); !slices.Equal(got, want) {
		t.Fatalf("transaction partitions %v, want %v", got, want)
	}
	x.commit(coordinatorOf(t, c, 0, x.group), id, pid, epoch, 17)
	x.end(tc, id, pid, epoch, true)
	x.waitCommitted(0, 17)
}

// While __consumer_offsets cannot be created (fewer brokers than its replication
// factor), AddOffsetsToTxn still answers as Kafka does, with the partition from
// offsets.topic.num.partitions; the transaction commits (no marker is needed where
// there is no topic).
func TestAddOffsetsToTxnWithoutOffsetsTopic(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, append(txnOptions(),
		WithProperty("offsets.topic.replication.factor", "3"),
		WithProperty("offsets.topic.num.partitions", "7"))...)
	x := &txnOffsets{t: t, c: c, group: "uncreated-txn-group"}
	const id = "uncreated-txn"
	tc := txnCoordinatorOf(t, c, 0, id)
	init := initTxnProducer(t, c, tc, id, -1, -1)
	if init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(init.ErrorCode))
	}
	pid, epoch := init.ProducerID, init.ProducerEpoch
	if code := x.addOffsetsOnce(tc, id, pid, epoch); code != 0 {
		t.Fatalf("AddOffsetsToTxn: %v, want no error", kerr.ErrorForCode(code))
	}
	want := []string{fmt.Sprintf("%s-%d", offsetsTopicName, javaPartitionFor(x.group, 7))}
	if got := x.txnPartitions(tc, id); !slices.Equal(got, want) {
		t.Fatalf("transaction partitions %v, want %v", got, want)
	}
	if c.WaitConverged().Topics[offsetsTopicName].Name != "" {
		t.Fatal("__consumer_offsets created with fewer brokers than its replication factor")
	}
	x.end(tc, id, pid, epoch, true)
	x.waitTxnState(0, id, "CompleteCommit")
}

// confluent-kafka-python (librdkafka) on a fresh cluster: a transactional producer's
// send_offsets_to_transaction for a group nobody has looked up yet (the pre-KIP-447
// group metadata: generation -1, no member) commits with its record.
func TestConfluentPython_SendOffsetsToTransactionFreshCluster(t *testing.T) {
	s := confluentClient(t)
	t.Parallel()
	c := StartCluster(t, 1, append(append(txnOptions(), groupOptions()...),
		WithProperty("offsets.topic.num.partitions", "5"))...)
	const in, out, group, offset = "confluent-eos-in", "confluent-eos-out", "confluent-eos-group", 3
	c.CreateTopic(t, in, 1, nil)
	c.CreateTopic(t, out, 1, nil)
	if c.WaitConverged().Topics[offsetsTopicName].Name != "" {
		t.Fatal("__consumer_offsets exists before the client ran")
	}
	got := s.run(t, "sendoffsets", strings.Join(c.Addrs(), ","), in, out, group, "confluent-eos-txn", fmt.Sprint(offset))
	if want := fmt.Sprintf("committed offset %d", offset); strings.TrimSpace(got) != want {
		t.Fatalf("confluent sendoffsets printed %q, want %q", got, want)
	}
	x := &txnOffsets{t: t, c: c, group: group, topic: in}
	x.waitCommitted(0, offset)
	if recs := consumeTxnTopic(t, c, out, kgo.ReadCommitted(), 1); !slices.Equal(recs, []string{"transformed"}) {
		t.Fatalf("read_committed %s got %v, want the transformed record", out, recs)
	}
}
