package integration

// Real clients reading compacted topics. Petrel's cleaner used to leave, at the end of
// every cleaned group of segments, an empty record batch (records count 0) without a
// producer id: kcat and confluent-kafka-python (librdkafka) stopped or reported an error
// per such batch, kafka-python 2.0.2 crashed and kafkajs 2.2.4 stalled; only franz-go
// coped. The cleaner now follows Kafka's rules (a batch left with no record is removed
// unless it holds an active producer's last sequence and epoch, aborted transactional
// data is discarded, markers go once their transaction has nothing left and
// delete.retention.ms has passed). TestCompaction_Clients reproduces the case that
// always broke — a topic written under cleanup.policy=delete, then switched to compact,
// so that one pass cleans the whole log — for three producer kinds, and has every
// client available here read each topic from its beginning to its end.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// ccKeys keys get ccRecords records (about 50 versions each), in a random order,
	// then ccTombstones of them are deleted.
	ccKeys       = 1000
	ccRecords    = 50_000
	ccTombstones = 100
	// ccSegmentMs is the topics' segment.ms. A record timestamped later than that after
	// the active segment's first batch rolls it (segment.shouldRoll).
	ccSegmentMs = 1000
	// ccReadTimeout bounds one client's read of one topic.
	ccReadTimeout = 20 * time.Second
)

// ccTopicConfigs are the bug report's topic settings, with cleanup.policy=delete: the
// topics are switched to compact once written.
func ccTopicConfigs() map[string]*string {
	return map[string]*string{
		"cleanup.policy":            new("delete"),
		"segment.bytes":             new("262144"),
		"segment.ms":                new(strconv.Itoa(ccSegmentMs)),
		"min.cleanable.dirty.ratio": new("0.01"),
		"delete.retention.ms":       new("1000"),
	}
}

// ccOp is one record a producer wrote: a value, or a tombstone (null).
type ccOp struct {
	key, value string
	null       bool
}

// ccRecord is one record as read: by a client, or from the log with raw Fetch requests.
type ccRecord struct {
	offset     int64
	key, value string
	null       bool
}

// ccBatch is a record batch read from the log with raw Fetch requests.
type ccBatch struct {
	base, last   int64
	producerID   int64
	epoch        int16
	baseSequence int32
	numRecords   int32
	control      bool
	records      []ccRecord
}

// ccTopic is one topic of the scenario and what a reader must find in it.
type ccTopic struct {
	name, kind string
	// gzip: the producer compressed its batches.
	gzip bool
	// committed: readers use read_committed where they support it.
	committed bool
	// want is every live key's last (committed) value.
	want map[string]string
	// keys counts the distinct keys written outside aborted transactions: a compacted
	// log holds at most one record of each.
	keys int
	// hw is the high watermark; the record at hw-1 (the roller, see ccRoll) is a plain
	// record every reader returns, so a reader has read everything once it has read it.
	hw int64

	// Set once the log is compacted (readCCLog): the batches, the records by offset,
	// the offsets of control batches, and the read_uncommitted view (every data record
	// in offset order), which a reader without read_committed finds.
	batches     []ccBatch
	byOffset    map[int64]ccRecord
	controlAt   map[int64]bool
	uncommitted map[string]string
	// onDisk are the batch headers of the partition's .log files (readCCDisk): what
	// replicas read, empty batches included (consumer fetches leave those out).
	onDisk []ccBatch

	// idempotent only: the producer's last batch as it was sent (base offset 0,
	// partition leader epoch -1), and the offset and header fields it got.
	lastBatch               []byte
	lastBase                int64
	lastProducerID          int64
	lastEpoch               int16
	lastSequence, lastDelta int32
}

// apply applies ops to want, in order.
func (tp *ccTopic) apply(ops []ccOp) {
	for _, op := range ops {
		if op.null {
			delete(tp.want, op.key)
		} else {
			tp.want[op.key] = op.value
		}
	}
}

// ccGenerate returns n records over ccKeys keys in a random order (fixed by seed),
// values prefix-i-padding of varying length, then ccTombstones tombstones of distinct
// keys, then one more record.
func ccGenerate(seed uint64, prefix string, n int) []ccOp {
	rng := rand.New(rand.NewPCG(seed, 7))
	var ops []ccOp
	for i := range n {
		ops = append(ops, ccOp{key: recordKey(rng.IntN(ccKeys)), value: ccValue(prefix, i)})
	}
	for _, k := range rng.Perm(ccKeys)[:ccTombstones] {
		ops = append(ops, ccOp{key: recordKey(k), null: true})
	}
	return append(ops, ccOp{key: recordKey(rng.IntN(ccKeys)), value: prefix + "-one-more"})
}

// ccValue is record i's value: prefix, i, and 40 to 100 hex digits of a hash (values
// that compress about as well as real data: a gzip topic still fills many segments).
func ccValue(prefix string, i int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s-%d", prefix, i))
	pad := hex.EncodeToString(sum[:])
	pad = (pad + pad)[:40+i%61]
	return fmt.Sprintf("%s-%06d-%s", prefix, i, pad)
}

func ccDistinctKeys(ops []ccOp) map[string]bool {
	keys := map[string]bool{}
	for _, op := range ops {
		keys[op.key] = true
	}
	return keys
}

