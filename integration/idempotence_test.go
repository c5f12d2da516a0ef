package integration

// The idempotent producer (issue P6) through every client available here — kgo (on by
// default), sarama (Producer.Idempotent), kcat (enable.idempotence=true) — and through
// raw requests (kmsg) for Kafka's sequence and epoch checks. confluent-kafka-python and
// kafkajs run the same check over 3 partitions in clients_script_test.go. The
// TestIdempotence_Compatibility_* tests inject no faults: they show that each client
// negotiates and produces idempotently. Retries are forced by
// TestIdempotence_RawSequenceChecks (raw duplicates), ClientRetryAfterLostResponse
// (kgo retrying a Produce whose response was lost, in idempotence_retry_test.go) and the
// failover tests (idempotence_failover_test.go).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// idempotentRecords is how many records each client test sends.
const idempotentRecords = 10000

// idempotentBatch is recordBatch(values...) from producer pid at epoch with base
// sequence seq.
func idempotentBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	raw := recordBatch(values...)
	binary.BigEndian.PutUint64(raw[43:], uint64(pid))
	binary.BigEndian.PutUint16(raw[51:], uint16(epoch))
	binary.BigEndian.PutUint32(raw[53:], uint32(seq))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// consumeExactlyOnce reads topic's partition 0 from the start until n records and
// checks that they are values[i] = fmt.Sprintf(format, i) in order, each once, all
// written by an idempotent producer (producer id ≥ 0).
func consumeExactlyOnce(t *testing.T, c *Cluster, topic, format string, n int) {
	t.Helper()
	cons := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testContext(t)
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", got, err)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if bad != nil {
				return
			}
			switch want := fmt.Sprintf(format, got); {
			case got >= n:
				bad = fmt.Errorf("more than %d records: %q at offset %d", n, r.Value, r.Offset)
			case string(r.Value) != want:
				bad = fmt.Errorf("record %d (offset %d) is %q, expected %q", got, r.Offset, r.Value, want)
			case r.ProducerID < 0:
				bad = fmt.Errorf("record %d was not written idempotently (producer id %d)", got, r.ProducerID)
			}
			got++
		})
		if bad != nil {
			t.Fatal(bad)
		}
	}
	// Nothing beyond n: the log ends there.
	if leo := mustReplicaLEO(t, c, 0, topic, 0); leo != int64(n) {
		t.Fatalf("log end offset %d, %d records sent", leo, n)
	}
}

func TestIdempotence_Compatibility_Kgo(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	const topic = "idem-kgo"
	c.CreateTopic(t, topic, 1, nil)
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond))
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	for i := range idempotentRecords {
		wg.Add(1)
		cl.Produce(context.Background(), kgo.StringRecord(fmt.Sprintf("kgo-%05d", i)), func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	if !c.SawRequest(0, int16(kmsg.InitProducerID), 4) && !c.SawRequest(0, int16(kmsg.InitProducerID), 5) {
		t.Fatal("kgo sent no InitProducerId v4/v5")
	}
	consumeExactlyOnce(t, c, topic, "kgo-%05d", idempotentRecords)
}

func TestIdempotence_Compatibility_Sarama(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	const topic = "idem-sarama"
	c.CreateTopic(t, topic, 1, nil)
	cfg := sarama.NewConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Net.MaxOpenRequests = 1
	prod, err := bounded(t, saramaTimeout, "NewAsyncProducer", func() (sarama.AsyncProducer, error) {
		return sarama.NewAsyncProducer(c.Addrs(), cfg)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prod.Close() })
	go func() {
		for i := range idempotentRecords {
			prod.Input() <- &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("sarama-%05d", i))}
		}
	}()
	deadline := time.After(2 * time.Minute)
	for acked := 0; acked < idempotentRecords; {
		select {
		case <-prod.Successes():
			acked++
		case perr := <-prod.Errors():
			t.Fatalf("after %d acknowledgements: %v", acked, perr.Err)
		case <-deadline:
			t.Fatalf("only %d of %d records acknowledged", acked, idempotentRecords)
		}
	}
	consumeExactlyOnce(t, c, topic, "sarama-%05d", idempotentRecords)
}

