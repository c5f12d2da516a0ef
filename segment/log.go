package segment

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"
)

// Decompressor decompresses a batch's records section for codec (1 gzip, 2 snappy, 3 lz4,
// 4 zstd). The broker supplies one; this package imports no codecs.
type Decompressor func(codec int8, compressed []byte) ([]byte, error)

// OpenOptions are the inputs of Open that come from the log directory's state rather than
// from topic configuration.
type OpenOptions struct {
	// RecoveryPoint is the offset below which data was flushed (from
	// recovery-point-offset-checkpoint). Segments wholly below it are trusted after a size
	// check; the rest are recovered. 0 recovers everything.
	RecoveryPoint int64
	// LogStartOffset is the checkpointed log start offset (log-start-offset-checkpoint).
	LogStartOffset int64
	// CleanShutdown trusts every segment: the log was closed cleanly.
	CleanShutdown bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Decompress lets time lookups find the exact record in compressed batches. Without it
	// a lookup in a compressed batch answers the batch's base offset.
	Decompress Decompressor
	// Files bounds the open segment files across the logs sharing it; nil keeps every
	// segment's files open while the log is open.
	Files *FileCache
	// DirAbsent says the caller has just found dir absent (a new replica): Open does not
	// list it. Open never makes a missing directory; the log makes it when it first
	// writes a file there (makeDir), so a bulk creation of replicas saves a failed
	// listing per replica besides the directory.
	DirAbsent bool
	// ShutdownState, with CleanShutdown, is the description the log's last clean close
	// gave (Log.ShutdownState): Open then builds the log from it without reading the
	// directory, when it fits RecoveryPoint and LogStartOffset (shutdown_state.go).
	ShutdownState *ShutdownState
}

// AppendInfo describes a completed append.
type AppendInfo struct {
	FirstOffset          int64 // offset of the first record appended
	LastOffset           int64 // offset of the last record appended
	MaxTimestamp         int64 // largest batch maxTimestamp; -1 if none
	OffsetOfMaxTimestamp int64 // last offset of the batch holding MaxTimestamp
	SegmentBaseOffset    int64 // base offset of the segment written to
	Position             int64 // byte position of the first batch in that segment
	Batches              int
	Records              int64
	Bytes                int64
	// LogAppendTime is the append time (ms) a leader append stamped on the batches
	// (Config.LogAppendTime), -1 when it stamped none: Produce answers it.
	LogAppendTime int64
}

// Log is one partition's log: ordered segments, the last one active.
//
// A Log is not safe for concurrent use: its owner (the partition) holds a lock around
// every call. Byte ranges returned by Read stay valid until the next call that truncates
// or deletes segments.
type Log struct {
	dir      string
	cfg      Config
	segments []*segment // ordered by base offset; the last is active
	epochs   *LeaderEpochCache

	// localLogStartOffset is the first offset readable from this log's segments
	// (Kafka's localLogStartOffset): at or above the first segment's base offset.
	localLogStartOffset int64
	// logStartOffset is the partition's log start offset over both tiers (Kafka's
	// logStartOffset): the same as localLogStartOffset unless remote storage is enabled,
	// then at or below it, the part between being in remote storage (tiered.go).
	logStartOffset int64
	// highestCopiedOffset is the highest offset confirmed copied to remote storage, -1
	// when none (SetRemoteLogState); local segments above it are never deleted while
	// remote storage is enabled.
	highestCopiedOffset int64
	recoveryPoint       int64 // offsets below are fsynced
	unflushedMessages   int64
	lastFlush           time.Time

	now        func() time.Time
	decompress Decompressor
	failure    error // sticky: set by the first failed write, returned by every later write
	closed     bool
	// due is set while MaybeFlush has something to do (records unflushed under a finite
	// flush.ms) or the log has failed: read without the owner's lock (MaintenanceDue),
	// so that a periodic pass over every replica visits these only.
	due atomic.Bool

	// generation counts truncations and segment deletions: a CleanPlan prepared under an
	// older generation is abandoned at commit.
	generation uint64

	files *FileCache // nil: every segment stays open
	held  []*segment // segments pinned for the current call (released when it returns)

	// openNames are the non-segment file names Open listed, until TakeOpenListing.
	openNames    []string
	openNamesSet bool
	// openOwnerData is the owner's data kept with the description the log was opened
	// from, until TakeOpenOwnerData (shutdown_state.go).
	openOwnerData []byte
	// txnIndexAbsent is set when Open listed no .txnindex file (or the description it
	// opened from says so), until AppendAbortedTxns or RewriteAbortedTxnsFrom may create
	// one, the only writes that do (compaction and truncation rewrite existing ones):
	// AbortedTxns and RewriteAbortedTxnsFrom then have no file to read.
	txnIndexAbsent bool

	rollObserver RollObserver // told of every roll (dir_files.go)
	birthFile    *DirFile     // written at the first segment's birth (dir_files.go)
	// dirAbsent is set while the partition directory does not exist: Open found none,
	// and nothing has been written since (makeDir, dir_files.go).
	dirAbsent bool

	// hideEmptyBatches makes ReadForConsumer skip empty batches without a producer id
	// (legacy_empty.go), until the owner has checked or repaired the log.
	hideEmptyBatches bool
}