// kgoRecords turns ops into kgo records (a tombstone has a nil value).
func kgoRecords(ops []ccOp) []*kgo.Record {
	recs := make([]*kgo.Record, 0, len(ops))
	for _, op := range ops {
		r := &kgo.Record{Key: []byte(op.key)}
		if !op.null {
			r.Value = []byte(op.value)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestCompaction_Clients writes three topics under cleanup.policy=delete, one broker,
// 262144-byte segments: "plain" with kcat (librdkafka, acks=all, no idempotence; the bug
// report's producer), "idempotent" with kgo's default idempotent producer, and
// "transactional" with a kgo transactional producer committing some transactions and
// aborting others over the same keys. Each gets about ccRecords records over ccKeys
// keys, tombstones, and the tail ccRoll describes, which leaves everything but the last
// record in sealed segments. All three are switched to compact with one
// IncrementalAlterConfigs; once the cleaner's checkpoint shows each log cleaned up to its
// last record, the subtests check:
//
//   - log: raw Fetch requests read every batch; none is empty without a producer id, the
//     records hold exactly the expected last values (no aborted data is left), and at
//     most one record a key.
//   - producer-state: the idempotent producer's last batch is still in the log with its
//     producer id, epoch and sequence, and sending it again is answered as a duplicate
//     (its original base offset, the log end offset unchanged).
//   - kcat, confluent-kafka-python, kafka-python, kafkajs, sarama, kafka-go, kgo: each
//     reads each topic from its beginning to its end (read_committed on the
//     transactional one where the client supports it) within ccReadTimeout, returning
//     records of the log in offset order, with exactly the last value of every live key.
func TestCompaction_Clients(t *testing.T) {
	t.Parallel()
	start := time.Now()
	// kafkajs reads through a consumer group: no initial rebalance delay.
	c := StartCluster(t, 1, append(txnOptions(), WithProperty("group.initial.rebalance.delay.ms", "0"),
		WithProperty("log.cleaner.backoff.ms", "100"), WithProperty("log.cleaner.threads", "2"))...)
	addr := c.Addr(0)
	ctx := testContext(t)
	plain := &ccTopic{name: "cc-plain", kind: "plain", want: map[string]string{}}
	idem := &ccTopic{name: "cc-idempotent", kind: "idempotent", gzip: true, want: map[string]string{}}
	txn := &ccTopic{name: "cc-transactional", kind: "transactional", committed: true, want: map[string]string{}}
	topics := []*ccTopic{plain, idem, txn}
	for _, tp := range topics {
		c.CreateTopic(t, tp.name, 1, ccTopicConfigs())
	}

	ccProducePlain(t, c, plain)
	ccRoll(t, c, plain)
	ccProduceIdempotent(t, c, idem)
	ccRoll(t, c, idem)
	ccProduceTransactional(t, c, txn)
	ccRoll(t, c, txn)
	t.Logf("produced in %s", time.Since(start).Round(time.Millisecond))

	// One pass over the whole log: the switch to compact.
	adm := c.Admin(t)
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: new("compact")}},
		plain.name, idem.name, txn.name)
	if err == nil {
		for _, r := range resps {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs cleanup.policy=compact: %v", err)
	}
	switched := time.Now()
	checkpoint := filepath.Join(c.nodes[0].dir, "logs", "cleaner-offset-checkpoint")
	testwait.For(t, 40*time.Second, func() error {
		cleaned, err := readCleanerCheckpoint(checkpoint)
		if err != nil {
			return err
		}
		for _, tp := range topics {
			// Everything below the roller, alone in the active segment, is cleanable.
			if cleaned[tp.name] < tp.hw-1 {
				return fmt.Errorf("%s cleaned up to %d of %d", tp.name, cleaned[tp.name], tp.hw-1)
			}
		}
		return nil
	})
	t.Logf("cleaned %s after the switch to compact (%s since the start)", time.Since(switched).Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond))
	for _, tp := range topics {
		if err := readCCLog(c, tp); err != nil {
			t.Fatalf("%s: %v", tp.name, err)
		}
		// The files, read while the cleaner may still swap segments: a read that
		// meets a swap is read again.
		testwait.For(t, 10*time.Second, func() error {
			var err error
			tp.onDisk, err = readCCDisk(filepath.Join(c.nodes[0].dir, "logs", tp.name+"-0"))
			return err
		})
	}

	t.Run("log", func(t *testing.T) {
		for _, tp := range topics {
			ccCheckLog(t, tp)
		}
	})
	t.Run("producer-state", func(t *testing.T) { ccCheckProducerState(t, c, idem) })

	// reader runs a client's subtest: it reads each topic in turn. A client without
	// transaction support (!txns: kafka-python 2.0.2 has no read_committed, kafka-go's
	// Reader ignores its IsolationLevel, segmentio/kafka-go#1332; both return the
	// records of control batches, transaction markers, as data) must find the
	// read_uncommitted view of the transactional topic, markers left out.
	reader := func(name string, txns bool, read func(t *testing.T, tp *ccTopic) []ccRecord) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tp := range topics {
				t.Run(tp.kind, func(t *testing.T) {
					begin := time.Now()
					recs := read(t, tp)
					t.Logf("%s read %d records of %s in %s", name, len(recs), tp.name, time.Since(begin).Round(time.Millisecond))
					if !txns {
						data := recs[:0:0]
						for _, r := range recs {
							if !tp.controlAt[r.offset] {
								data = append(data, r)
							}
						}
						if n := len(recs) - len(data); n > 0 {
							t.Logf("%s returned %d transaction markers as records (no transaction support), left out", name, n)
						}
						recs = data
					}
					ccCheckRead(t, name, tp, recs, !txns && tp.committed)
				})
			}
		})
	}
	reader("kcat", true, func(t *testing.T, tp *ccTopic) []ccRecord { return ccReadKcat(t, addr, tp) })
	reader("confluent-kafka-python", true, func(t *testing.T, tp *ccTopic) []ccRecord {
		return ccReadScript(t, confluentClient(t), addr, tp)
	})
	reader("kafka-python", false, func(t *testing.T, tp *ccTopic) []ccRecord {
		return ccReadScript(t, kafkaPythonClient(t), addr, tp)
	})
	reader("kafkajs", true, func(t *testing.T, tp *ccTopic) []ccRecord { return ccReadScript(t, kafkajsClient(t), addr, tp) })
	reader("sarama", true, func(t *testing.T, tp *ccTopic) []ccRecord { return ccReadSarama(t, c, tp) })
	reader("kafka-go", false, func(t *testing.T, tp *ccTopic) []ccRecord {
		if tp.gzip {
			// Its Reader fetches the same offset for ever when a compressed batch whose
			// last records were compacted away ends a fetch answer (a segment's end), as
			// it does against Kafka: it jumps past such a batch only when the bytes it
			// counts down reach 0, which they do for uncompressed batches only
			// (segmentio/kafka-go#1416, fix proposed in #1411).
			t.Skip("kafka-go v0.4.51 cannot read compacted compressed batches (segmentio/kafka-go#1416)")
		}
		return ccReadKafkaGo(t, c, tp)
	})
	reader("kgo", true, func(t *testing.T, tp *ccTopic) []ccRecord { return ccReadKgo(t, c, tp) })
	t.Cleanup(func() { t.Logf("whole test: %s", time.Since(start).Round(time.Millisecond)) })
}

