package integration

// Transaction coordinator scenarios (P7): __transaction_state created on first need,
// FindCoordinator key type 1, InitProducerId with a transactional id (epoch bumps,
// KIP-360 fencing, NOT_COORDINATOR elsewhere) and its state surviving the loss of the
// coordinator.

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOptions are the broker properties of the transaction tests: few
// __transaction_state partitions, so that loading them is quick.
func txnOptions() []Option {
	return []Option{WithProperty("transaction.state.log.num.partitions", "3")}
}

// txnCoordinatorOf polls FindCoordinator (key type 1) through node via until id has a
// coordinator and returns its node id.
func txnCoordinatorOf(t testing.TB, c *Cluster, via int, id string) int {
	t.Helper()
	return int(liveCoordinator(t, c, via, id, 1))
}

// initTxnProducer sends InitProducerId for id to node, retrying the retriable
// coordinator errors (NOT_COORDINATOR too: FindCoordinator names the partition's
// leader before it has loaded the partition, as in Kafka), and returns the answer.
func initTxnProducer(t testing.TB, c *Cluster, node int, id string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	raw := c.rawTo(t, node)
	var out *kmsg.InitProducerIDResponse
	testwait.For(t, groupWait, func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = &id, 60000, pid, epoch
		resp := raw.do(testContext(t), req).(*kmsg.InitProducerIDResponse)
		switch resp.ErrorCode {
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.ConcurrentTransactions.Code,
			kerr.NotCoordinator.Code:
			return fmt.Errorf("InitProducerId: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		out = resp
		return nil
	})
	return out
}

func TestTransactionCoordinatorInitProducerID(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, txnOptions()...)
	const id = "txn-init"
	coord := txnCoordinatorOf(t, c, 0, id)
	first := initTxnProducer(t, c, coord, id, -1, -1)
	if first.ErrorCode != 0 || first.ProducerID < 0 || first.ProducerEpoch != 0 {
		t.Fatalf("first InitProducerId: %+v", first)
	}
	second := initTxnProducer(t, c, coord, id, -1, -1)
	if second.ErrorCode != 0 || second.ProducerID != first.ProducerID || second.ProducerEpoch != 1 {
		t.Fatalf("second InitProducerId: %+v", second)
	}
	if r := initTxnProducer(t, c, coord, id, first.ProducerID, 5); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("InitProducerId with an unknown epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	other := (coord + 1) % 3
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	if r := c.rawTo(t, other).do(testContext(t), req).(*kmsg.InitProducerIDResponse); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("InitProducerId at node %d, not the coordinator: %v", other, kerr.ErrorForCode(r.ErrorCode))
	}
	md := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("__transaction_state")
	md.Topics = append(md.Topics, topic)
	mresp := c.rawTo(t, other).do(testContext(t), md).(*kmsg.MetadataResponse)
	if len(mresp.Topics) != 1 || !mresp.Topics[0].IsInternal || len(mresp.Topics[0].Partitions) != 3 ||
		len(mresp.Topics[0].Partitions[0].Replicas) != 3 {
		t.Fatalf("__transaction_state in Metadata: %+v", mresp.Topics)
	}

	// The coordinator dies: the next leader of the partition replays the state and
	// bumps the epoch from where it was.
	c.Kill(coord)
	var next int
	testwait.For(t, groupWait, func() error {
		next = txnCoordinatorOf(t, c, other, id)
		if next == coord {
			return fmt.Errorf("coordinator still %d", coord)
		}
		return nil
	})
	third := initTxnProducer(t, c, next, id, second.ProducerID, second.ProducerEpoch)
	if third.ErrorCode != 0 || third.ProducerID != first.ProducerID || third.ProducerEpoch != 2 {
		t.Fatalf("InitProducerId after failover: %+v", third)
	}
}

