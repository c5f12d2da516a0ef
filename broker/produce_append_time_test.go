package broker

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceRawPartition sends one batch to partition 0 of topic with acks=1 and returns
// the partition's answer.
func produceRawPartition(t *testing.T, cl *kgo.Client, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// checkStamped checks that every batch of topic is stamped LogAppendTime with the
// append time its Produce answer gave (appendTimes by base offset; markers within
// [from, to]) and carries a valid CRC.
func checkStamped(t *testing.T, b *Broker, topic string, appendTimes map[int64]int64, from, to int64) []kmsg.RecordBatch {
	t.Helper()
	batches := fetchBatches(t, b, topic)
	for _, rb := range batches {
		raw := rb.AppendTo(nil)
		if crc := segment.CRC32C(raw[21:]); crc != uint32(rb.CRC) {
			t.Errorf("%s batch at %d: CRC %#x, computed %#x", topic, rb.FirstOffset, uint32(rb.CRC), crc)
		}
		want, ok := appendTimes[rb.FirstOffset]
		if rb.Attributes&0x08 == 0 || ok && rb.MaxTimestamp != want || !ok && (rb.MaxTimestamp < from || rb.MaxTimestamp > to) {
			t.Errorf("%s batch at %d (attributes %#x): maxTimestamp %d, expected the LogAppendTime bit and the append time %d (%v) in [%d, %d]",
				topic, rb.FirstOffset, rb.Attributes, rb.MaxTimestamp, want, ok, from, to)
		}
	}
	return batches
}

// TestLogAppendTime_Produce: on a LogAppendTime topic Produce answers the append time
// (a duplicate of an idempotent batch the original's), the stored batches carry it, with
// gzip recompression too, transactional batches and their markers alike, and consumers
// and ListOffsets by time see it; a CreateTime topic answers -1 and keeps the producer's
// timestamps.
func TestLogAppendTime_Produce(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	cl := newClient(t, b)
	lat := map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime")}
	mustCreateTopic(t, adm, "lat", 1, lat)
	mustCreateTopic(t, adm, "lat-gzip", 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime"), "compression.type": kmsg.StringPtr("gzip")})
	mustCreateTopic(t, adm, "create", 1, nil)
	const producerTs = 1_700_000_000_000 // rvBatch's timestamps: long before the test runs

	start := time.Now().UnixMilli()
	appendTimes := map[string]map[int64]int64{"lat": {}, "lat-gzip": {}}
	for i, topic := range []string{"lat", "lat-gzip"} {
		batch := rcIdempotent(rvBatch(rvCompress(t, rvGoodSection(5, 50, true, i), 2), 5, 2), 7000+int64(i))
		sp := produceRawPartition(t, cl, topic, bytes.Clone(batch))
		if sp.ErrorCode != 0 || sp.LogAppendTime < start || sp.LogAppendTime > time.Now().UnixMilli() {
			t.Fatalf("%s: code %d, log_append_time %d, expected the append time", topic, sp.ErrorCode, sp.LogAppendTime)
		}
		appendTimes[topic][sp.BaseOffset] = sp.LogAppendTime
		// The same idempotent batch again: a duplicate, answered as the original was.
		dup := produceRawPartition(t, cl, topic, bytes.Clone(batch))
		if dup.ErrorCode != 0 || dup.BaseOffset != sp.BaseOffset || dup.LogAppendTime != sp.LogAppendTime {
			t.Fatalf("%s: the duplicate was answered offset %d, log_append_time %d (code %d); the original %d, %d",
				topic, dup.BaseOffset, dup.LogAppendTime, dup.ErrorCode, sp.BaseOffset, sp.LogAppendTime)
		}
	}
	if sp := produceRawPartition(t, cl, "create", rvBatch(rvGoodSection(2, 10, true, 1), 2, 0)); sp.ErrorCode != 0 || sp.LogAppendTime != -1 {
		t.Fatalf("CreateTime topic: code %d, log_append_time %d, expected -1", sp.ErrorCode, sp.LogAppendTime)
	}
	if rb := fetchBatches(t, b, "create"); len(rb) != 1 || rb[0].Attributes&0x08 != 0 || rb[0].MaxTimestamp != producerTs {
		t.Fatalf("CreateTime topic stored %+v", rb)
	}

	// A transaction (kgo's snappy batches) over both topics: its batches and its COMMIT
	// markers are stamped, and on lat-gzip its batches are recompressed, still
	// transactional.
	txp := newClient(t, b, kgo.TransactionalID("lat-txn"), kgo.DefaultProduceTopic("lat"))
	ctx := testContext(t)
	if err := txp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		r := kgo.StringRecord(fmt.Sprint(i % 3))
		r.Timestamp = time.UnixMilli(producerTs)
		if i >= 3 {
			r.Topic = "lat-gzip"
		}
		if err := txp.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := txp.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, func() error { // the markers are written after EndTxn answers
		for _, topic := range []string{"lat", "lat-gzip"} {
			if n := len(fetchBatches(t, b, topic)); n != 5 {
				return fmt.Errorf("%s: %d batches", topic, n)
			}
		}
		return nil
	})
	end := time.Now().UnixMilli()
	for _, topic := range []string{"lat", "lat-gzip"} {
		batches := checkStamped(t, b, topic, appendTimes[topic], start, end)
		for i, rb := range batches {
			control, txn := rb.Attributes&0x20 != 0, rb.Attributes&0x10 != 0
			switch {
			case i == len(batches)-1 && (!control || !txn):
				t.Errorf("%s: the last batch is not the COMMIT marker: %+v", topic, rb)
			case i > 0 && i < len(batches)-1 && (control || !txn):
				t.Errorf("%s: batch %d is not the transaction's: %+v", topic, i, rb)
			case topic == "lat-gzip" && !control && rb.Attributes&7 != 1:
				t.Errorf("%s: batch %d stored with codec %d", topic, i, rb.Attributes&7)
			}
		}
	}

	// Consumers see the append time as every record's timestamp.
	cons := newClient(t, b, kgo.ConsumeTopics("lat"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	stamps := map[int64]int64{} // offset -> timestamp
	for len(stamps) < 8 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Attrs.TimestampType() != 1 || r.Timestamp.UnixMilli() < start || r.Timestamp.UnixMilli() > end {
				t.Errorf("offset %d: timestamp type %d, timestamp %d; expected LogAppendTime in [%d, %d]", r.Offset, r.Attrs.TimestampType(), r.Timestamp.UnixMilli(), start, end)
			}
			stamps[r.Offset] = r.Timestamp.UnixMilli()
		})
	}
	// ListOffsets by time finds the first record appended at or after it.
	for _, ts := range []int64{producerTs, stamps[5], end + 1} {
		want := int64(-1)
		for o := range int64(8) {
			if stamps[o] >= ts {
				want = o
				break
			}
		}
		lo, err := adm.ListOffsetsAfterMilli(ctx, ts, "lat")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := lo.Lookup("lat", 0)
		if want == -1 {
			want = 9 // none: kadm answers the end offset (8 records and the marker)
		}
		if got.Err != nil || got.Offset != want {
			t.Errorf("ListOffsets by time %d: offset %d (%v), expected %d (stamps %v)", ts, got.Offset, got.Err, want, stamps)
		}
	}
}