// ccProducePlain writes the plain topic as the bug report did: `kcat -P -K: -X
// acks=all` (librdkafka's batching, no idempotence), then the tombstones and one more
// record with -Z (an empty value is sent as null). Without kcat (outside CI) kgo writes
// the same records without idempotence.
func ccProducePlain(t *testing.T, c *Cluster, tp *ccTopic) {
	t.Helper()
	ops := ccGenerate(1, tp.kind, ccRecords)
	tp.apply(ops)
	tp.keys += len(ccDistinctKeys(ops))
	data, rest := ops[:ccRecords], ops[ccRecords:]
	lines := func(ops []ccOp) string {
		var b strings.Builder
		for _, op := range ops {
			b.WriteString(op.key + ":" + op.value + "\n")
		}
		return b.String()
	}
	if _, err := exec.LookPath("kcat"); err == nil {
		// batch.size 64 KiB (librdkafka's default is 1 MB): a batch must fit a segment
		// (Kafka refuses one larger than segment.bytes), and segments of several
		// batches are what the cleaner rewrites.
		args := []string{"-P", "-b", c.Addr(0), "-t", tp.name, "-p", "0", "-K:", "-X", "acks=all", "-X", "batch.size=65536"}
		runKcat(t, lines(data), args...)
		ccPreRoll(t, c, tp)
		runKcat(t, lines(rest), append(args, "-Z")...)
		return
	}
	if os.Getenv("CI") != "" {
		kcatBinary(t) // fails: CI must install kcat
	}
	t.Logf("kcat is not installed: kgo writes %s without idempotence instead", tp.name)
	cl := c.Client(t, kgo.DefaultProduceTopic(tp.name), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i, part := range [][]ccOp{data, rest} {
		if i == 1 {
			ccPreRoll(t, c, tp)
		}
		if err := cl.ProduceSync(testContext(t), kgoRecords(part)...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", tp.name, err)
		}
	}
}

// ccProduceIdempotent writes the idempotent topic with kgo's default (idempotent)
// producer, the last record alone in a batch, and keeps that batch as it was sent.
func ccProduceIdempotent(t *testing.T, c *Cluster, tp *ccTopic) {
	t.Helper()
	ops := ccGenerate(2, tp.kind, ccRecords)
	tp.apply(ops)
	tp.keys += len(ccDistinctKeys(ops))
	// gzip: every client here reads it (kafkajs and kafka-python lack snappy, kgo's
	// default; every other producer here sends uncompressed batches); the cleaner
	// recompresses the batches it rewrites.
	cl := c.Client(t, kgo.DefaultProduceTopic(tp.name), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.ProducerBatchCompression(kgo.GzipCompression()))
	ctx := testContext(t)
	n := len(ops)
	for i, part := range [][]ccOp{ops[:n-1], ops[n-1:]} {
		if i == 1 {
			ccPreRoll(t, c, tp)
		}
		if err := cl.ProduceSync(ctx, kgoRecords(part)...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", tp.name, err)
		}
	}
	leo := mustReplicaLEO(t, c, 0, tp.name, 0)
	sp, err := fetchAt(c, 0, 12, tp.name, 0, leo-1)
	if err == nil && sp.ErrorCode != 0 {
		err = kerr.ErrorForCode(sp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("fetch of %s at %d: %v", tp.name, leo-1, err)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(sp.RecordBatches); err != nil {
		t.Fatalf("the last batch of %s: %v", tp.name, err)
	}
	if rb.ProducerID < 0 || rb.FirstOffset+int64(rb.LastOffsetDelta) != leo-1 || rb.NumRecords != 1 {
		t.Fatalf("the last batch of %s: producer %d, offsets %d+%d, %d records; expected one record at %d from an idempotent producer",
			tp.name, rb.ProducerID, rb.FirstOffset, rb.LastOffsetDelta, rb.NumRecords, leo-1)
	}
	raw := bytes.Clone(sp.RecordBatches[:int(rb.Length)+12])
	binary.BigEndian.PutUint64(raw[0:8], 0)            // as a producer sends it; not in the CRC
	binary.BigEndian.PutUint32(raw[12:16], 0xffffffff) // partition leader epoch -1; not in the CRC
	tp.lastBatch, tp.lastBase = raw, rb.FirstOffset
	tp.lastProducerID, tp.lastEpoch, tp.lastSequence, tp.lastDelta = rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.LastOffsetDelta
}

// ccProduceTransactional writes the transactional topic with a kgo transactional
// producer: 16 transactions of 1,500 records over ccKeys keys, every third aborted; then
// a committed one deleting 50 keys, an aborted one deleting 50 others and rewriting the
// deleted ones (neither may show), and a committed one with one more record. want holds
// only committed values; every aborted value has "aborted" in it.
func ccProduceTransactional(t *testing.T, c *Cluster, tp *ccTopic) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 7))
	type txnOps struct {
		ops    []ccOp
		commit bool
	}
	var txns []txnOps
	i := 0
	for x := range 16 {
		commit := x%3 != 1
		status := "committed"
		if !commit {
			status = "aborted"
		}
		var ops []ccOp
		for range 1500 {
			ops = append(ops, ccOp{key: recordKey(rng.IntN(ccKeys)), value: ccValue(fmt.Sprintf("txn%02d-%s", x, status), i)})
			i++
		}
		txns = append(txns, txnOps{ops, commit})
	}
	perm := rng.Perm(ccKeys)
	deleted, kept := perm[:50], perm[50:100]
	var del, abortDel []ccOp
	for _, k := range deleted {
		del = append(del, ccOp{key: recordKey(k), null: true})
		abortDel = append(abortDel, ccOp{key: recordKey(k), value: ccValue("txn17-aborted-resurrect", k)})
	}
	for _, k := range kept {
		abortDel = append(abortDel, ccOp{key: recordKey(k), null: true})
	}
	txns = append(txns, txnOps{del, true}, txnOps{abortDel, false},
		txnOps{[]ccOp{{key: recordKey(rng.IntN(ccKeys)), value: "txn18-committed-one-more"}}, true})

	cl := c.Client(t, kgo.DefaultProduceTopic(tp.name), kgo.TransactionalID("cc-transactional-producer"),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testContext(t)
	keys := map[string]bool{}
	for x, tx := range txns {
		if x == len(txns)-1 {
			ccPreRoll(t, c, tp)
		}
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("transaction %d: begin: %v", x, err)
		}
		if err := cl.ProduceSync(ctx, kgoRecords(tx.ops)...).FirstErr(); err != nil {
			t.Fatalf("transaction %d: produce: %v", x, err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(tx.commit)); err != nil {
			t.Fatalf("transaction %d: end (commit %v): %v", x, tx.commit, err)
		}
		if tx.commit {
			tp.apply(tx.ops)
			maps.Copy(keys, ccDistinctKeys(tx.ops))
		}
	}
	tp.keys += len(keys)
	// The last marker is written after EndTransaction returns: the roller must come after
	// it, so wait until no transaction is open (last stable offset = log end offset).
	adm := c.Admin(t)
	testwait.For(t, 15*time.Second, func() error {
		end, err := adm.ListEndOffsets(ctx, tp.name)
		if err != nil {
			return err
		}
		stable, err := adm.ListCommittedOffsets(ctx, tp.name)
		if err != nil {
			return err
		}
		e, _ := end.Lookup(tp.name, 0)
		s, _ := stable.Lookup(tp.name, 0)
		if e.Err != nil || s.Err != nil || e.Offset != s.Offset {
			return fmt.Errorf("%s: end offset %d (%v), last stable offset %d (%v)", tp.name, e.Offset, e.Err, s.Offset, s.Err)
		}
		return nil
	})
}

// The layout of a topic's tail, in segments that the test makes roll where it wants.
// A record rolls the active segment when its timestamp is more than segment.ms past
// the segment's first batch's (segment.shouldRoll), so plain records (no producer id)
// with timestamps ahead of the clock place the boundaries:
//
//	... bulk data | pre-roller (+ccPreRollAhead), the producer's last batch, [its
//	marker], superseder | roller (+ccRollAhead)
//
// The superseder rewrites the key of the producer's last record, which the cleaner
// therefore empties: Kafka keeps an active producer's last batch as an empty batch.
// That batch always has a record after it in its segment (several clients cannot read
// past an empty batch that ends a fetch answer, against Kafka too: kafkajs 2.2.4 stalls,
// kafka-python 2.0.2 fails). The segment of the tail starts with the pre-roller, whose
// timestamp is ahead of every batch after it until the roller: nothing in between
// rolls it, whatever the pace. The roller sits alone in the active segment, so
// everything before it is cleanable, and every topic ends with a record every reader
// returns.
const (
	ccPreRollAhead = 20 * time.Second
	ccRollAhead    = 2*ccPreRollAhead + 2*ccSegmentMs*time.Millisecond
)

// ccPlainRecord writes a plain record (no producer id) to tp, timestamped ahead by
// ahead (0: the client's clock), and returns its offset.
func ccPlainRecord(t *testing.T, c *Cluster, tp *ccTopic, key, value string, ahead time.Duration) int64 {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(tp.name), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	r := &kgo.Record{Key: []byte(key), Value: []byte(value)}
	if ahead > 0 {
		r.Timestamp = time.Now().Add(ahead)
	}
	res, err := cl.ProduceSync(testContext(t), r).First()
	if err != nil {
		t.Fatalf("%s: %s: %v", tp.name, value, err)
	}
	if _, dup := tp.want[key]; !dup {
		tp.keys++
	}
	tp.want[key] = value
	return res.Offset
}

// ccPreRoll starts the segment of the tail (see ccRoll).
func ccPreRoll(t *testing.T, c *Cluster, tp *ccTopic) {
	t.Helper()
	ccPlainRecord(t, c, tp, "pre-roller", tp.kind+"-pre-roller", ccPreRollAhead)
}

// ccRoll writes the superseder and the roller (see the layout above).
func ccRoll(t *testing.T, c *Cluster, tp *ccTopic) {
	t.Helper()
	key := ""
	for k, v := range tp.want {
		if strings.HasSuffix(v, "one-more") {
			key = k // the key of the producer's last record
		}
	}
	if key == "" {
		t.Fatalf("%s: no last record", tp.name)
	}
	ccPlainRecord(t, c, tp, key, tp.kind+"-superseder", 0)
	tp.hw = ccPlainRecord(t, c, tp, "roller", tp.kind+"-roller", ccRollAhead) + 1
}

// readCleanerCheckpoint reads cleaner-offset-checkpoint (Kafka's format: a version line,
// a count, then "topic partition offset" lines) into partition 0's offset by topic.
func readCleanerCheckpoint(path string) (map[string]int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errors.New("no cleaner checkpoint yet")
	}
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, line := range lines[min(2, len(lines)):] {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("cleaner checkpoint line %q", line)
		}
		o, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cleaner checkpoint line %q: %v", line, err)
		}
		if f[1] == "0" {
			out[f[0]] = o
		}
	}
	return out, nil
}

