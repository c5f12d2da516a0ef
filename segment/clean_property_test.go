package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The property test of the cleaner against Kafka's rules. A random log of plain,
// idempotent and transactional batches (commits, aborts, fencing aborts with a bumped
// epoch, tombstones, keyless records, every codec) is cleaned to a fixpoint three times:
// before any delete horizon passes, and twice after the clock moves past them. After
// each stage the log must hold exactly the batches and records that a model of Kafka's
// rules keeps (LogCleaner, CleanedTransactionMetadata, MemoryRecords.filterTo), written
// for this test over whole records rather than bytes:
//
//   - a data record of an aborted transaction goes; another stays when it has a key, is
//     its key's latest among the records that are not aborted, and is not a tombstone
//     after its delete horizon;
//   - a marker stays while a batch of its transaction is left; without one it goes
//     after its delete horizon;
//   - a batch with no record left goes, unless it holds its active producer's last
//     sequence and epoch: then it stays, empty;
//   - nothing at or after the uncleanable offset changes, and no empty batch without a
//     producer id is ever written.
//
// Every batch is read back by an independent reader (kmsg), the transaction index must
// list exactly the aborted transactions whose marker is left, and a read_committed
// consumer sees each key's latest committed value.

// mRecord is one record of the model.
type mRecord struct {
	offset int64
	key    *string // nil: keyless
	value  *string // nil: tombstone
}

// mBatch is one batch of the model.
type mBatch struct {
	base, last    int64
	pid           int64
	epoch         int16
	transactional bool
	control       bool
	commit        bool // a control batch's type
	codec         int8
	txn           int // the transaction a transactional batch or marker belongs to; -1
	recs          []mRecord
}

// mTxn is one transaction of the model.
type mTxn struct {
	pid     int64
	first   int64
	marker  int64 // offset of its marker, -1 while open
	aborted bool
}

// modelLog generates the random log and decides what cleaning keeps.
type modelLog struct {
	batches   []mBatch
	txns      []mTxn
	next      int64
	producers map[int64]ProducerLastRecord // the active producers after every append
	expired   map[int64]bool               // producers left out of CleanOptions.Producers
}

func strp(s string) *string { return &s }

// encode writes b as a stored batch.
func (b mBatch) encode(tb testing.TB, ts int64) []byte {
	tb.Helper()
	var raw []byte
	for _, r := range b.recs {
		rec := kmsg.Record{TimestampDelta64: r.offset - b.base, OffsetDelta: int32(r.offset - b.base)}
		if r.key != nil {
			rec.Key = []byte(*r.key)
		}
		if r.value != nil {
			rec.Value = []byte(*r.value)
		}
		if b.control {
			typ := byte(0)
			if b.commit {
				typ = 1
			}
			rec.Key, rec.Value = []byte{0, 0, 0, typ}, []byte{0, 0, 0, 0, 0, 5}
		}
		body := rec.AppendTo(nil)
		rec.Length = int32(len(body) - 1)
		raw = rec.AppendTo(raw)
	}
	if b.codec != 0 {
		raw = compressForTest(tb, b.codec, raw)
	}
	attrs := int16(b.codec)
	if b.transactional {
		attrs |= attributeTransactional
	}
	if b.control {
		attrs |= attributeControl
	}
	seq := int32(-1)
	if b.pid >= 0 && !b.control {
		seq = int32(b.base % 1000)
	}
	rb := kmsg.RecordBatch{FirstOffset: b.base, PartitionLeaderEpoch: 0, Magic: 2, Attributes: attrs,
		LastOffsetDelta: int32(b.last - b.base), FirstTimestamp: ts, MaxTimestamp: ts + b.last - b.base,
		ProducerID: b.pid, ProducerEpoch: b.epoch, FirstSequence: seq, NumRecords: int32(len(b.recs)), Records: raw}
	if b.pid < 0 {
		rb.ProducerEpoch = -1
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offsetBatchLength:], uint32(len(out)-batchLengthOverhead))
	binary.BigEndian.PutUint32(out[offsetCRC:], crc32.Checksum(out[offsetAttributes:], castagnoli))
	return out
}