// txnMarkers reads partition p of topic from its start at node and returns the
// transaction markers in it: for each, the producer id, epoch and whether it commits.
type txnMarker struct {
	producerID int64
	epoch      int16
	commit     bool
}

func readTxnMarkers(t testing.TB, c *Cluster, topic string, p int32) []txnMarker {
	t.Helper()
	var out []txnMarker
	testwait.For(t, groupWait, func() error {
		out = nil
		tv, ok := c.WaitConverged().Topics[topic]
		if !ok || int(p) >= len(tv.Partitions) || tv.Partitions[p].Leader < 0 {
			return fmt.Errorf("%s-%d has no leader", topic, p)
		}
		leader := int(tv.Partitions[p].Leader)
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = 11, -1, 0, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, 0, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp := c.rawTo(t, leader).do(testContext(t), req).(*kmsg.FetchResponse)
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			return fmt.Errorf("fetch: %v", kerr.ErrorForCode(rp.ErrorCode))
		}
		for buf := rp.RecordBatches; len(buf) > 0; {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(buf); err != nil {
				return err
			}
			buf = buf[12+int(b.Length):]
			if b.Attributes&0x20 == 0 {
				continue
			}
			var r kmsg.Record
			if _, err := readVarintRecord(b.Records, &r); err != nil || len(r.Key) != 4 {
				return fmt.Errorf("control record: %v", err)
			}
			out = append(out, txnMarker{b.ProducerID, b.ProducerEpoch, r.Key[3] == 1})
		}
		return nil
	})
	return out
}

// readVarintRecord decodes the first record of a batch's records.
func readVarintRecord(b []byte, r *kmsg.Record) (int, error) {
	length, n := binary.Varint(b)
	if n <= 0 || int(length)+n > len(b) {
		return 0, fmt.Errorf("torn record")
	}
	return n + int(length), r.ReadFrom(b[:n+int(length)])
}

// TestTransactionEndTxnWritesMarkers holds Transactions V1 (the markers carry the
// producer's epoch; V2's bump is transactions_v2_test.go's).
func TestTransactionEndTxnWritesMarkers(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, txnOptions()...)
	downgradeTransactionVersion(t, c, 1)
	c.CreateTopicRF(t, "txn-markers", 2, 3, nil)
	const id = "txn-end"
	coord := txnCoordinatorOf(t, c, 0, id)
	init := initTxnProducer(t, c, coord, id, -1, -1)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	raw := c.rawTo(t, coord)

	addPartitions := func(pid int64, epoch int16, topic string, ps ...int32) int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, ps
		req.Topics = append(req.Topics, rt)
		// Through kgo's sharder, which speaks the batched v4+ form to Petrel.
		kresp, err := raw.cl.Request(testContext(t), req)
		if err != nil {
			t.Fatalf("AddPartitionsToTxn: %v", err)
		}
		return kresp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
	}
	endTxn := func(id string, pid int64, epoch int16, commit bool) int16 {
		raw := c.rawTo(t, txnCoordinatorOf(t, c, 0, id))
		var code int16
		testwait.For(t, groupWait, func() error {
			req := kmsg.NewPtrEndTxnRequest()
			req.Version = 3
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
			code = raw.do(testContext(t), req).(*kmsg.EndTxnResponse).ErrorCode
			if code == kerr.ConcurrentTransactions.Code {
				return fmt.Errorf("EndTxn: %v", kerr.ErrorForCode(code))
			}
			return nil
		})
		return code
	}

	if code := addPartitions(pid, epoch, "no-such-topic", 0); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("AddPartitionsToTxn for a missing topic: %v", kerr.ErrorForCode(code))
	}
	if code := endTxn(id, pid, epoch, true); code != kerr.InvalidTxnState.Code {
		t.Fatalf("EndTxn without a transaction: %v", kerr.ErrorForCode(code))
	}
	if code := endTxn("unknown-id", pid, epoch, true); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("EndTxn for an unknown id: %v", kerr.ErrorForCode(code))
	}
	if code := addPartitions(pid, epoch, "txn-markers", 0, 1); code != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	if code := endTxn(id, pid, epoch, true); code != 0 {
		t.Fatalf("EndTxn commit: %v", kerr.ErrorForCode(code))
	}
	for p := range int32(2) {
		testwait.For(t, groupWait, func() error {
			if got := readTxnMarkers(t, c, "txn-markers", p); len(got) != 1 || got[0] != (txnMarker{pid, epoch, true}) {
				return fmt.Errorf("partition %d markers %+v", p, got)
			}
			return nil
		})
	}

	// A second producer with the same id fences the first and aborts its open
	// transaction with a bumped epoch.
	testwait.For(t, groupWait, func() error {
		if code := addPartitions(pid, epoch, "txn-markers", 1); code != 0 {
			return fmt.Errorf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	second := initTxnProducer(t, c, coord, id, -1, -1)
	if second.ErrorCode != 0 || second.ProducerID != pid || second.ProducerEpoch != epoch+2 {
		t.Fatalf("InitProducerId of the second producer: %+v", second)
	}
	if code := endTxn(id, pid, epoch, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn of the fenced producer: %v", kerr.ErrorForCode(code))
	}
	got := readTxnMarkers(t, c, "txn-markers", 1)
	if len(got) != 2 || got[1] != (txnMarker{pid, epoch + 1, false}) {
		t.Fatalf("partition 1 markers after fencing: %+v", got)
	}
}

// consumeTxnTopic reads topic from the start with isolation until it has seen want
// records (or the deadline) and returns their values; it also checks that kgo
// returned no control records as data.
func consumeTxnTopic(t *testing.T, c *Cluster, topic string, isolation kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(isolation),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	deadline := time.Now().Add(groupWait)
	for len(got) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(testContext(t), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if r.Attrs.IsControl() {
				t.Errorf("control record returned as data at offset %d", r.Offset)
			}
			got = append(got, string(r.Value))
		})
	}
	return got
}

