package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"
)

// withProducer sets b's producer fields (and the transactional bit when txn) and
// recomputes its CRC, as an idempotent or transactional producer sends the batch.
func withProducer(b []byte, producerID int64, epoch int16, sequence int32, txn bool) []byte {
	binary.BigEndian.PutUint64(b[offsetProducerID:], uint64(producerID))
	binary.BigEndian.PutUint16(b[offsetProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[offsetBaseSequence:], uint32(sequence))
	if txn {
		attrs := binary.BigEndian.Uint16(b[offsetAttributes:]) | attributeTransactional
		binary.BigEndian.PutUint16(b[offsetAttributes:], attrs)
	}
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
	return b
}

// TestLogAppendTime_LeaderStamps: with Config.LogAppendTime every leader append is
// stamped with the clock's time (the attribute bit, maxTimestamp, a valid CRC), records,
// baseTimestamp, codec and producer fields untouched; the time index, the segments' max
// timestamps and the lookups by time and max timestamp follow the append times, also
// after recovery rebuilt the indexes; a follower stores the stamped batches unchanged
// whatever its clock and config.
func TestLogAppendTime_LeaderStamps(t *testing.T) {
	for _, codec := range []int8{0, 1, 2, 3, 4} {
		t.Run(fmt.Sprintf("codec%d", codec), func(t *testing.T) {
			clock := &testClock{t: time.UnixMilli(1_700_000_000_000)}
			cfg := smallConfig()
			cfg.SegmentBytes = 4 << 10
			cfg.LogAppendTime = true
			opts := OpenOptions{Now: clock.now, Decompress: decompressForTest}
			l, dir := openTestLog(t, cfg, opts)
			const producerTs = 1_000_000 // the producer's CreateTime: long before any append
			var stored [][]byte
			var appendTimes, firstOffsets []int64
			for i := range 40 {
				b := makeBatch(t, batchSpec{records: 5, valueSize: 200, baseTimestamp: producerTs + int64(i), tsStep: 1, codec: codec, seed: byte(i)})
				if i%3 == 1 {
					b = withProducer(b, 7, 2, int32(i*5), i%2 == 0)
				}
				sent := bytes.Clone(b)
				info, err := l.AppendAsLeader(b, 3)
				if err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
				at := clock.t.UnixMilli()
				if info.LogAppendTime != at || info.MaxTimestamp != at {
					t.Fatalf("append %d: LogAppendTime %d, MaxTimestamp %d; expected %d", i, info.LogAppendTime, info.MaxTimestamp, at)
				}
				h, err := ValidateBatch(b)
				if err != nil {
					t.Fatalf("append %d: the stamped batch is invalid: %v", i, err)
				}
				sh, _ := ParseBatchHeader(sent)
				if !h.LogAppendTime() || h.MaxTimestamp != at || h.BaseTimestamp != sh.BaseTimestamp || h.Codec() != codec ||
					h.Transactional() != sh.Transactional() || h.ProducerID != sh.ProducerID || h.ProducerEpoch != sh.ProducerEpoch || h.BaseSequence != sh.BaseSequence {
					t.Fatalf("append %d: stamped header %+v from %+v", i, h, sh)
				}
				if !bytes.Equal(b[BatchHeaderSize:], sent[BatchHeaderSize:]) {
					t.Fatalf("append %d: the records changed", i)
				}
				stored = append(stored, b)
				appendTimes, firstOffsets = append(appendTimes, at), append(firstOffsets, info.FirstOffset)
				clock.advance(time.Duration(i%3) * time.Millisecond) // some batches share an append time
			}
			if len(l.Segments()) < 3 {
				t.Fatalf("%d segments: the test wants several", len(l.Segments()))
			}
			check := func(l *Log, when string) {
				t.Helper()
				if got := readAll(t, l); len(got) != len(stored) {
					t.Fatalf("%s: %d batches read, %d appended", when, len(got), len(stored))
				} else {
					for i := range got {
						if !bytes.Equal(got[i], stored[i]) {
							t.Fatalf("%s: batch %d differs from the stamped one", when, i)
						}
					}
				}
				for i, at := range appendTimes {
					if i > 0 && appendTimes[i-1] == at {
						continue
					}
					r, ok, err := l.OffsetForTimestamp(at)
					if err != nil || !ok || r.Offset != firstOffsets[i] || r.Timestamp != at {
						t.Errorf("%s: OffsetForTimestamp(%d) = %+v %v %v, expected offset %d", when, at, r, ok, err, firstOffsets[i])
					}
				}
				if r, ok, err := l.OffsetForTimestamp(producerTs); err != nil || !ok || r.Offset != 0 || r.Timestamp != appendTimes[0] {
					t.Errorf("%s: OffsetForTimestamp(the producer's time) = %+v %v %v, expected offset 0 at %d", when, r, ok, err, appendTimes[0])
				}
				if _, ok, err := l.OffsetForTimestamp(appendTimes[len(appendTimes)-1] + 1); err != nil || ok {
					t.Errorf("%s: OffsetForTimestamp past the last append: %v %v", when, ok, err)
				}
				last := len(appendTimes) - 1
				for last > 0 && appendTimes[last-1] == appendTimes[len(appendTimes)-1] {
					last--
				}
				if r, ok, err := l.MaxTimestampOffset(); err != nil || !ok || r.Offset != firstOffsets[last] || r.Timestamp != appendTimes[last] {
					t.Errorf("%s: MaxTimestampOffset = %+v %v %v, expected offset %d at %d", when, r, ok, err, firstOffsets[last], appendTimes[last])
				}
				for _, s := range l.Segments() {
					if s.MaxTimestamp < appendTimes[0] {
						t.Errorf("%s: segment %d's max timestamp %d is not an append time", when, s.BaseOffset, s.MaxTimestamp)
					}
				}
			}
			check(l, "live")
			clock.advance(time.Hour)
			l, _ = reopen(t, l, dir, cfg, opts) // recovery point 0: every index rebuilt
			check(l, "recovered")
			// The time indexes hold append times only, never a producer's timestamp.
			entries := 0
			for name, data := range dirFiles(t, dir) {
				if !strings.HasSuffix(name, ".timeindex") {
					continue
				}
				for e := data; len(e) >= 12; e = e[12:] {
					ts := int64(binary.BigEndian.Uint64(e))
					if ts == 0 && binary.BigEndian.Uint32(e[8:]) == 0 {
						continue // an unused preallocated slot
					}
					if !slices.Contains(appendTimes, ts) {
						t.Errorf("%s: time index entry %d is not an append time", name, ts)
					}
					entries++
				}
			}
			if entries == 0 {
				t.Error("no time index entry written")
			}

			// A follower, whatever its config and clock, stores the leader's batches as they are.
			createTime := cfg
			createTime.LogAppendTime = false
			for _, followerCfg := range []Config{createTime, cfg} {
				f, _ := openTestLog(t, followerCfg, OpenOptions{Now: clock.now, Decompress: decompressForTest})
				for i, b := range stored {
					if _, err := f.AppendAsFollower(bytes.Clone(b)); err != nil {
						t.Fatalf("follower append %d: %v", i, err)
					}
				}
				check(f, fmt.Sprintf("follower (LogAppendTime %v)", followerCfg.LogAppendTime))
			}
		})
	}
}

// TestLogAppendTime_CreateTimeUnchanged: without Config.LogAppendTime a leader append
// rewrites only baseOffset and partitionLeaderEpoch, and reports no append time.
func TestLogAppendTime_CreateTimeUnchanged(t *testing.T) {
	l, _ := openTestLog(t, smallConfig(), OpenOptions{})
	b := makeBatch(t, batchSpec{records: 3, valueSize: 10, baseTimestamp: 5000, tsStep: 2})
	sent := bytes.Clone(b)
	info, err := l.AppendAsLeader(b, 1)
	if err != nil {
		t.Fatal(err)
	}
	if info.LogAppendTime != -1 || info.MaxTimestamp != 5004 {
		t.Fatalf("LogAppendTime %d, MaxTimestamp %d", info.LogAppendTime, info.MaxTimestamp)
	}
	if !bytes.Equal(b[offsetMagic:], sent[offsetMagic:]) {
		t.Fatal("the CRC-covered bytes changed")
	}
}

// BenchmarkAppendLogAppendTime compares a leader append of 16 KiB batches with and
// without message.timestamp.type=LogAppendTime (the stamp recomputes the batch's CRC),
// and the stamp alone.
//
//	go test -run XXX -bench AppendLogAppendTime -benchtime 20000x -count 5 ./segment/
func BenchmarkAppendLogAppendTime(b *testing.B) {
	b.Run("stamp-only", func(b *testing.B) {
		batch := makeBatch(b, batchSpec{records: 16, valueSize: 1000, baseTimestamp: 1})
		b.SetBytes(int64(len(batch)))
		for b.Loop() {
			stampLogAppendTime(batch, 2)
		}
	})
	for _, lat := range []bool{false, true} {
		b.Run(fmt.Sprintf("LogAppendTime=%v", lat), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.LogAppendTime = lat
			l, _ := openTestLog(b, cfg, OpenOptions{})
			batch := makeBatch(b, batchSpec{records: 16, valueSize: 1000, baseTimestamp: 1})
			buf := make([]byte, len(batch))
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for range b.N {
				copy(buf, batch)
				if _, err := l.AppendAsLeader(buf, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