// readCCDisk reads the batch headers of a partition directory's .log files, in offset
// order, as an independent reader of Kafka's format would.
func readCCDisk(dir string) ([]ccBatch, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []ccBatch
	prev := int64(-1)
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		for len(data) > 0 {
			var rb kmsg.RecordBatch
			if len(data) < recordBatchHeaderSize || rb.ReadFrom(data) != nil || int(rb.Length)+12 > len(data) {
				return nil, fmt.Errorf("%s: a torn batch", name)
			}
			if rb.FirstOffset <= prev {
				return nil, fmt.Errorf("%s: batch at %d after offset %d", name, rb.FirstOffset, prev)
			}
			out = append(out, ccBatch{base: rb.FirstOffset, last: rb.FirstOffset + int64(rb.LastOffsetDelta), producerID: rb.ProducerID,
				epoch: rb.ProducerEpoch, baseSequence: rb.FirstSequence, numRecords: rb.NumRecords, control: rb.Attributes&0x20 != 0})
			prev = out[len(out)-1].last
			data = data[int(rb.Length)+12:]
		}
	}
	return out, nil
}

// readCCLog reads partition 0 of tp from its log start offset to the high watermark
// with raw Fetch requests (read_uncommitted), batch by batch, and fills tp's view of the
// log.
func readCCLog(c *Cluster, tp *ccTopic) error {
	tp.batches, tp.byOffset, tp.controlAt, tp.uncommitted = nil, map[int64]ccRecord{}, map[int64]bool{}, map[string]string{}
	off, err := listOffsetAt(c, 0, -2, tp.name, 0, -2)
	if err != nil {
		return err
	}
	prev := int64(-1)
	for range 100_000 {
		sp, err := fetchAt(c, 0, 12, tp.name, 0, off)
		if err != nil {
			return err
		}
		if sp.ErrorCode != 0 {
			return fmt.Errorf("fetch at %d: %w", off, kerr.ErrorForCode(sp.ErrorCode))
		}
		if sp.HighWatermark != tp.hw {
			return fmt.Errorf("high watermark %d, expected %d", sp.HighWatermark, tp.hw)
		}
		if off >= sp.HighWatermark {
			return nil
		}
		b, start := sp.RecordBatches, off
		for len(b) >= recordBatchHeaderSize {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil || int(rb.Length)+12 > len(b) {
				break // a partial batch ends a size-limited answer
			}
			if rb.FirstOffset <= prev {
				return fmt.Errorf("batch at %d after offset %d", rb.FirstOffset, prev)
			}
			cb := ccBatch{base: rb.FirstOffset, last: rb.FirstOffset + int64(rb.LastOffsetDelta), producerID: rb.ProducerID,
				epoch: rb.ProducerEpoch, baseSequence: rb.FirstSequence, numRecords: rb.NumRecords,
				control: rb.Attributes&0x20 != 0}
			raw := rb.Records
			if codec := rb.Attributes & 7; codec != 0 {
				if raw, err = kgo.DefaultDecompressor().Decompress(raw, kgo.CompressionCodecType(codec)); err != nil {
					return fmt.Errorf("batch at %d: %w", rb.FirstOffset, err)
				}
			}
			for range rb.NumRecords {
				var r kmsg.Record
				if err := r.ReadFrom(raw); err != nil {
					return fmt.Errorf("record in batch %d: %w", rb.FirstOffset, err)
				}
				raw = raw[len(r.AppendTo(nil)):]
				rec := ccRecord{offset: rb.FirstOffset + int64(r.OffsetDelta), key: string(r.Key), value: string(r.Value), null: r.Value == nil}
				cb.records = append(cb.records, rec)
				if cb.control {
					tp.controlAt[rec.offset] = true
					continue
				}
				tp.byOffset[rec.offset] = rec
				if rec.null {
					delete(tp.uncommitted, rec.key)
				} else {
					tp.uncommitted[rec.key] = rec.value
				}
			}
			tp.batches = append(tp.batches, cb)
			prev = cb.last
			off, b = prev+1, b[int(rb.Length)+12:]
		}
		if off == start {
			return fmt.Errorf("no whole batch at %d", off)
		}
	}
	return errors.New("too many fetches")
}