// Failure returns the sticky failure (ErrLogFailed after a failed write, ErrLogDamaged
// for files changed while the broker was stopped), or nil.
func (l *Log) Failure() error { return l.failure }

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// Config returns the log's configuration.
func (l *Log) Config() Config { return l.cfg }

// SetConfig replaces the configuration; it applies to later appends, rolls and retention.
func (l *Log) SetConfig(cfg Config) {
	l.cfg = cfg
	if !cfg.RemoteStorageEnable {
		// Without remote storage the log starts where the local segments do.
		l.logStartOffset = l.localLogStartOffset
	}
	l.noteDue()
}

// MaintenanceDue reports, without the owner's lock, whether MaybeFlush may have
// something to do or the log has failed (Failure). When it is false, neither is the
// case as of the last call that changed the log, so a periodic pass skips the log.
func (l *Log) MaintenanceDue() bool { return l.due.Load() }

// noteDue updates MaintenanceDue after a change of the unflushed records, flush.ms or
// the failure.
func (l *Log) noteDue() {
	l.due.Store(l.failure != nil || l.unflushedMessages > 0 && l.cfg.FlushMs != math.MaxInt64)
}

// LogStartOffset is the first offset still retained in either tier (Kafka's
// logStartOffset): the local log start offset unless remote storage is enabled.
func (l *Log) LogStartOffset() int64 { return l.logStartOffset }

// LocalLogStartOffset is the first offset readable from the local segments (Kafka's
// localLogStartOffset); reads below it are out of range here.
func (l *Log) LocalLogStartOffset() int64 { return l.localLogStartOffset }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.active().nextOffset }

// RecoveryPoint is the offset below which everything was fsynced.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint }

// LeaderEpochs is the log's leader epoch cache. Appends and truncations keep it current.
func (l *Log) LeaderEpochs() *LeaderEpochCache { return l.epochs }

// Size is the total size of the .log files in bytes.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	BaseOffset   int64
	NextOffset   int64
	Size         int64
	MaxTimestamp int64
}

// Segments describes the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	out := make([]SegmentInfo, len(l.segments))
	for i, s := range l.segments {
		out[i] = SegmentInfo{s.baseOffset, s.nextOffset, s.size, s.maxTimestamp}
	}
	return out
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// AppendAsLeader validates one or more v2 batches in records, assigns them offsets from
// the log end offset by rewriting each baseOffset in place, stamps leaderEpoch as their
// partitionLeaderEpoch, and appends them. Both rewritten fields are outside the CRC.
// With Config.LogAppendTime each batch is also stamped with the append time (attributes
// and maxTimestamp, in place, its CRC recomputed), so the indexes and every reader see
// the append time.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.appendAsLeader(records, leaderEpoch, false)
}

// AppendValidatedAsLeader is AppendAsLeader for records whose every batch the caller
// has just checked with ValidateBatch (the produce handler): the batches' structure is
// checked again, their CRC-32C is not.
func (l *Log) AppendValidatedAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.appendAsLeader(records, leaderEpoch, true)
}

func (l *Log) appendAsLeader(records []byte, leaderEpoch int32, crcChecked bool) (AppendInfo, error) {
	defer l.release()
	if err := l.writable(); err != nil {
		return AppendInfo{}, err
	}
	if int64(len(records)) > l.cfg.SegmentBytes {
		return AppendInfo{}, fmt.Errorf("%w: %d bytes, segment.bytes is %d", ErrRecordSetTooLarge, len(records), l.cfg.SegmentBytes)
	}
	set, err := validateBatches(records, false, false, crcChecked)
	if err != nil {
		return AppendInfo{}, err
	}
	appendTime := int64(-1)
	if l.cfg.LogAppendTime {
		appendTime = l.now().UnixMilli()
		set.maxTimestamp = appendTime
	}
	next := l.LogEndOffset()
	for pos := 0; pos < len(records); {
		h, _ := ParseBatchHeader(records[pos:])
		stampBatch(records[pos:], next, leaderEpoch)
		if appendTime >= 0 {
			stampLogAppendTime(records[pos:pos+int(h.Size())], appendTime)
		}
		next += int64(h.LastOffsetDelta) + 1
		pos += int(h.Size())
	}
	set.firstBase, set.lastOffset = l.LogEndOffset(), next-1
	info, err := l.append(records, set)
	info.LogAppendTime = appendTime
	return info, err
}

