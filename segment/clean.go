package segment

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
)

// ErrCleanAborted is returned by CommitClean when the log was truncated or lost segments
// since PrepareClean: the cleaned files are dropped and the next pass starts afresh.
var ErrCleanAborted = errors.New("segment: cleaning abandoned, the log changed underneath it")

// CleanOptions are the inputs of one cleaning pass (Kafka's LogCleaner), decided by the
// owner from the topic's configuration and the cleaner checkpoint.
type CleanOptions struct {
	// FirstDirtyOffset is where the dirty section starts: the offset the previous pass
	// cleaned up to (cleaner-offset-checkpoint), or the log start offset.
	FirstDirtyOffset int64
	// UncleanableOffset bounds the pass: nothing at or above it is read into the offset
	// map or changed (the last stable offset — at most the high watermark —,
	// min.compaction.lag.ms). The active segment is never cleaned whatever this says.
	UncleanableOffset int64
	// MaxMapBytes is log.cleaner.dedupe.buffer.size: the offset map holds
	// MaxMapBytes/24*0.9 keys; a dirty section with more is cleaned over several passes.
	MaxMapBytes int64
	// DeleteRetentionMs is delete.retention.ms: how long a tombstone stays after the pass
	// that first cleaned its batch.
	DeleteRetentionMs int64
	// Decompress and Compress let the cleaner rewrite compressed batches with their own
	// codec; without both, compressed batches are kept whole.
	Decompress Decompressor
	Compress   Compressor
	// Throttle, when set, is called with the bytes read or written so far in this call
	// and may sleep (log.cleaner.io.max.bytes.per.second).
	Throttle func(bytes int64)
	// Cancelled, when set, is checked between batches: true stops Build with
	// ErrCleanAborted (the owner is shutting down).
	Cancelled func() bool
	// Producers are the partition's active producers (Kafka's producer state, expired
	// producers left out): each one's last data batch (or, without one, its last marker)
	// survives cleaning, empty if nothing of it stays. Nil derives them from the batches
	// of the segments cleaned.
	Producers map[int64]ProducerLastRecord
	// AbortedTxns are the partition's aborted transactions: their data is discarded and
	// their markers kept until no batch of theirs is left. Nil reads them from the
	// transaction indexes.
	AbortedTxns []AbortedTxn
}

// CleanResult says what a pass did.
type CleanResult struct {
	// CleanedUpTo is the new first dirty offset, for cleaner-offset-checkpoint.
	CleanedUpTo int64
	// DirtyBytes is the size of the dirty section mapped.
	DirtyBytes        int64
	BytesRead         int64
	BytesWritten      int64
	RecordsRemoved    int64
	TombstonesRemoved int64
	SegmentsBefore    int
	SegmentsAfter     int
	// DroppedAbortedTxns are the aborted transactions whose ABORT marker the pass
	// removed: they left the transaction index, and the owner must forget them too (a
	// fetch must not list an aborted transaction whose marker is gone).
	DroppedAbortedTxns []AbortedTxn
}

// CleanPlan is one cleaning pass in three steps: PrepareClean (under the owner's lock)
// takes a snapshot of the sealed segments to clean, with its own read handles, Build (without any lock: it reads only
// sealed segments, through its own file handles) maps the dirty section and writes
// the cleaned segments as .cleaned files, and CommitClean (under the lock again) swaps
// them in, crash-safely, unless the log was truncated meanwhile.
type CleanPlan struct {
	log        *Log
	opts       CleanOptions
	generation uint64
	nowMs      int64

	segs      []cleanSource // sealed segments from the first, below UncleanableOffset
	after     int64         // base offset of the segment after the last one in segs
	endOffset int64         // everything below is in the offset map
	offsets   *offsetMap
	groups    []cleanGroup

	producers map[int64]ProducerLastRecord // active producers (CleanOptions.Producers)
	aborted   []AbortedTxn                 // the partition's aborted transactions
	// droppedMarkers holds the offsets of the ABORT markers the pass removes (or
	// empties): their transaction index entries go with them.
	droppedMarkers map[int64]bool

	// scratch
	recs    []record
	kept    []int
	section []byte

	// hook, when set (tests), runs after each file operation of the swap; an error
	// stops the swap there, as a crash would.
	hook func(step string) error

	// Result is filled in by Build and CommitClean.
	Result CleanResult
}

type cleanSource struct {
	base, next, size int64
	seg              *segment
	file             *os.File
}

type cleanGroup struct {
	first, last int   // indexes into segs
	end         int64 // base offset of the segment after the group
	path        string
	built       bool
}