// ccCheckLog checks tp's log as read with raw Fetch requests: no empty batch without a
// producer id, the expected last values and nothing aborted, at most one record a key.
func ccCheckLog(t *testing.T, tp *ccTopic) {
	t.Helper()
	var empty, emptyWithProducer, tombstones, aborted int
	for _, b := range tp.onDisk {
		if b.numRecords == 0 && b.producerID == -1 {
			if empty < 5 {
				t.Errorf("%s: an empty batch without a producer id at offsets %d-%d", tp.name, b.base, b.last)
			}
			empty++
		} else if b.numRecords == 0 {
			emptyWithProducer++
		}
	}
	for _, b := range tp.batches {
		if b.numRecords == 0 {
			t.Errorf("%s: a consumer fetch served an empty batch at offsets %d-%d (kafkajs and kafka-python cannot read an answer made of them)", tp.name, b.base, b.last)
		}
		for _, r := range b.records {
			if b.control {
				continue
			}
			if r.null {
				tombstones++
			}
			if strings.Contains(r.value, "aborted") {
				aborted++
			}
		}
	}
	t.Logf("%s: %d batches (%d empty ones of a producer, %d empty ones without), %d records (%d tombstones), %d markers, high watermark %d",
		tp.name, len(tp.batches), emptyWithProducer, empty, len(tp.byOffset), tombstones, len(tp.controlAt), tp.hw)
	if empty > 0 {
		t.Errorf("%s: %d empty batches without a producer id (Kafka's cleaner writes none; librdkafka, kafka-python and kafkajs cannot read past them)", tp.name, empty)
	}
	if aborted > 0 {
		t.Errorf("%s: %d records of aborted transactions are left in the cleaned log", tp.name, aborted)
	}
	if d := ccDiff(tp.uncommitted, tp.want); d != "" {
		t.Errorf("%s: the log's records (in offset order) do not hold the expected last values: %s", tp.name, d)
	}
	if len(tp.byOffset) > tp.keys {
		t.Errorf("%s: %d records left of %d keys: not compacted", tp.name, len(tp.byOffset), tp.keys)
	}
}

