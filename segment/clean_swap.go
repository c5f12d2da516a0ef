package segment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The swap protocol (Kafka's, as in LogCleaner and UnifiedLog.replaceSegments), per
// cleaned group with base offset B replacing the sealed segments S1..Sk (S1 at B) that
// end where the next segment starts, at E:
//
//  1. B.log.cleaned is written and fsynced (Build). A crash leaves it; Open deletes it
//     and the old segments stand.
//  2. When S1..Sk have transaction indexes, B.txnindex.cleaned is written and fsynced:
//     their entries but those whose ABORT marker the pass removed (empty if none is
//     left). Before the commit point Open deletes it with the other .cleaned files.
//  3. B.swapend, holding E, is written and fsynced with its directory entry: the cleaned
//     segment may end before E, or be empty, when cleaning removed the group's last
//     batches, so its own batches cannot tell where the group ended.
//  4. B.log.cleaned is renamed B.log.swap and the directory fsynced: the commit point.
//  5. S1..Sk are deleted (.index, .timeindex, .txnindex but B's, then .log of each).
//  6. B.txnindex.cleaned is renamed over B.txnindex (an empty one removes both).
//  7. B.log.swap is renamed B.log and the directory fsynced; B.swapend is removed.
//  8. The new segment is opened and its indexes built from its batch headers.
//
// Open completes any swap it finds: for B.log.swap it deletes every segment with a base
// offset in [B, E), installs B.txnindex.cleaned if it is still there, and renames the
// swap to B.log, so a crash at any step leaves either the old segments (with their
// transaction indexes) or the new one, never both or neither. E is read from B.swapend;
// a swap without one (written by an older build, whose cleaned segments always ended
// with the group's last batch) ends after its last batch. A B.swapend without a swap is
// a leftover and is deleted.

// SwapEndFileSuffix names the file holding the end offset of a cleaned group being
// swapped in (step 2 above): "<base>.swapend".
const SwapEndFileSuffix = ".swapend"

// CommitClean swaps the built segments in. It returns ErrCleanAborted, dropping the
// cleaned files, when the log was truncated or lost segments since PrepareClean. An
// error after the commit point fails the log (ErrLogFailed): reopening completes the swap.
func (l *Log) CommitClean(p *CleanPlan) (CleanResult, error) {
	defer l.release()
	defer p.Abandon()
	if err := l.writable(); err != nil {
		return p.Result, err
	}
	if l.generation != p.generation {
		return p.Result, ErrCleanAborted
	}
	// Every group's segments must still be the ones read.
	for gi := len(p.groups) - 1; gi >= 0; gi-- {
		g := &p.groups[gi]
		i := l.indexOfSegment(p.segs[g.first].seg)
		if i < 0 || i+g.last-g.first >= len(l.segments)-1 {
			return p.Result, ErrCleanAborted
		}
		for k := g.first; k <= g.last; k++ {
			if s := l.segments[i+k-g.first]; s != p.segs[k].seg || s.size != p.segs[k].size {
				return p.Result, ErrCleanAborted
			}
		}
	}
	for gi := range p.groups {
		if err := l.swapGroup(p, &p.groups[gi]); err != nil {
			return p.Result, err
		}
	}
	for _, a := range p.aborted {
		if p.droppedMarkers[a.LastOffset] {
			p.Result.DroppedAbortedTxns = append(p.Result.DroppedAbortedTxns, a)
		}
	}
	p.Result.SegmentsAfter = len(l.segments)
	return p.Result, nil
}

func (l *Log) indexOfSegment(s *segment) int {
	for i, x := range l.segments {
		if x == s {
			return i
		}
	}
	return -1
}

// swapGroup runs steps 2–5 of the protocol for one group.
func (l *Log) swapGroup(p *CleanPlan, g *cleanGroup) error {
	step := func(name string, err error) error {
		if err != nil {
			return l.fail("clean "+name, err)
		}
		if p.hook != nil {
			return p.hook(name)
		}
		return nil
	}
	base := p.segs[g.first].base
	// The cleaned segment's transaction index: the entries of the group's indexes but
	// those whose ABORT marker the pass removed. It must change with the segment, never
	// before (rolled back, a removed entry would expose aborted records again): it is
	// written as B.txnindex.cleaned before the commit point and renamed over
	// B.txnindex after it (Open finishes the same for a swap it completes).
	var merged []AbortedTxn
	for k := g.first; k <= g.last; k++ {
		entries, err := readTxnIndex(l.dir, p.segs[k].base)
		if err != nil {
			return l.fail("clean read transaction index", err)
		}
		merged = append(merged, entries...)
	}
	hadIndex := len(merged) > 0
	merged = dedupeAborted(merged) // an older build's rolled-back swap left duplicates
	merged = slices.DeleteFunc(merged, func(a AbortedTxn) bool { return p.droppedMarkers[a.LastOffset] })
	cleanedIndex := segmentPath(l.dir, base, TxnIndexFileSuffix) + CleanedFileSuffix
	if hadIndex {
		if err := step("write transaction index", writeCleanedTxnIndex(cleanedIndex, merged)); err != nil {
			return err
		}
	}
	endPath := segmentPath(l.dir, base, SwapEndFileSuffix)
	if err := step("write swap end", writeSwapEnd(endPath, g.end)); err != nil {
		return err
	}
	if err := step("sync dir", syncDir(l.dir)); err != nil {
		return err
	}
	swap := segmentPath(l.dir, base, LogFileSuffix) + SwapFileSuffix
	if err := step("rename to .swap", os.Rename(g.path, swap)); err != nil {
		return err
	}
	g.built = false
	if err := step("sync dir", syncDir(l.dir)); err != nil {
		return err
	}
	i := l.indexOfSegment(p.segs[g.first].seg)
	old := l.segments[i : i+g.last-g.first+1]
	for _, s := range old {
		s.close()
		suffixes := []string{IndexFileSuffix, TimeIndexFileSuffix, LogFileSuffix}
		if s.baseOffset != base {
			suffixes = append(suffixes, TxnIndexFileSuffix) // merged into base's
		}
		for _, suffix := range suffixes {
			err := os.Remove(segmentPath(l.dir, s.baseOffset, suffix))
			if errors.Is(err, os.ErrNotExist) {
				err = nil
			}
			if err := step("delete "+segmentFileName(s.baseOffset, suffix), err); err != nil {
				l.segments = append(l.segments[:i], l.segments[i+len(old):]...)
				return err
			}
		}
	}
	rest := append([]*segment(nil), l.segments[i+len(old):]...)
	l.segments = l.segments[:i]
	if hadIndex {
		if err := step("install transaction index", installCleanedTxnIndex(l.dir, base)); err != nil {
			l.segments = append(l.segments, rest...)
			return err
		}
	}
	if err := step("rename .swap to .log", os.Rename(swap, segmentPath(l.dir, base, LogFileSuffix))); err != nil {
		l.segments = append(l.segments, rest...)
		return err
	}
	if err := step("sync dir", syncDir(l.dir)); err != nil {
		l.segments = append(l.segments, rest...)
		return err
	}
	if err := step("remove swap end", os.Remove(endPath)); err != nil {
		l.segments = append(l.segments, rest...)
		return err
	}
	s, err := openSegmentFiles(l.dir, base, l.cfg, false)
	if err != nil {
		l.segments = append(l.segments, rest...)
		return l.fail("clean open", err)
	}
	l.track(s)
	err = l.indexCleanedSegment(s)
	if err == nil {
		err = s.seal()
	}
	if err == nil {
		err = s.sync()
	}
	l.segments = append(append(l.segments, s), rest...)
	if err != nil {
		return l.fail("clean rebuild indexes", err)
	}
	return nil
}

// indexCleanedSegment builds a freshly swapped-in segment's indexes from its batch
// headers. The cleaner wrote and fsynced the file itself, so there is no CRC to check
// (Open, after a crash, recovers it fully instead); framing and order still are.
func (l *Log) indexCleanedSegment(s *segment) error {
	if err := s.use(); err != nil {
		return err
	}
	if err := s.offsetIndex.unseal(); err != nil {
		return err
	}
	if err := s.timeIndex.unseal(); err != nil {
		return err
	}
	fileSize := s.size
	s.size = 0
	var hb [BatchHeaderSize]byte
	for s.size < fileSize {
		pos := s.size
		h, err := s.readHeaderAtLimit(pos, fileSize, &hb)
		if err != nil {
			return err
		}
		if h.BaseOffset < s.nextOffset || h.LastOffset()-s.baseOffset > 1<<31-1 {
			return fmt.Errorf("%w: cleaned segment %d: batch at position %d has offsets %d..%d after %d", ErrInvalidBatch, s.baseOffset, pos, h.BaseOffset, h.LastOffset(), s.nextOffset)
		}
		s.indexBatch(h, pos, l.cfg.IndexIntervalBytes)
	}
	return nil
}

// readHeaderAtLimit is readHeaderAt for a segment whose size is still being counted.
func (s *segment) readHeaderAtLimit(pos, fileSize int64, buf *[BatchHeaderSize]byte) (BatchHeader, error) {
	size := s.size
	s.size = fileSize
	h, err := s.readHeaderAt(pos, buf)
	s.size = size
	return h, err
}

// completeSwaps finishes the swaps a crash interrupted (see the protocol above) before
// Open scans the segments. Index files of a swap are rebuilt, never trusted.
// ents is the directory's listing; completeSwaps changes the directory only when it holds
// a swap file.
func completeSwaps(dir string, ents []os.DirEntry, report *RecoveryReport) error {
	var logBases []int64
	for _, e := range ents {
		if base, suffix, ok := parseSegmentFileName(e.Name()); ok && suffix == LogFileSuffix {
			logBases = append(logBases, base)
		}
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, SwapFileSuffix) {
			continue
		}
		base, suffix, ok := parseSegmentFileName(strings.TrimSuffix(name, SwapFileSuffix))
		path := filepath.Join(dir, name)
		if !ok || suffix != LogFileSuffix {
			if err := os.Remove(path); err != nil { // an index swap: indexes are rebuilt
				return err
			}
			report.RemovedFiles = append(report.RemovedFiles, name)
			continue
		}
		endPath := segmentPath(dir, base, SwapEndFileSuffix)
		end, err := readSwapEnd(endPath, base)
		if errors.Is(err, os.ErrNotExist) {
			end, err = swapEndOffset(path)
		}
		if err != nil {
			return fmt.Errorf("swap file %s: %w", name, err)
		}
		// base's .txnindex is replaced by the cleaned one, if the swap wrote one.
		for _, b := range logBases {
			if b > base && b < end {
				if err := removeSegmentFiles(dir, b); err != nil {
					return err
				}
			}
			if b >= base && b < end {
				report.DeletedSegments = append(report.DeletedSegments, b)
			}
		}
		if err := removeFiles(dir, base, LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix); err != nil {
			return err
		}
		if err := installCleanedTxnIndex(dir, base); err != nil {
			return err
		}
		if err := os.Rename(path, segmentPath(dir, base, LogFileSuffix)); err != nil {
			return err
		}
		if err := syncDir(dir); err != nil {
			return err
		}
		if err := os.Remove(endPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		report.SwapsCompleted = append(report.SwapsCompleted, base)
	}
	return nil
}

// writeCleanedTxnIndex writes a cleaned group's transaction index to path (empty when
// no entry is left) and fsyncs it.
func writeCleanedTxnIndex(path string, entries []AbortedTxn) error {
	var buf []byte
	for _, a := range entries {
		buf = AppendTxnIndexEntry(buf, a)
	}
	return writeSynced(path, buf)
}

// writeSynced writes data to a new file at path (replacing any) and fsyncs it; the
// caller fsyncs the directory.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return syncAndClose(f)
}