// A kgo transactional producer commits one transaction and aborts another:
// read_committed sees exactly the committed records, read_uncommitted both, and the
// last stable offset under read_committed is the log end once both are over.
func TestTransactionKgoCommitAndAbort(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, txnOptions()...)
	const topic = "txn-kgo"
	c.CreateTopicRF(t, topic, 2, 3, nil)
	producer := c.Client(t, kgo.TransactionalID("txn-kgo-producer"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := testContext(t)
	run := func(prefix string, commit kgo.TransactionEndTry) {
		t.Helper()
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i))).FirstErr(); err != nil {
				t.Fatalf("produce in the %s transaction: %v", prefix, err)
			}
		}
		if err := producer.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("ending the %s transaction: %v", prefix, err)
		}
	}
	run("committed", kgo.TryCommit)
	run("aborted", kgo.TryAbort)
	run("committed2", kgo.TryCommit)

	committed := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), 20)
	for _, v := range committed {
		if strings.HasPrefix(v, "aborted") {
			t.Fatalf("read_committed returned an aborted record %q", v)
		}
	}
	if len(committed) != 20 {
		t.Fatalf("read_committed got %d records, want 20: %v", len(committed), committed)
	}
	if all := consumeTxnTopic(t, c, topic, kgo.ReadUncommitted(), 30); len(all) != 30 {
		t.Fatalf("read_uncommitted got %d records, want 30", len(all))
	}

	// An open transaction holds read_committed back at its first offset.
	if err := producer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("open"), Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(c.Client(t))
	described, err := adm.DescribeTransactions(ctx, "txn-kgo-producer")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := described["txn-kgo-producer"]
	if !ok || d.Err != nil || d.State != "Ongoing" || len(d.Topics[topic]) != 1 || d.StartTimestamp <= 0 {
		t.Fatalf("DescribeTransactions of the open transaction: %+v", described)
	}
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := listed.TransactionalIDs(); !slices.Equal(ids, []string{"txn-kgo-producer"}) {
		t.Fatalf("ListTransactions Ongoing: %v", ids)
	}
	checkTransactionalIDPattern(ctx, t, c)
	testwait.For(t, groupWait, func() error {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		committedEnds, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		var open int64
		ends.Each(func(o kadm.ListedOffset) { open += o.Offset })
		var stable int64
		committedEnds.Each(func(o kadm.ListedOffset) { stable += o.Offset })
		if open <= stable {
			return fmt.Errorf("end offsets %d, read_committed end offsets %d", open, stable)
		}
		return nil
	})
	if err := producer.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