// ccCheckProducerState checks that the idempotent producer's last batch is still in the
// compacted log (Kafka keeps an active producer's last batch, empty if need be) and that
// sending it again is recognised as a duplicate.
func ccCheckProducerState(t *testing.T, c *Cluster, tp *ccTopic) {
	found := false
	for _, b := range tp.onDisk {
		if b.base != tp.lastBase {
			continue
		}
		found = true
		if b.producerID != tp.lastProducerID || b.epoch != tp.lastEpoch || b.baseSequence != tp.lastSequence || b.last-b.base != int64(tp.lastDelta) {
			t.Errorf("the producer's last batch at %d is now producer %d epoch %d sequence %d, %d offsets; it was producer %d epoch %d sequence %d, %d offsets",
				b.base, b.producerID, b.epoch, b.baseSequence, b.last-b.base+1, tp.lastProducerID, tp.lastEpoch, tp.lastSequence, tp.lastDelta+1)
		}
		t.Logf("the producer's last batch at %d: %d records left (its record is superseded)", b.base, b.numRecords)
	}
	if !found {
		t.Errorf("the producer's last batch (offset %d, producer %d) is gone from the compacted log: Kafka keeps it, empty if need be", tp.lastBase, tp.lastProducerID)
	}
	leo := mustReplicaLEO(t, c, 0, tp.name, 0)
	sp := produceRaw(t, c, 0, tp.name, -1, tp.lastBatch)
	if sp.ErrorCode != 0 || sp.BaseOffset != tp.lastBase {
		t.Errorf("the producer's last batch sent again: %v at offset %d; expected a duplicate, answered with its offset %d",
			kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, tp.lastBase)
	}
	if got := mustReplicaLEO(t, c, 0, tp.name, 0); got != leo {
		t.Fatalf("the duplicate was written: log end offset %d, was %d", got, leo)
	}
}

