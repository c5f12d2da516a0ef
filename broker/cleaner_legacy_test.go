package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/segment"
)

// legacyEmptyBatch is what an older build's cleaner wrote at the end of a cleaned
// group: a header-only batch, no producer id, covering records that are gone.
func legacyEmptyBatch(base int64, records int32) []byte {
	b := make([]byte, segment.BatchHeaderSize)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], segment.BatchHeaderSize-12)
	b[16] = segment.MagicV2
	binary.BigEndian.PutUint32(b[23:], uint32(records-1)) // lastOffsetDelta
	binary.BigEndian.PutUint64(b[27:], 1)                 // baseTimestamp
	binary.BigEndian.PutUint64(b[35:], 1)                 // maxTimestamp
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))        // producer id -1
	binary.BigEndian.PutUint16(b[51:], ^uint16(0))        // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], ^uint32(0))        // base sequence -1
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// keyedBatchAt is one record K=V as a stored batch at offset base.
func keyedBatchAt(base int64, key, value string) []byte {
	rec := kmsg.Record{Key: []byte(key), Value: []byte(value)}
	body := rec.AppendTo(nil)
	rec.Length = int32(len(body) - 1)
	rb := kmsg.RecordBatch{FirstOffset: base, Magic: 2, FirstTimestamp: 1, MaxTimestamp: 1, ProducerID: -1,
		ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: rec.AppendTo(nil)}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// fetchBatches reads partition 0 of topic from offset 0 to the high watermark with raw
// Fetch v12 requests (read_uncommitted) and returns every batch header served.
func fetchBatches(t *testing.T, b *Broker, topic string) []kmsg.RecordBatch {
	t.Helper()
	cl := newClient(t, b)
	var out []kmsg.RecordBatch
	for offset, i := int64(0), 0; ; i++ {
		if i > 1000 {
			t.Fatal("too many fetches")
		}
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = 12, -1, 10, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = offset, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(testContext(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != 0 {
			t.Fatalf("fetch at %d: error %d", offset, sp.ErrorCode)
		}
		if offset >= sp.HighWatermark {
			return out
		}
		start := offset
		for rest := sp.RecordBatches; len(rest) >= segment.BatchHeaderSize; {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(rest); err != nil {
				break
			}
			out = append(out, rb)
			offset = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
			rest = rest[rb.Length+12:]
		}
		if offset == start {
			t.Fatalf("fetch at %d (high watermark %d) served no batch", offset, sp.HighWatermark)
		}
	}
}

// TestCleaner_RepairsEmptyBatchesOfOlderBuilds: a compacted log holding the empty
// batches without a producer id that an older build's cleaner left (which kcat,
// kafkajs and kafka-python cannot read) never serves them to a consumer: hidden while
// the cleaner is off, removed by the cleaner's check on the next start.
func TestCleaner_RepairsEmptyBatchesOfOlderBuilds(t *testing.T) {
	const topic = "legacy"
	dir := t.TempDir()
	props := map[string]string{"log.cleaner.backoff.ms": "20"}
	b := startTestBroker(t, dir, props)
	mustCreateTopic(t, newAdmin(t, b), topic, 1, map[string]*string{"cleanup.policy": strp("compact"), "segment.bytes": strp("2048")})
	produceKeyed(t, newClient(t, b, kgo.ProducerLinger(0)), topic, 300, 20)
	c := b.cleaner.Load()
	testwait.Until(t, 30*time.Second, "the topic is cleaned", func() bool { _, ok := c.cleanedUpTo(topic); return ok })
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// What an older build left: two groups ending with an empty batch, sealed.
	cfg := segment.DefaultConfig()
	cfg.Compacted = true
	l, _, err := segment.Open(filepath.Join(dir, "logs", segment.PartitionDirName(topic, 0)), cfg, segment.OpenOptions{CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	next := l.LogEndOffset()
	for g := 0; g < 2; g++ {
		for _, batch := range [][]byte{keyedBatchAt(next, fmt.Sprint("legacy-", g), "v"), legacyEmptyBatch(next+1, 5)} {
			if _, err := l.AppendAsFollower(batch); err != nil {
				t.Fatal(err)
			}
		}
		next += 6
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.AppendAsFollower(keyedBatchAt(next, "head", "v")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The older build's run ended with a marker of its own, which the descriptions of
	// the close before it do not match (clean_log_states.go): the next start loads the
	// log from its files.
	if err := os.Remove(filepath.Join(dir, "logs", cleanLogStatesFile)); err != nil {
		t.Fatal(err)
	}
	legacy := func(b *Broker) (n int) {
		b.partitions.get(topic, 0).WithLog(func(l *segment.Log) error {
			return l.ScanBatchHeaders(0, func(h segment.BatchHeader) error {
				if h.RecordCount == 0 && h.ProducerID < 0 {
					n++
				}
				return nil
			})
		})
		return n
	}
	served := func(b *Broker) {
		t.Helper()
		batches := fetchBatches(t, b, topic)
		keys := map[string]bool{}
		for _, rb := range batches {
			if rb.NumRecords == 0 && rb.ProducerID < 0 {
				t.Fatalf("served an empty batch without a producer id at offset %d", rb.FirstOffset)
			}
		}
		cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		for !keys["head"] {
			fs := cl.PollFetches(testContext(t))
			fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
			fs.EachRecord(func(r *kgo.Record) { keys[string(r.Key)] = true })
		}
		if !keys["legacy-0"] || !keys["legacy-1"] || len(keys) != 23 {
			t.Fatalf("read keys %v", keys)
		}
	}

	// The cleaner off: the batches stay in the log and are hidden.
	off := map[string]string{"log.cleaner.enable": "false"}
	b = startTestBroker(t, dir, off)
	if n := legacy(b); n != 2 {
		t.Fatalf("%d legacy empty batches in the log, want 2", n)
	}
	served(b)
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The cleaner on: its check finds and removes them, and the log stops hiding.
	b = startTestBroker(t, dir, props)
	testwait.Until(t, 30*time.Second, "the cleaner removes them", func() bool { return legacy(b) == 0 })
	testwait.Until(t, 30*time.Second, "the log stops hiding", func() bool {
		hides := true
		b.partitions.get(topic, 0).WithLog(func(l *segment.Log) error { hides = l.HidesEmptyBatches(); return nil })
		return !hides
	})
	served(b)
}