// AppendAsFollower appends batches copied from the leader unchanged. They must be valid
// and contiguous, and start at the log end offset; in a compacted log (Config.Compacted)
// they need only be in offset order and start at or after it, since the leader's log has
// gaps where whole batches were cleaned away.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	defer l.release()
	if err := l.writable(); err != nil {
		return AppendInfo{}, err
	}
	set, err := validateBatches(records, true, l.cfg.Compacted, false)
	if err != nil {
		return AppendInfo{}, err
	}
	if set.firstBase < l.LogEndOffset() || !l.cfg.Compacted && set.firstBase != l.LogEndOffset() {
		return AppendInfo{}, fmt.Errorf("%w: follower append starts at offset %d, log end offset is %d", ErrInvalidBatch, set.firstBase, l.LogEndOffset())
	}
	return l.append(records, set)
}

func (l *Log) writable() error {
	l.openNames, l.openNamesSet = nil, false // the directory may change: TakeOpenListing
	l.openOwnerData = nil                    // describes the log as it was opened
	if l.closed {
		return ErrClosed
	}
	return l.failure
}

// fail records err as the log's sticky failure and returns it.
// MarkFailed makes err (of operation op, e.g. an fsync the owner ran outside the Log)
// the log's sticky failure, as a failed write does: every later append or flush
// returns it, and Failure reports it.
func (l *Log) MarkFailed(op string, err error) error { return l.fail(op, err) }

// setFailure makes err, which wraps ErrLogFailed (fail) or ErrLogDamaged, the log's
// sticky failure unless it has one, and returns the failure.
func (l *Log) setFailure(err error) error {
	if l.failure == nil {
		l.failure = err
		l.due.Store(true)
	}
	return l.failure
}

func (l *Log) fail(op string, err error) error {
	if l.failure != nil || errors.Is(err, ErrLogDamaged) { // damage is not a failed write: the directory is sound
		return l.setFailure(err)
	}
	return l.setFailure(fmt.Errorf("%w: %s in %s: %w", ErrLogFailed, op, l.dir, err))
}

// append writes validated, offset-stamped batches to the active segment, rolling first
// when needed, then updates the leader epoch cache and applies the flush policy.
func (l *Log) append(records []byte, set batchSet) (AppendInfo, error) {
	// A log without its directory makes it here, for the files below: the first
	// segment's birth, which follows (an empty segment never rolls), fsyncs the
	// partition directory and its name in the log directory before the first record is
	// written, so the checkpoint written before it needs no directory fsync of its own.
	if _, err := l.makeDir(); err != nil {
		return AppendInfo{}, l.fail("partition directory", err)
	}
	birthFollows := l.active().unborn
	if err := l.epochs.flushIfUnflushed(birthFollows); err != nil {
		return AppendInfo{}, l.fail("leader epoch checkpoint", err)
	}
	// The epochs the batches start, before they are written (Kafka's order): a
	// follower's first write then shares the birth's directory fsync too. The same
	// walk finds the offset of the largest timestamp.
	offsetOfMaxTimestamp := int64(-1)
	for pos := 0; pos < len(records); {
		h, _ := ParseBatchHeader(records[pos:])
		if h.PartitionLeaderEpoch > l.epochs.LatestEpoch() {
			if err := l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset, !birthFollows); err != nil {
				return AppendInfo{}, l.fail("leader epoch checkpoint", err)
			}
		}
		if h.MaxTimestamp == set.maxTimestamp && offsetOfMaxTimestamp < 0 {
			offsetOfMaxTimestamp = h.LastOffset()
		}
		pos += int(h.Size())
	}
	if err := l.writeBirthFile(); err != nil { // before the first record (dir_files.go)
		return AppendInfo{}, l.fail("partition metadata file", err)
	}
	now := l.now()
	if l.active().shouldRoll(l.cfg, int64(len(records)), set.count, set.lastOffset, set.maxTimestamp, now) {
		if err := l.roll(set.firstBase, now); err != nil {
			return AppendInfo{}, err
		}
	}
	s := l.active()
	info := AppendInfo{
		LogAppendTime:     -1,
		FirstOffset:       set.firstBase,
		LastOffset:        set.lastOffset,
		SegmentBaseOffset: s.baseOffset,
		Position:          s.size,
		Batches:           set.count,
		Records:           set.records,
		Bytes:             int64(len(records)),
	}
	if err := s.appendBatches(records, l.cfg.IndexIntervalBytes); err != nil {
		return AppendInfo{}, l.fail("append", err)
	}
	info.MaxTimestamp, info.OffsetOfMaxTimestamp = set.maxTimestamp, offsetOfMaxTimestamp
	l.unflushedMessages += set.records
	if l.unflushedMessages >= l.cfg.FlushMessages || now.Sub(l.lastFlush).Milliseconds() >= l.cfg.FlushMs {
		if err := l.Flush(); err != nil {
			return info, err
		}
	}
	l.noteDue()
	return info, nil
}