// ccCheckRead checks what a client read of tp: records of the log (same offset, key and
// value), in increasing offset order, ending with the record at hw-1, holding exactly
// the last value of every live key, nothing of an aborted transaction. A reader without
// read_committed on a transactional topic (uncommitted) must find the read_uncommitted
// view of the log instead.
func ccCheckRead(t *testing.T, client string, tp *ccTopic, recs []ccRecord, uncommitted bool) {
	t.Helper()
	want := tp.want
	if uncommitted {
		want = tp.uncommitted
	}
	got := map[string]string{}
	prev := int64(-1)
	for i, r := range recs {
		if r.offset <= prev {
			t.Fatalf("%s on %s: record %d at offset %d after offset %d", client, tp.name, i, r.offset, prev)
		}
		prev = r.offset
		if l, ok := tp.byOffset[r.offset]; !ok || l != r {
			t.Fatalf("%s on %s: record at offset %d is %s; the log holds %s", client, tp.name, r.offset, ccShow(r, true), ccShow(l, ok))
		}
		if !uncommitted && strings.Contains(r.value, "aborted") {
			t.Fatalf("%s on %s (read_committed): a record of an aborted transaction at offset %d: %q", client, tp.name, r.offset, r.value)
		}
		if r.null {
			delete(got, r.key)
		} else {
			got[r.key] = r.value
		}
	}
	if prev != tp.hw-1 {
		t.Errorf("%s on %s: the last record read is at offset %d; the high watermark is %d", client, tp.name, prev, tp.hw)
	}
	if d := ccDiff(got, want); d != "" {
		t.Errorf("%s on %s: %d records read do not hold the expected last values: %s", client, tp.name, len(recs), d)
	}
}

func ccShow(r ccRecord, ok bool) string {
	switch {
	case !ok:
		return "nothing"
	case r.null:
		return fmt.Sprintf("%q=null", r.key)
	}
	return fmt.Sprintf("%q=%q", r.key, r.value)
}

// ccDiff describes how got differs from want ("" if not), listing a few keys.
func ccDiff(got, want map[string]string) string {
	var missing, extra, wrong []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != want[k]:
			wrong = append(wrong, fmt.Sprintf("%s=%q (expected %q)", k, g, want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			extra = append(extra, fmt.Sprintf("%s=%q", k, got[k]))
		}
	}
	if len(missing)+len(extra)+len(wrong) == 0 {
		return ""
	}
	few := func(s []string) []string { return s[:min(len(s), 3)] }
	return fmt.Sprintf("%d live keys, expected %d; %d missing %v, %d deleted or never written but present %v, %d with another value %v",
		len(got), len(want), len(missing), few(missing), len(extra), few(extra), len(wrong), few(wrong))
}

// runCCDump runs a reader process bounded by ccReadTimeout and returns its stdout; a
// failure or a timeout fails t with stderr.
func runCCDump(t *testing.T, cmd *exec.Cmd, cancel context.CancelFunc) string {
	t.Helper()
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	begin := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v after %s\nstderr:\n%s", strings.Join(cmd.Args, " "), err, time.Since(begin).Round(time.Millisecond), ccTail(stderr.String()))
	}
	if stderr.Len() > 0 {
		t.Logf("%s stderr:\n%s", filepath.Base(cmd.Args[0]), ccTail(stderr.String()))
	}
	return stdout.String()
}

// ccTail is the end of a long output.
func ccTail(s string) string {
	if len(s) > 6000 {
		return "...\n" + s[len(s)-6000:]
	}
	return s
}

// ccReadKcat reads tp with `kcat -C -e` (read_committed is librdkafka's default; said
// explicitly for the transactional topic), printing partition, offset, key, value length
// (-1 for null) and value.
func ccReadKcat(t *testing.T, addr string, tp *ccTopic) []ccRecord {
	t.Helper()
	args := []string{"-C", "-b", addr, "-t", tp.name, "-o", "beginning", "-e", "-q", "-f", `%p\t%o\t%k\t%S\t%s\n`}
	if tp.committed {
		args = append(args, "-X", "isolation.level=read_committed")
	}
	ctx, cancel := context.WithTimeout(testContext(t), ccReadTimeout)
	out := runCCDump(t, exec.CommandContext(ctx, kcatBinary(t), args...), cancel)
	var recs []ccRecord
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 5)
		if len(f) != 5 {
			t.Fatalf("kcat line %q", sc.Text())
		}
		off, err1 := strconv.ParseInt(f[1], 10, 64)
		n, err2 := strconv.Atoi(f[3])
		if f[0] != "0" || err1 != nil || err2 != nil {
			t.Fatalf("kcat line %q", sc.Text())
		}
		recs = append(recs, ccRecord{offset: off, key: f[2], value: f[4], null: n < 0})
	}
	return recs
}