// A transaction left open past transaction.timeout.ms is aborted by the coordinator:
// read_committed end offsets catch up with the log end, the records stay invisible to
// read_committed, and the producer's late commit fails.
func TestTransactionTimeoutAborts(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, append(txnOptions(),
		WithProperty("transaction.abort.timed.out.transaction.cleanup.interval.ms", "100"))...)
	const topic = "txn-timeout"
	c.CreateTopicRF(t, topic, 1, 3, nil)
	producer := c.Client(t, kgo.TransactionalID("txn-timeout-producer"), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(time.Second))
	ctx := testContext(t)
	if err := producer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := producer.ProduceSync(ctx, kgo.StringRecord("left-open")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(c.Client(t))
	testwait.For(t, groupWait, func() error {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		end, _ := ends.Lookup(topic, 0)
		lso, _ := stable.Lookup(topic, 0)
		// The log end includes the abort marker once the coordinator wrote it.
		if end.Offset < 2 || lso.Offset != end.Offset {
			return fmt.Errorf("end offset %d, read_committed end offset %d", end.Offset, lso.Offset)
		}
		return nil
	})
	if err := producer.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the commit of a timed-out transaction succeeded")
	}
	if got := consumeTxnTopic(t, c, topic, kgo.ReadUncommitted(), 1); len(got) != 1 {
		t.Fatalf("read_uncommitted got %v", got)
	}
	// read_committed has nothing to return: poll briefly and expect no record.
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if fs := cl.PollFetches(pctx); fs.NumRecords() != 0 {
		t.Fatalf("read_committed returned %d records of an aborted transaction", fs.NumRecords())
	}
}

// committedView is what read_committed shows of a topic: its end offsets and records.
func committedView(t *testing.T, c *Cluster, topic string, want int) (map[int32]int64, []string) {
	t.Helper()
	ctx := testContext(t)
	stable := map[int32]int64{}
	testwait.For(t, groupWait, func() error {
		offs, err := kadm.NewClient(c.Client(t)).ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if err := offs.Error(); err != nil {
			return err
		}
		offs.Each(func(o kadm.ListedOffset) { stable[o.Partition] = o.Offset })
		return nil
	})
	got := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), want)
	slices.Sort(got)
	return stable, got
}