// Roll seals the active segment and starts a new one at the log end offset, unless the
// active segment is empty.
func (l *Log) Roll() error {
	defer l.release()
	if err := l.writable(); err != nil {
		return err
	}
	if l.active().size == 0 {
		return nil
	}
	return l.roll(l.LogEndOffset(), l.now())
}

// roll fsyncs and seals the active segment and creates a new one at baseOffset.
func (l *Log) roll(baseOffset int64, now time.Time) error {
	old := l.active()
	if err := old.seal(); err != nil {
		return l.fail("roll", err)
	}
	if err := old.sync(); err != nil {
		return l.fail("roll", err)
	}
	if l.rollObserver != nil {
		// Its files are durable by createSegment's directory fsync.
		if err := l.rollObserver.BeforeRoll(baseOffset); err != nil {
			return l.fail("roll", err)
		}
	}
	s, err := createSegment(l.dir, baseOffset, l.cfg, now)
	if err != nil {
		return l.fail("roll", err)
	}
	l.track(s)
	old.txnCreated = false // its name is durable by createSegment's directory fsync
	l.segments = append(l.segments, s)
	l.recoveryPoint = max(l.recoveryPoint, old.nextOffset)
	return nil
}

// Flush fsyncs every segment at or above the recovery point and advances the recovery
// point to the log end offset.
func (l *Log) Flush() error {
	defer l.release()
	if err := l.writable(); err != nil {
		return err
	}
	if l.recoveryPoint >= l.LogEndOffset() && l.unflushedMessages == 0 && l.active().synced() {
		l.lastFlush = l.now() // everything is fsynced already (recovery point = log end)
		return nil
	}
	for i := l.segmentIndexFor(l.recoveryPoint); i < len(l.segments); i++ {
		if err := l.segments[i].sync(); err != nil {
			return l.fail("flush", err)
		}
	}
	l.recoveryPoint = l.LogEndOffset()
	l.unflushedMessages = 0
	l.lastFlush = l.now()
	return nil
}

// MaybeFlush flushes when flush.ms has passed since the last flush. Owners with a timer
// call it so that flush.ms holds on an idle log too.
func (l *Log) MaybeFlush() error {
	defer l.release()
	defer l.noteDue()
	if l.unflushedMessages > 0 && l.now().Sub(l.lastFlush).Milliseconds() >= l.cfg.FlushMs {
		return l.Flush()
	}
	return nil
}

// segmentIndexFor returns the index of the segment that holds offset: the last segment
// whose base offset is at most offset (0 when offset is below every segment).
func (l *Log) segmentIndexFor(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > offset })
	return max(i-1, 0)
}

// Close flushes, trims the active segment's indexes and closes every file.
func (l *Log) Close() error {
	defer l.release()
	if l.closed {
		return nil
	}
	var err error
	if l.failure == nil {
		err = l.Flush()
	}
	if e := l.closeFiles(); err == nil {
		err = e
	}
	return err
}

func (l *Log) closeFiles() error {
	var err error
	for _, s := range l.segments {
		if e := s.close(); err == nil {
			err = e
		}
	}
	l.closed = true
	return err
}

// MarkForDeletion closes the log without flushing and renames its directory to
// "<dir>.<uniq>-delete", Kafka's name for a partition awaiting asynchronous deletion. It
// returns the new path, which the owner removes later, or "" when the log never made its
// directory.
func (l *Log) MarkForDeletion(uniq string) (string, error) {
	defer l.release()
	if !l.closed {
		l.closeFiles()
	}
	if l.dirAbsent && l.Unborn() {
		return "", nil // no directory was ever made (makeDir): nothing to delete
	}
	to := l.dir + "." + uniq + DeleteDirSuffix
	if err := os.Rename(l.dir, to); err != nil {
		return "", err
	}
	return to, syncDir(filepath.Dir(l.dir))
}

// Delete closes the log without flushing and removes its directory.
func (l *Log) Delete() error {
	defer l.release()
	if !l.closed {
		l.closeFiles()
	}
	return os.RemoveAll(l.dir)
}