// PrepareClean starts a cleaning pass; it only opens files. It returns nil when nothing is cleanable: no
// sealed segment starts below UncleanableOffset. An empty dirty section still makes a
// pass (it removes tombstones whose delete horizon has passed); the owner decides by the
// dirty ratio whether a pass is worth it.
func (l *Log) PrepareClean(opts CleanOptions) (*CleanPlan, error) {
	defer l.release()
	if err := l.writable(); err != nil {
		return nil, err
	}
	limit := min(opts.UncleanableOffset, l.active().baseOffset)
	first := min(max(opts.FirstDirtyOffset, l.localLogStartOffset), limit)
	if len(l.segments) < 2 || l.segments[0].baseOffset >= limit {
		return nil, nil
	}
	opts.UncleanableOffset = limit
	opts.FirstDirtyOffset = first
	p := &CleanPlan{log: l, opts: opts, generation: l.generation, nowMs: l.now().UnixMilli(),
		producers: opts.Producers, aborted: opts.AbortedTxns, droppedMarkers: map[int64]bool{}}
	if p.aborted == nil {
		aborted, err := l.AbortedTxns()
		if err != nil {
			return nil, err
		}
		p.aborted = aborted
	}
	for i, s := range l.segments[:len(l.segments)-1] {
		if s.baseOffset >= limit {
			break
		}
		f, err := os.Open(segmentPath(l.dir, s.baseOffset, LogFileSuffix))
		if err == nil {
			err = s.checkDescribedSize(f) // read here without the Log's first open
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			p.Abandon()
			return nil, describedFileMissing(s.describedBy, err)
		}
		p.segs = append(p.segs, cleanSource{s.baseOffset, s.nextOffset, s.size, s, f})
		p.after = l.segments[i+1].baseOffset
	}
	p.Result.SegmentsBefore = len(l.segments)
	return p, nil
}

// Stale reports whether the log was truncated or lost segments since PrepareClean (a
// Build error is then expected, not a reason to mark the log uncleanable). Call it
// under the owner's lock.
func (p *CleanPlan) Stale() bool { return p.log.generation != p.generation || p.log.closed }

// Abandon drops the plan's files. It is safe to call after CommitClean.
func (p *CleanPlan) Abandon() {
	for _, s := range p.segs {
		s.file.Close()
	}
	p.segs = nil
	for _, g := range p.groups {
		if g.built {
			os.Remove(g.path)
		}
	}
	p.groups = nil
}

// throttle accounts n more bytes of I/O.
func (p *CleanPlan) throttle(n int64) {
	if p.opts.Throttle != nil {
		p.opts.Throttle(n)
	}
}

// errAt places err at a position of a segment being cleaned.
func errAt(src cleanSource, pos int64, err error) error {
	return fmt.Errorf("segment %d at position %d: %w", src.base, pos, err)
}

// forEachHeader reads the batch headers of every segment of the plan, in order, with
// the plan's own files, until fn returns false.
func (p *CleanPlan) forEachHeader(fn func(h BatchHeader) bool) error {
	var hb [BatchHeaderSize]byte
	for _, src := range p.segs {
		for pos := int64(0); pos < src.size; {
			if _, err := src.file.ReadAt(hb[:], pos); err != nil {
				return errAt(src, pos, err)
			}
			h, err := ParseBatchHeader(hb[:])
			if err != nil {
				return errAt(src, pos, err)
			}
			if !fn(h) {
				return nil
			}
			pos += h.Size()
		}
	}
	return nil
}

// forEachBatch reads the whole batches of src from position 0, calling fn with each
// until fn returns false.
func (p *CleanPlan) forEachBatch(src cleanSource, fn func(b []byte, h BatchHeader) (bool, error)) error {
	r := bufio.NewReaderSize(&fileReader{f: src.file}, 256<<10)
	var buf []byte
	for pos := int64(0); pos < src.size; {
		var hb [BatchHeaderSize]byte
		if _, err := readFull(r, hb[:]); err != nil {
			return errAt(src, pos, err)
		}
		h, err := ParseBatchHeader(hb[:])
		if err != nil {
			return errAt(src, pos, err)
		}
		if pos+h.Size() > src.size {
			return fmt.Errorf("%w: segment %d: batch at position %d runs past its end", ErrInvalidBatch, src.base, pos)
		}
		if int64(cap(buf)) < h.Size() {
			buf = make([]byte, h.Size())
		}
		b := buf[:h.Size()]
		copy(b, hb[:])
		if _, err := readFull(r, b[BatchHeaderSize:]); err != nil {
			return errAt(src, pos, err)
		}
		if h.Control() {
			h.ControlType, h.ControlCoordinatorEpoch = controlRecord(b[BatchHeaderSize:])
		}
		p.Result.BytesRead += h.Size()
		p.throttle(h.Size())
		if p.opts.Cancelled != nil && p.opts.Cancelled() {
			return ErrCleanAborted
		}
		more, err := fn(b, h)
		if err != nil || !more {
			return err
		}
		pos += h.Size()
	}
	return nil
}