// TestLogAppendTime_BrokerDefaultAndDynamic: log.message.timestamp.type is the default
// of topics without an override, and a topic's message.timestamp.type changed at run
// time applies to the next append.
func TestLogAppendTime_BrokerDefaultAndDynamic(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"log.message.timestamp.type": "LogAppendTime"})
	adm := newAdmin(t, b)
	cl := newClient(t, b)
	mustCreateTopic(t, adm, "inherits", 1, nil)
	mustCreateTopic(t, adm, "overrides", 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("CreateTime")})
	batch := rvBatch(rvGoodSection(2, 10, true, 1), 2, 0)
	if sp := produceRawPartition(t, cl, "inherits", bytes.Clone(batch)); sp.ErrorCode != 0 || sp.LogAppendTime < 0 {
		t.Fatalf("a topic under log.message.timestamp.type=LogAppendTime: code %d, log_append_time %d", sp.ErrorCode, sp.LogAppendTime)
	}
	if sp := produceRawPartition(t, cl, "overrides", bytes.Clone(batch)); sp.ErrorCode != 0 || sp.LogAppendTime != -1 {
		t.Fatalf("a CreateTime override: code %d, log_append_time %d", sp.ErrorCode, sp.LogAppendTime)
	}
	resp, err := adm.AlterTopicConfigs(testContext(t), []kadm.AlterConfig{{Name: "message.timestamp.type", Value: kmsg.StringPtr("LogAppendTime")}}, "overrides")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp {
		if r.Err != nil {
			t.Fatalf("alter %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	testwait.For(t, 10*time.Second, func() error {
		sp := produceRawPartition(t, cl, "overrides", bytes.Clone(batch))
		if sp.ErrorCode != 0 || sp.LogAppendTime < 0 {
			return fmt.Errorf("code %d, log_append_time %d", sp.ErrorCode, sp.LogAppendTime)
		}
		return nil
	})
}