func TestIdempotence_Compatibility_Kcat(t *testing.T) {
	t.Parallel()
	kcatBinary(t)
	c := StartCluster(t, 1)
	const topic = "idem-kcat"
	c.CreateTopic(t, topic, 1, nil)
	var in strings.Builder
	for i := range idempotentRecords {
		fmt.Fprintf(&in, "kcat-%05d\n", i)
	}
	runKcat(t, in.String(), "-b", c.Addr(0), "-P", "-t", topic, "-p", "0", "-X", "enable.idempotence=true")
	if !c.SawRequest(0, int16(kmsg.InitProducerID), 0) && !c.SawRequest(0, int16(kmsg.InitProducerID), 1) &&
		!c.SawRequest(0, int16(kmsg.InitProducerID), 2) && !c.SawRequest(0, int16(kmsg.InitProducerID), 3) &&
		!c.SawRequest(0, int16(kmsg.InitProducerID), 4) {
		t.Fatal("kcat sent no InitProducerId")
	}
	consumeExactlyOnce(t, c, topic, "kcat-%05d", idempotentRecords)
}

// initProducerID asks node i for a producer id (v4, no transactional id), retrying
// COORDINATOR_LOAD_IN_PROGRESS and NOT_CONTROLLER-like transient answers.
func initProducerID(t testing.TB, c *Cluster, i int) (int64, int16) {
	t.Helper()
	var id int64
	var epoch int16
	testwait.For(t, 30*time.Second, func() error {
		var err error
		id, epoch, err = tryInitProducerID(c, i, -1, -1)
		return err
	})
	return id, epoch
}

// tryInitProducerID sends one InitProducerId v4 with the given current id and epoch.
func tryInitProducerID(c *Cluster, i int, id int64, epoch int16) (int64, int16, error) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionTimeoutMillis = 4, 60000
	req.ProducerID, req.ProducerEpoch = id, epoch
	ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel()
	resp, err := requestAt(ctx, c, i, req)
	if err != nil {
		return -1, -1, err
	}
	r := resp.(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return -1, -1, err
	}
	return r.ProducerID, r.ProducerEpoch, nil
}

// produceRaw sends one batch (produce v9, acks) to partition 0 of topic on node i and
// returns the partition's answer.
func produceRaw(t *testing.T, c *Cluster, i int, topic string, acks int16, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceRequest(9, acks, topic, 0, batch)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := requestAt(ctx, c, i, req)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return produceResult(t, resp)
}