// add appends a batch of n records to the model.
func (m *modelLog) add(b mBatch, n int, rng *rand.Rand, keys int) {
	b.base = m.next
	for i := 0; i < n; i++ {
		r := mRecord{offset: m.next}
		m.next++
		if b.control {
			b.recs = append(b.recs, r)
			continue
		}
		if rng.IntN(25) > 0 {
			r.key = strp(fmt.Sprintf("k%d", rng.IntN(keys)))
		}
		if rng.IntN(5) > 0 {
			r.value = strp(fmt.Sprintf("v%d", r.offset))
		}
		b.recs = append(b.recs, r)
	}
	b.last = m.next - 1
	if b.pid >= 0 {
		e := m.producers[b.pid]
		switch {
		case !b.control:
			m.producers[b.pid] = ProducerLastRecord{LastDataOffset: b.last, ProducerEpoch: b.epoch}
		case b.epoch > e.ProducerEpoch:
			m.producers[b.pid] = ProducerLastRecord{LastDataOffset: -1, ProducerEpoch: b.epoch}
		}
	}
	m.batches = append(m.batches, b)
}

// generate builds a random log: plain batches, two idempotent producers (1, 2) and two
// transactional ones (3, 4), whose transactions commit, abort, or are fenced by an
// ABORT marker with a bumped epoch. Every transaction ends.
func generate(rng *rand.Rand, batches, keys int) *modelLog {
	m := &modelLog{producers: map[int64]ProducerLastRecord{}, expired: map[int64]bool{}}
	epochs := map[int64]int16{1: 0, 2: 0, 3: 0, 4: 0}
	open := map[int64]int{} // producer -> transaction
	endTxn := func(pid int64) {
		ti := open[pid]
		delete(open, pid)
		t := &m.txns[ti]
		t.aborted = rng.IntN(5) < 2
		epoch := epochs[pid]
		if t.aborted && rng.IntN(3) == 0 {
			epochs[pid]++ // fenced: the coordinator aborts with a bumped epoch
			epoch = epochs[pid]
		}
		t.marker = m.next
		m.add(mBatch{pid: pid, epoch: epoch, transactional: true, control: true, commit: !t.aborted, txn: ti}, 1, rng, keys)
	}
	for i := 0; i < batches; i++ {
		codec := int8(0)
		if rng.IntN(4) == 0 {
			codec = int8(1 + rng.IntN(4))
		}
		n := 1 + rng.IntN(5)
		switch k := rng.IntN(10); {
		case k < 4:
			m.add(mBatch{pid: -1, codec: codec, txn: -1}, n, rng, keys)
		case k < 6:
			pid := int64(1 + rng.IntN(2))
			m.add(mBatch{pid: pid, epoch: epochs[pid], codec: codec, txn: -1}, n, rng, keys)
		default:
			pid := int64(3 + rng.IntN(2))
			if _, ok := open[pid]; ok && rng.IntN(3) == 0 {
				endTxn(pid)
				continue
			}
			if _, ok := open[pid]; !ok {
				m.txns = append(m.txns, mTxn{pid: pid, first: m.next, marker: -1})
				open[pid] = len(m.txns) - 1
			}
			m.add(mBatch{pid: pid, epoch: epochs[pid], transactional: true, codec: codec, txn: open[pid]}, n, rng, keys)
		}
	}
	for _, pid := range []int64{3, 4} {
		if _, ok := open[pid]; ok {
			endTxn(pid)
		}
	}
	return m
}

// activeProducers is CleanOptions.Producers: the model's producers but the expired ones.
func (m *modelLog) activeProducers() map[int64]ProducerLastRecord {
	out := map[int64]ProducerLastRecord{}
	for pid, e := range m.producers {
		if !m.expired[pid] {
			out[pid] = e
		}
	}
	return out
}

func (m *modelLog) lastOfProducer(b mBatch) bool {
	e, ok := m.producers[b.pid]
	if b.pid < 0 || !ok || m.expired[b.pid] {
		return false
	}
	if e.LastDataOffset >= 0 {
		return b.last == e.LastDataOffset
	}
	return b.control && b.epoch == e.ProducerEpoch
}