// A node killed with an open, an aborted and a committed transaction comes back with
// the same last stable offsets and the same read_committed view, and the fencing of the
// first producer by a second one with the same transactional.id holds.
func TestTransactionRecoveryAndFencing(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, txnOptions()...)
	const topic = "txn-recovery"
	c.CreateTopicRF(t, topic, 2, 1, nil)
	ctx := testContext(t)
	producer := c.Client(t, kgo.TransactionalID("txn-recovery-producer"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	txnRun := func(cl *kgo.Client, prefix string, n int, end *kgo.TransactionEndTry) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if end != nil {
			if err := cl.EndTransaction(ctx, *end); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit, abort := kgo.TryCommit, kgo.TryAbort
	txnRun(producer, "committed", 4, &commit)
	txnRun(producer, "aborted", 4, &abort)
	other := c.Client(t, kgo.TransactionalID("txn-recovery-other"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	txnRun(other, "open", 2, nil)
	stableBefore, before := committedView(t, c, topic, 4)
	if len(before) != 4 {
		t.Fatalf("read_committed before the kill: %v", before)
	}

	c.Kill(0)
	c.Restart(0)
	stableAfter, after := committedView(t, c, topic, 4)
	if !maps.Equal(stableBefore, stableAfter) || !slices.Equal(before, after) {
		t.Fatalf("after the restart: LSO %v records %v, before %v %v", stableAfter, after, stableBefore, before)
	}

	// A second producer with the first one's transactional.id fences it.
	second := c.Client(t, kgo.TransactionalID("txn-recovery-producer"), kgo.DefaultProduceTopic(topic))
	txnRun(second, "second", 2, &commit)
	if err := producer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	err := producer.ProduceSync(ctx, kgo.StringRecord("fenced")).FirstErr()
	if err == nil {
		err = producer.EndTransaction(ctx, kgo.TryCommit)
	}
	if err == nil {
		t.Fatal("the fenced producer's transaction succeeded")
	}
	t.Logf("fenced producer: %v", err)
}

// kgo's GroupTransactSession consumes, transforms and produces with its offsets
// committed in the transaction: the output under read_committed holds every input
// record exactly once and the group's committed offsets reach the input's end.
func TestTransactionKgoGroupTransactSession(t *testing.T) {
	t.Parallel()
	kgoGroupTransactSession(t, StartCluster(t, 3, append(txnOptions(), groupOptions()...)...))
}

// kgoGroupTransactSession runs a kgo GroupTransactSession (made with extra options
// too) copying 60 records from one topic to another, and checks the output under
// read_committed and the group's committed offsets.
func kgoGroupTransactSession(t *testing.T, c *Cluster, extra ...kgo.Opt) {
	const in, out, grp, n = "txn-in", "txn-out", "txn-group", 60
	c.CreateTopicRF(t, in, 2, 3, nil)
	c.CreateTopicRF(t, out, 2, 3, nil)
	ctx := testContext(t)
	plain := c.Client(t, kgo.DefaultProduceTopic(in))
	for i := range n {
		if err := plain.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v-%03d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID("txn-session"),
		kgo.ConsumerGroup(grp), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic(out),
		kgo.RequireStableFetchOffsets(), kgo.FetchMaxWait(200 * time.Millisecond)}, extra...)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	consumed := 0
	deadline := time.Now().Add(groupWait)
	for consumed < n && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := sess.PollFetches(pctx)
		cancel()
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, kgo.StringRecord("out-"+string(r.Value)), func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("End: %v", err)
		}
		if committed {
			consumed += fs.NumRecords()
		}
	}
	if consumed != n {
		t.Fatalf("committed %d of %d input records", consumed, n)
	}
	got := consumeTxnTopic(t, c, out, kgo.ReadCommitted(), n)
	slices.Sort(got)
	if len(got) != n || len(slices.Compact(slices.Clone(got))) != n {
		t.Fatalf("output under read_committed: %d records (%d distinct), want %d", len(got), len(slices.Compact(slices.Clone(got))), n)
	}
	adm := kadm.NewClient(c.Client(t))
	testwait.For(t, groupWait, func() error {
		offs, err := adm.FetchOffsets(ctx, grp)
		if err != nil {
			return err
		}
		var total int64
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		if total != n {
			return fmt.Errorf("group %s committed offsets sum to %d, want %d", grp, total, n)
		}
		return nil
	})
}

// The transaction coordinator is killed right after EndTxn was answered, before or
// while its markers are written: the next coordinator resumes the prepared transaction
// and it ends committed as a whole; read_committed never sees the aborted one.
func TestTransactionCoordinatorFailoverMidCommit(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, txnOptions()...)
	const topic, id = "txn-failover", "txn-failover-producer"
	c.CreateTopicRF(t, topic, 3, 3, nil)
	coord := txnCoordinatorOf(t, c, 0, id)
	var seeds []string
	for i := range 3 {
		if i != coord {
			seeds = append(seeds, c.Addr(i))
		}
	}
	// The producer reaches the cluster through the nodes that stay up.
	producer := newClient(t, seeds, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := testContext(t)
	txnRun := func(prefix string, end kgo.TransactionEndTry) {
		t.Helper()
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := producer.EndTransaction(ctx, end); err != nil {
			t.Fatalf("ending %s: %v", prefix, err)
		}
	}
	txnRun("aborted", kgo.TryAbort)
	txnRun("committed", kgo.TryCommit)
	c.Kill(coord)

	got := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), 6)
	slices.Sort(got)
	want := []string{"committed-0", "committed-1", "committed-2", "committed-3", "committed-4", "committed-5"}
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed after the coordinator's death: %v", got)
	}
	// The next transaction works with the new coordinator, once every survivor names
	// it: a survivor whose image still named the dead node would send kgo, which
	// re-reads metadata only twice, to a broker it no longer knows ("unknown broker").
	testwait.For(t, groupWait, func() error {
		var named []int
		for _, i := range []int{(coord + 1) % 3, (coord + 2) % 3} {
			named = append(named, txnCoordinatorOf(t, c, i, id))
		}
		if named[0] == coord || named[0] != named[1] {
			return fmt.Errorf("survivors name coordinators %v (the dead one is %d)", named, coord)
		}
		return nil
	})
	// And once the producer's own metadata has dropped the dead node: while kgo still
	// lists it, it keeps the dead coordinator cached, and a metadata update that drops
	// the node between its coordinator lookup and its AddPartitionsToTxn fails that
	// request with "unknown broker", which kgo does not retry (a client race, not the
	// cluster's answer).
	testwait.For(t, groupWait, func() error {
		producer.ForceMetadataRefresh()
		if n := len(producer.DiscoveredBrokers()); n != 2 {
			return fmt.Errorf("the producer knows %d brokers, want the 2 survivors", n)
		}
		return nil
	})
	txnRun("after", kgo.TryCommit)
	if got := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), 12); len(got) != 12 {
		t.Fatalf("read_committed after a transaction with the new coordinator: %d records", len(got))
	}
}