// TestIdempotence_RawSequenceChecks drives Kafka's checks with hand-made batches: the
// duplicate of each of the last 5 batches gets its original offset and writes nothing;
// the 6th-oldest and a gap get OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch
// INVALID_PRODUCER_EPOCH; a bumped epoch (InitProducerId v3+ with the current id and
// epoch) restarting at sequence 0 is accepted.
func TestIdempotence_RawSequenceChecks(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	const topic = "idem-raw"
	c.CreateTopic(t, topic, 1, nil)
	pid, epoch := initProducerID(t, c, 0)
	if pid < 0 || epoch != 0 {
		t.Fatalf("InitProducerId: id %d epoch %d", pid, epoch)
	}
	var batches [][]byte
	var offsets []int64
	seq := int32(0)
	for b := range 7 {
		values := make([]string, b%3+1)
		for j := range values {
			values[j] = fmt.Sprintf("b%d-%d", b, j)
		}
		batch := idempotentBatch(pid, epoch, seq, values...)
		sp := produceRaw(t, c, 0, topic, -1, batch)
		if sp.ErrorCode != 0 {
			t.Fatalf("batch %d: %v", b, kerr.ErrorForCode(sp.ErrorCode))
		}
		batches, offsets = append(batches, batch), append(offsets, sp.BaseOffset)
		seq += int32(len(values))
	}
	leo := mustReplicaLEO(t, c, 0, topic, 0)
	for b := 2; b < 7; b++ {
		sp := produceRaw(t, c, 0, topic, -1, batches[b])
		if sp.ErrorCode != 0 || sp.BaseOffset != offsets[b] {
			t.Fatalf("duplicate of batch %d: %v at offset %d, originally %d", b, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, offsets[b])
		}
	}
	expect := func(what string, batch []byte, want *kerr.Error) {
		t.Helper()
		if sp := produceRaw(t, c, 0, topic, -1, batch); sp.ErrorCode != want.Code {
			t.Fatalf("%s: %v, expected %v", what, kerr.ErrorForCode(sp.ErrorCode), want)
		}
	}
	expect("6th-oldest duplicate", batches[1], kerr.OutOfOrderSequenceNumber)
	expect("gap", idempotentBatch(pid, epoch, seq+1, "gap"), kerr.OutOfOrderSequenceNumber)
	if got := mustReplicaLEO(t, c, 0, topic, 0); got != leo {
		t.Fatalf("duplicates and refused batches wrote: log end %d, was %d", got, leo)
	}
	bumpedID, bumped, err := tryInitProducerID(c, 0, pid, epoch)
	if err != nil || bumpedID != pid || bumped != epoch+1 {
		t.Fatalf("epoch bump: id %d epoch %d, %v", bumpedID, bumped, err)
	}
	expect("bumped epoch not at 0", idempotentBatch(pid, bumped, seq, "x"), kerr.OutOfOrderSequenceNumber)
	if sp := produceRaw(t, c, 0, topic, -1, idempotentBatch(pid, bumped, 0, "new-epoch")); sp.ErrorCode != 0 || sp.BaseOffset != leo {
		t.Fatalf("bumped epoch at 0: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	expect("older epoch", idempotentBatch(pid, epoch, seq, "old"), kerr.InvalidProducerEpoch)
	if sp := produceRaw(t, c, 0, topic, -1, idempotentBatch(pid+1, 0, 77, "unknown")); sp.ErrorCode != 0 {
		t.Fatalf("an unknown producer at sequence 77: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	// InitProducerId's id and epoch must both be set or both be -1.
	if _, _, err := tryInitProducerID(c, 0, pid, -1); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("id without epoch: %v", err)
	}
	// DescribeProducers shows the state.
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := requestAt(testContext(t), c, 0, req)
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	if sp.ErrorCode != 0 || len(sp.ActiveProducers) != 2 {
		t.Fatalf("DescribeProducers: %+v", sp)
	}
	if p := sp.ActiveProducers[0]; p.ProducerID != pid || p.ProducerEpoch != int32(bumped) || p.LastSequence != 0 || p.CoordinatorEpoch != -1 {
		t.Fatalf("DescribeProducers: %+v", p)
	}
}

// AllocateProducerIds is internal: served (a wrong broker epoch is STALE_BROKER_EPOCH,
// an unknown broker BROKER_ID_NOT_REGISTERED) but not advertised; InitProducerId and
// DescribeProducers are advertised.
func TestIdempotence_AllocateProducerIdsIsInternal(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	ctx := testContext(t)
	resp, err := requestAt(ctx, c, 0, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		t.Fatal(err)
	}
	advertised := map[int16]bool{}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		advertised[k.ApiKey] = true
	}
	if advertised[int16(kmsg.AllocateProducerIDs)] || !advertised[int16(kmsg.InitProducerID)] || !advertised[int16(kmsg.DescribeProducers)] {
		t.Fatalf("advertised: AllocateProducerIds %v, InitProducerId %v, DescribeProducers %v", advertised[int16(kmsg.AllocateProducerIDs)],
			advertised[int16(kmsg.InitProducerID)], advertised[int16(kmsg.DescribeProducers)])
	}
	for _, tc := range []struct {
		broker int32
		epoch  int64
		want   *kerr.Error
	}{{0, c.Node(0).BrokerEpoch() + 1, kerr.StaleBrokerEpoch}, {9, 1, kerr.BrokerIDNotRegistered}} {
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = tc.broker, tc.epoch
		// kgo refuses to send an API the broker does not advertise: frame it by hand.
		resp := dialRaw(t, c.Addr(0)).roundTrip(req)
		if code := resp.(*kmsg.AllocateProducerIDsResponse).ErrorCode; code != tc.want.Code {
			t.Fatalf("broker %d epoch %d: %v, expected %v", tc.broker, tc.epoch, kerr.ErrorForCode(code), tc.want)
		}
	}
}