// keptBatch is a batch as the model expects to read it after cleaning.
type keptBatch struct {
	base, last int64
	pid        int64
	control    bool
	offsets    []int64 // of the records kept
}

// expect computes what cleaning to a fixpoint keeps of the batches below end, at a
// stage: 0 before any delete horizon passes, 2 once every horizon has passed (twice:
// a marker's horizon is set only in a pass after its transaction's last batch went).
// It also returns the aborted transactions whose marker still holds its record.
func (m *modelLog) expect(end int64, stage int) ([]keptBatch, []mTxn) {
	latest := map[string]int64{}
	for _, b := range m.batches {
		if b.control || b.base >= end || b.txn >= 0 && m.txns[b.txn].aborted {
			continue
		}
		for _, r := range b.recs {
			if r.key != nil && r.offset < end {
				latest[*r.key] = r.offset
			}
		}
	}
	var out []keptBatch
	txnHasBatch := map[int]bool{}
	for _, b := range m.batches {
		if b.control {
			continue
		}
		k := keptBatch{base: b.base, last: b.last, pid: b.pid}
		for _, r := range b.recs {
			keep := b.base >= end
			if !keep && !(b.txn >= 0 && m.txns[b.txn].aborted) && r.key != nil && latest[*r.key] == r.offset {
				keep = r.value != nil || stage == 0
			}
			if keep {
				k.offsets = append(k.offsets, r.offset)
			}
		}
		if len(k.offsets) > 0 || m.lastOfProducer(b) {
			out = append(out, k)
			if b.txn >= 0 {
				txnHasBatch[b.txn] = true
			}
		}
	}
	var abortedLeft []mTxn
	for _, b := range m.batches {
		if !b.control {
			continue
		}
		k := keptBatch{base: b.base, last: b.last, pid: b.pid, control: true}
		if b.base >= end || stage == 0 || txnHasBatch[b.txn] {
			k.offsets = []int64{b.base}
		}
		if len(k.offsets) > 0 || m.lastOfProducer(b) {
			out = append(out, k)
		}
		if len(k.offsets) > 0 && m.txns[b.txn].aborted {
			abortedLeft = append(abortedLeft, m.txns[b.txn])
		}
	}
	slices.SortFunc(out, func(a, b keptBatch) int { return compareInt64(a.base, b.base) })
	return out, abortedLeft
}