// Build maps the dirty section and writes the cleaned segments. It touches no state
// of the Log and may run without the owner's lock.
func (p *CleanPlan) Build() error {
	if p.producers == nil {
		producers, err := p.deriveProducers()
		if err != nil {
			return err
		}
		p.producers = producers
	}
	if err := p.buildOffsetMap(); err != nil {
		return err
	}
	p.planGroups()
	// One walker reads every group in offset order from the log start: a marker's
	// transaction may have batches in an earlier group.
	var walker *txnWalker
	if len(p.segs) > 0 {
		walker = newTxnWalker(p.aborted, p.segs[0].base)
	}
	for gi := range p.groups {
		if err := p.buildGroup(&p.groups[gi], walker); err != nil {
			return err
		}
	}
	return nil
}

// buildOffsetMap reads the dirty section batch by batch into the offset map, stopping
// at the uncleanable offset or before the batch that would overfill the map.
func (p *CleanPlan) buildOffsetMap() error {
	p.offsets = newOffsetMap(p.opts.MaxMapBytes)
	p.endOffset = p.opts.FirstDirtyOffset
	walker := newTxnWalker(p.aborted, p.opts.FirstDirtyOffset)
	stopped := false
	for _, src := range p.segs {
		if stopped {
			break
		}
		if src.next <= p.opts.FirstDirtyOffset {
			continue
		}
		err := p.forEachBatch(src, func(b []byte, h BatchHeader) (bool, error) {
			if h.LastOffset() < p.opts.FirstDirtyOffset {
				return true, nil
			}
			if h.LastOffset() >= p.opts.UncleanableOffset || len(p.offsets.m)+int(h.RecordCount) > p.offsets.max && len(p.offsets.m) > 0 {
				stopped = true
				return false, nil
			}
			p.Result.DirtyBytes += h.Size()
			// Records of aborted transactions never enter the map (they must not
			// supersede anything); committed transactional records do, as Kafka's. No
			// transaction is open below the uncleanable offset. Control batches hold no
			// keys.
			aborted := false
			if h.Control() {
				walker.controlBatch(h, h.ControlType)
			} else {
				aborted = walker.dataBatch(h)
			}
			if !h.Control() && !aborted {
				raw, ok, err := p.recordsSection(b, h)
				if err != nil {
					return false, err
				}
				if ok {
					recs, err := parseRecords(raw, h.RecordCount, p.recs)
					p.recs = recs
					if err != nil {
						return false, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
					}
					for _, r := range recs {
						if r.key != nil {
							p.offsets.put(r.key, h.BaseOffset+int64(r.offsetDelta))
						}
					}
				}
			}
			p.endOffset = h.NextOffset()
			return true, nil
		})
		if err != nil {
			return err
		}
		if !stopped && src.next > p.endOffset {
			p.endOffset = src.next // a gap at the segment's end
		}
	}
	p.endOffset = min(p.endOffset, p.opts.UncleanableOffset)
	p.Result.CleanedUpTo = p.endOffset
	return nil
}

// planGroups groups the segments below the end of the mapped section so that each
// cleaned segment stays under segment.bytes and its offsets fit 32 bits relative to its
// base (Kafka's groupSegmentsBySize).
func (p *CleanPlan) planGroups() {
	n := 0
	for n < len(p.segs) && p.segs[n].base < p.endOffset {
		n++
	}
	for i := 0; i < n; {
		size := p.segs[i].size
		j := i
		for j+1 < n && size+p.segs[j+1].size <= p.log.cfg.SegmentBytes && p.segs[j+1].next-1-p.segs[i].base <= math.MaxInt32 {
			j++
			size += p.segs[j].size
		}
		end := p.after
		if j+1 < len(p.segs) {
			end = p.segs[j+1].base
		}
		p.groups = append(p.groups, cleanGroup{first: i, last: j, end: end,
			path: segmentPath(p.log.dir, p.segs[i].base, LogFileSuffix) + CleanedFileSuffix})
		i = j + 1
	}
}

// buildGroup writes one group's cleaned segment to <base>.log.cleaned and fsyncs it.
// The cleaned segment may end before the group did, or hold nothing at all, when its
// last batches are removed: the swap records where the group ends (swapGroup).
func (p *CleanPlan) buildGroup(g *cleanGroup, walker *txnWalker) error {
	f, err := os.OpenFile(g.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	g.built = true
	w := bufio.NewWriterSize(f, 256<<10)
	var out []byte
	for i := g.first; i <= g.last; i++ {
		err := p.forEachBatch(p.segs[i], func(b []byte, h BatchHeader) (bool, error) {
			out = out[:0]
			var err error
			out, err = p.filterBatch(out, b, h, walker)
			if err != nil {
				return false, err
			}
			if _, err := w.Write(out); err != nil {
				return false, err
			}
			p.Result.BytesWritten += int64(len(out))
			p.throttle(int64(len(out)))
			return true, nil
		})
		if err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return syncAndClose(f)
}