// ccReadScript reads tp with a script client's dump mode ("partition offset key value",
// key and value as x<hex>, or - for null).
func ccReadScript(t *testing.T, s scriptClient, addr string, tp *ccTopic) []ccRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), ccReadTimeout)
	cmd := s.command(ctx, "dump", addr, tp.name)
	// The script's own bound comes first, so that it says where it stopped.
	cmd.Env = append(cmd.Env, "PETREL_SCRIPT_TIMEOUT_MS="+strconv.Itoa(int((ccReadTimeout-3*time.Second).Milliseconds())))
	out := runCCDump(t, cmd, cancel)
	decode := func(s string) (string, bool, error) {
		if s == "-" {
			return "", true, nil
		}
		if !strings.HasPrefix(s, "x") {
			return "", false, fmt.Errorf("%q", s)
		}
		b, err := hex.DecodeString(s[1:])
		return string(b), false, err
	}
	var recs []ccRecord
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "0" {
			t.Fatalf("%s dump line %q", s.name, line)
		}
		off, err := strconv.ParseInt(f[1], 10, 64)
		key, _, err1 := decode(f[2])
		value, null, err2 := decode(f[3])
		if err != nil || err1 != nil || err2 != nil {
			t.Fatalf("%s dump line %q", s.name, line)
		}
		recs = append(recs, ccRecord{offset: off, key: key, value: value, null: null})
	}
	return recs
}

var (
	kafkaPythonOnce sync.Once
	kafkaPython     string // a python3 that imports kafka (kafka-python); "" if none
)

// kafkaPythonClient returns the kafka-python script client, or skips t (fails it in
// CI) when no python3 imports kafka: Debian's /usr/bin/python3, where python3-kafka
// installs it, is tried before the one on PATH.
func kafkaPythonClient(t *testing.T) scriptClient {
	t.Helper()
	kafkaPythonOnce.Do(func() {
		candidates := []string{"/usr/bin/python3"}
		if p, err := exec.LookPath("python3"); err == nil {
			candidates = append(candidates, p)
		}
		for _, p := range candidates {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := exec.CommandContext(ctx, p, "-c", "import kafka; kafka.KafkaConsumer").Run()
			cancel()
			if err == nil {
				kafkaPython = p
				return
			}
		}
	})
	if kafkaPython == "" {
		missingTool(t, "no python3 imports kafka (apt-get install python3-kafka)")
	}
	script, err := filepath.Abs("testdata/kafkapython/client.py")
	if err != nil {
		t.Fatal(err)
	}
	return scriptClient{name: "kafka-python", argv: []string{kafkaPython, "-u", script}}
}

// ccReadSarama reads tp with a sarama PartitionConsumer from the oldest offset
// (read_committed for the transactional topic).
func ccReadSarama(t *testing.T, c *Cluster, tp *ccTopic) []ccRecord {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	if tp.committed {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	consumer, err := bounded(t, saramaTimeout, "NewConsumer", func() (sarama.Consumer, error) { return sarama.NewConsumer(c.Addrs(), cfg) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { consumer.Close() })
	pc, err := bounded(t, saramaTimeout, "ConsumePartition", func() (sarama.PartitionConsumer, error) {
		return consumer.ConsumePartition(tp.name, 0, sarama.OffsetOldest)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.AsyncClose() })
	timer := time.NewTimer(ccReadTimeout)
	defer timer.Stop()
	var recs []ccRecord
	for len(recs) == 0 || recs[len(recs)-1].offset < tp.hw-1 {
		select {
		case m := <-pc.Messages():
			recs = append(recs, ccRecord{offset: m.Offset, key: string(m.Key), value: string(m.Value), null: m.Value == nil})
		case err := <-pc.Errors():
			t.Fatalf("sarama after %d records: %v", len(recs), err)
		case <-timer.C:
			t.Fatalf("sarama read %d records in %s, not up to offset %d", len(recs), ccReadTimeout, tp.hw-1)
		}
	}
	return recs
}

// ccReadKafkaGo reads tp with a kafka-go Reader on partition 0 (read_committed for the
// transactional topic).
func ccReadKafkaGo(t *testing.T, c *Cluster, tp *ccTopic) []ccRecord {
	t.Helper()
	cfg := kafka.ReaderConfig{Brokers: c.Addrs(), Topic: tp.name, Partition: 0, MaxWait: 200 * time.Millisecond}
	if tp.committed {
		cfg.IsolationLevel = kafka.ReadCommitted
	}
	r := kafka.NewReader(cfg)
	t.Cleanup(func() { r.Close() })
	ctx, cancel := context.WithTimeout(testContext(t), ccReadTimeout)
	defer cancel()
	var recs []ccRecord
	for len(recs) == 0 || recs[len(recs)-1].offset < tp.hw-1 {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go after %d records: %v", len(recs), err)
		}
		recs = append(recs, ccRecord{offset: m.Offset, key: string(m.Key), value: string(m.Value), null: m.Value == nil})
	}
	return recs
}

// ccReadKgo reads tp with a kgo consumer of partition 0 from its start (read_committed
// for the transactional topic).
func ccReadKgo(t *testing.T, c *Cluster, tp *ccTopic) []ccRecord {
	t.Helper()
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tp.name: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200 * time.Millisecond)}
	if tp.committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := c.Client(t, opts...)
	ctx, cancel := context.WithTimeout(testContext(t), ccReadTimeout)
	defer cancel()
	var recs []ccRecord
	for len(recs) == 0 || recs[len(recs)-1].offset < tp.hw-1 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("kgo read %d records, not up to offset %d: %v", len(recs), tp.hw-1, err)
		}
		if err := fs.Err0(); err != nil {
			t.Fatalf("kgo after %d records: %v", len(recs), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, ccRecord{offset: r.Offset, key: string(r.Key), value: string(r.Value), null: r.Value == nil})
		})
	}
	return recs
}