func TestClean_KafkaRulesProperty(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			m := generate(rng, 40+rng.IntN(200), 2+rng.IntN(30))
			if rng.IntN(3) == 0 {
				m.expired[int64(1+rng.IntN(4))] = true
			}
			cfg := smallConfig()
			cfg.Compacted = true
			cfg.SegmentBytes = int64(512 + rng.IntN(6<<10))
			clock := &testClock{t: time.UnixMilli(1_700_000_000_000)}
			l, dir := openTestLog(t, cfg, OpenOptions{Now: clock.now})
			defer func() { l.Close() }()
			// The head: the last few batches (at least one) stay past the uncleanable
			// offset. (With none, the active segment would be empty and cleaning could
			// remove the log's last batches, leaving nothing for a reader to read up to
			// the log end offset; Kafka's logs have the same property. Rolls happen on
			// appends, so an active segment is empty only after a crash right after a roll.)
			head := len(m.batches) - 1 - rng.IntN(min(6, len(m.batches)-1))
			end := m.next
			originals := map[int64][]byte{}
			open := map[int64]int64{}
			for i, b := range m.batches {
				if i == head {
					end = b.base
					if err := l.Roll(); err != nil {
						t.Fatal(err)
					}
				}
				enc := b.encode(t, clock.t.UnixMilli())
				originals[b.base] = enc
				if _, err := l.AppendAsFollower(enc); err != nil {
					t.Fatalf("append batch %d: %v", i, err)
				}
				if b.transactional && !b.control {
					if _, ok := open[b.pid]; !ok {
						open[b.pid] = b.base
					}
				}
				if b.control {
					if t0 := m.txns[b.txn]; t0.aborted {
						a := AbortedTxn{ProducerID: b.pid, FirstOffset: t0.first, LastOffset: b.base, LastStableOffset: b.base + 1}
						if err := l.AppendAbortedTxns([]AbortedTxn{a}); err != nil {
							t.Fatal(err)
						}
					}
					delete(open, b.pid)
				}
			}
			opts := CleanOptions{MaxMapBytes: int64(offsetMapEntryBytes * (3 + rng.IntN(60))), DeleteRetentionMs: 60_000,
				Decompress: decompressForTest, Compress: compressorForTest, Producers: m.activeProducers()}
			var dropped []AbortedTxn
			clean := func(from int64) int64 {
				t.Helper()
				for pass := 0; pass < 1000; pass++ {
					aborted, err := l.AbortedTxns()
					if err != nil {
						t.Fatal(err)
					}
					opts.FirstDirtyOffset, opts.UncleanableOffset, opts.AbortedTxns = from, end, aborted
					p, err := l.PrepareClean(opts)
					if err != nil || p == nil {
						t.Fatalf("prepare: %v %v", p, err)
					}
					if err := p.Build(); err != nil {
						t.Fatal(err)
					}
					res, err := l.CommitClean(p)
					if err != nil {
						t.Fatal(err)
					}
					dropped = append(dropped, res.DroppedAbortedTxns...)
					if res.CleanedUpTo <= from && pass > 0 {
						return from
					}
					from = res.CleanedUpTo
				}
				t.Fatal("cleaning did not converge")
				return 0
			}
			check := func(stage int) {
				t.Helper()
				want, abortedLeft := m.expect(end, stage)
				var got []keptBatch
				for _, b := range readAll(t, l) {
					rb, recs := decodeBatch(t, b)
					k := keptBatch{base: rb.FirstOffset, last: rb.FirstOffset + int64(rb.LastOffsetDelta), pid: rb.ProducerID, control: rb.Attributes&attributeControl != 0}
					for _, r := range recs {
						k.offsets = append(k.offsets, r.offset)
					}
					if rb.NumRecords == 0 && rb.ProducerID < 0 {
						t.Fatalf("stage %d: empty batch without a producer id at %d", stage, rb.FirstOffset)
					}
					if k.base >= end && string(b) != string(originals[k.base]) {
						t.Fatalf("stage %d: head batch at %d changed", stage, k.base)
					}
					got = append(got, k)
				}
				if !slices.EqualFunc(got, want, func(a, b keptBatch) bool {
					return a.base == b.base && a.last == b.last && a.pid == b.pid && a.control == b.control && slices.Equal(a.offsets, b.offsets)
				}) {
					t.Fatalf("stage %d, cleaned below %d:\ngot  %v\nwant %v", stage, end, got, want)
				}
				checkSegmentFiles(t, dir)
				idx, err := l.AbortedTxns()
				if err != nil {
					t.Fatal(err)
				}
				var idxMarkers, wantMarkers []int64
				for _, a := range idx {
					idxMarkers = append(idxMarkers, a.LastOffset)
				}
				for _, a := range abortedLeft {
					wantMarkers = append(wantMarkers, a.marker)
				}
				if !slices.Equal(idxMarkers, wantMarkers) {
					t.Fatalf("stage %d: transaction index lists markers %v, want %v", stage, idxMarkers, wantMarkers)
				}
				for _, d := range dropped {
					if slices.Contains(idxMarkers, d.LastOffset) {
						t.Fatalf("stage %d: dropped aborted transaction %+v still indexed", stage, d)
					}
				}
				if len(dropped)+len(idx) != len(slices.DeleteFunc(slices.Clone(m.txns), func(x mTxn) bool { return !x.aborted })) {
					t.Fatalf("stage %d: %d aborted transactions dropped and %d indexed, of %v", stage, len(dropped), len(idx), m.txns)
				}
			}
			from := clean(0)
			check(0)
			clock.advance(61 * time.Second)
			clean(from)
			clock.advance(61 * time.Second)
			clean(from)
			check(2)
			// Reopened after a crash, every segment recovered, the log reads the same.
			before := readAll(t, l)
			l.closeFiles()
			var err error
			l, _, err = Open(dir, cfg, OpenOptions{Now: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			if after := readAll(t, l); !slices.EqualFunc(before, after, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Fatal("log reads differently after reopening")
			}
		})
	}
}