// syncAndClose fsyncs and closes f, closing it on a failed fsync too.
func syncAndClose(f *os.File) error {
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// installCleanedTxnIndex renames base's cleaned transaction index, if there is one, over
// its .txnindex (an empty one removes both). The caller fsyncs the directory.
func installCleanedTxnIndex(dir string, base int64) error {
	path := segmentPath(dir, base, TxnIndexFileSuffix)
	cleaned := path + CleanedFileSuffix
	st, err := os.Stat(cleaned)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return os.Remove(cleaned)
	}
	return os.Rename(cleaned, path)
}

// writeSwapEnd writes a group's end offset to path and fsyncs it.
func writeSwapEnd(path string, end int64) error {
	return writeSynced(path, []byte(strconv.FormatInt(end, 10)+"\n"))
}

// readSwapEnd reads the end offset a swap's .swapend file holds; os.ErrNotExist when
// there is none.
func readSwapEnd(path string, base int64) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	end, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || end <= base {
		return 0, fmt.Errorf("%w: swap end file %s holds %q", ErrInvalidBatch, filepath.Base(path), b)
	}
	return end, nil
}

// swapEndOffset scans the batch headers of a swap file for the offset after its last
// batch. A swap was fsynced whole before it was renamed, so its framing is complete.
func swapEndOffset(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := int64(-1)
	var hb [BatchHeaderSize]byte
	for pos := int64(0); pos < st.Size(); {
		if _, err := f.ReadAt(hb[:], pos); err != nil {
			return 0, err
		}
		h, err := ParseBatchHeader(hb[:])
		if err != nil {
			return 0, err
		}
		end = h.NextOffset()
		pos += h.Size()
	}
	if end < 0 {
		return 0, fmt.Errorf("%w: empty swap file", ErrInvalidBatch)
	}
	return end, nil
}

// fileReader reads a file sequentially with ReadAt, leaving its offset alone.
type fileReader struct {
	f   *os.File
	pos int64
}

func (r *fileReader) Read(b []byte) (int, error) {
	n, err := r.f.ReadAt(b, r.pos)
	r.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func readFull(r io.Reader, b []byte) (int, error) { return io.ReadFull(r, b) }