// The leader of a partition in the transaction is killed before the commit: the
// transaction still ends as a whole (committed, or aborted if the commit failed), and
// read_committed sees all of its records or none.
func TestTransactionPartitionLeaderKilled(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, txnOptions()...)
	const topic, id = "txn-leader-kill", "txn-leader-kill-producer"
	c.CreateTopicRF(t, topic, 1, 3, nil)
	coord := txnCoordinatorOf(t, c, 0, id)
	leader := int(c.WaitConverged().Topics[topic].Partitions[0].Leader)
	if leader == coord {
		// Move the coordinator elsewhere only by chance; with the same node both die,
		// which the test covers as well.
		t.Logf("the partition leader %d is also the transaction coordinator", leader)
	}
	var seeds []string
	for i := range 3 {
		if i != leader {
			seeds = append(seeds, c.Addr(i))
		}
	}
	producer := newClient(t, seeds, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	ctx := testContext(t)
	if err := producer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("r-%d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.Kill(leader)
	committed := producer.EndTransaction(ctx, kgo.TryCommit) == nil
	want := 0
	if committed {
		want = 5
	}
	if !committed {
		// The producer must abort what it could not commit.
		_ = producer.AbortBufferedRecords(ctx)
		if err := producer.EndTransaction(ctx, kgo.TryAbort); err != nil {
			t.Logf("abort after a failed commit: %v", err)
		}
	}
	if committed {
		if got := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), want); len(got) != want {
			t.Fatalf("committed, but read_committed got %v", got)
		}
		return
	}
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if fs := cl.PollFetches(pctx); fs.NumRecords() != 0 {
		t.Fatalf("aborted, but read_committed returned %d records", fs.NumRecords())
	}
}
