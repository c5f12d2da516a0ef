package replication

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/segment"
)

// Role is a replica's role.
type Role int

// Roles.
const (
	Follower Role = iota
	Leader
	Stopped
)

// Options configure a Partition.
type Options struct {
	BrokerID int32
	// TopicID is the id of the topic the replica belongs to (zero: unknown). A follower
	// fetches the replica under it (Fetch v13+, fetcher_topic_ids.go).
	TopicID [16]byte
	// SyncEveryAppend fsyncs each append before it counts toward the high watermark
	// (flush.messages=1). Concurrent appends share fsyncs (group commit). It is the
	// initial mode; SetSyncEveryAppend changes it on an open replica.
	SyncEveryAppend bool
	// AlterISR sends an ISR change to the controller (AlterPartition). Nil disables ISR
	// changes.
	AlterISR func(ISRChange) error
	// ReplicaEligible reports whether a follower may join the ISR, given the broker
	// epoch its latest fetch of this replica named (-1: none): Kafka's
	// isReplicaIsrEligible, registered, unfenced (the controller fences a broker in
	// controlled shutdown, unless the whole cluster is stopping) and, for an epoch it
	// names, registered at it (KIP-903). The leader asks
	// for no ISR change adding an ineligible follower, where the controller would refuse
	// it; RecheckISR asks again once eligibility may have changed. It runs under the
	// partition's lock and takes no lock but leaves. Nil: every follower is eligible.
	ReplicaEligible func(replica int32, brokerEpoch int64) bool
	// ObserveFsync, when set, is told the duration of every group-commit fsync.
	ObserveFsync func(time.Duration)
	// ObserveFollowerAppend, when set, is told the bytes of every follower append.
	ObserveFollowerAppend func(bytes int64)
	// Remote is the remote log manager's side of tiered storage (tiered.go): time
	// lookups below the local log start and a follower's state from remote storage.
	// Nil until tiered storage is wired: lookups stay local and a follower that must
	// build from remote storage backs off.
	Remote RemoteLog
	Logger hclog.Logger
}

// Partition is one partition replica on this broker: its log, its role and, as leader,
// the high watermark.
//
// Safe for concurrent use. Lock order: flushMu before mu; mu is never held across
// network I/O or Raft calls (fsyncs happen under flushMu only).
type Partition struct {
	Topic string
	ID    int32
	opts  Options

	flushMu sync.Mutex // serialises group-commit fsyncs
	// syncEveryAppend is the current fsync-per-append mode (Options.SyncEveryAppend,
	// then SetSyncEveryAppend); read with or without mu.
	syncEveryAppend atomic.Bool

	mu             sync.Mutex
	log            *segment.Log // guarded by mu
	role           Role
	leader         int32 // current leader's broker id; -1 when none
	leaderEpoch    int32
	isr            []int32
	replicas       []int32
	partitionEpoch int32
	highWatermark  int64 // never moves backwards while leader
	// leaderHighWatermark is the leader's HW from the last fetch answer (follower).
	leaderHighWatermark int64
	durableEnd          int64  // offsets below are fsynced (SyncEveryAppend)
	truncations         uint64 // counts truncations, so that syncTo can tell its fsync was overtaken
	// syncWanted is the end the flusher goroutine is asked to make durable, and
	// flusherRunning whether it runs (sync_behind.go).
	syncWanted     int64
	flusherRunning bool
	pendingISR     []int32 // ISR asked of the controller, not yet committed; nil when none
	pendingISRBase int32   // the partition epoch pendingISR was asked against
	// leaderEpochStartOffset is the log end offset when this replica became leader.
	leaderEpochStartOffset int64
	followers              map[int32]*followerState // leader: each follower's progress
	watchers               map[*Waiter]struct{}
	// collecting is set (under mu) by the operations that run the after-unlock
	// functions of the waiters they wake on their own goroutine (collected); at any
	// other wake-up those run on a goroutine of their own (NewAfterUnlockWaiter).
	collecting bool
	collected  []func()
	// leaderHighWatermarkNow mirrors highWatermark while this replica leads and is -1
	// otherwise; set under mu before waiters are woken, read without it (see
	// LeaderHighWatermark).
	leaderHighWatermarkNow atomic.Int64
	// changes counts wake-ups of the waiters (see Changes).
	changes atomic.Uint64
	// positionVersion counts the changes of what FollowerPosition returns (and more):
	// every wake-up, truncation, retention and failed follower append. Bumped under
	// mu; the follower fetcher reads a partition's position again only when it moved
	// (fetcher.go).
	positionVersion atomic.Uint64
	// producers is the idempotent producers' state as of the log end offset (see
	// producers.go); guarded by mu.
	producers *ProducerStates
	// replay says how the next open would rebuild producers if no snapshot were taken
	// now (producer_replay.go); guarded by mu.
	replay producerReplay
	// snapshots are the producer state snapshots in the directory, when known
	// (producer_snapshot_files.go); guarded by mu.
	snapshots snapshotFiles
	// verifying holds the KIP-890 verifications in progress, by producer id
	// (txn_verification.go); guarded by mu.
	verifying map[int64]*TxnVerification
}

// NewPartition wraps an open log. It starts as a follower with the checkpointed high
// watermark (clamped to the log end offset).
func NewPartition(topic string, id int32, log *segment.Log, highWatermark int64, opts Options) *Partition {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	p := &Partition{Topic: topic, ID: id, opts: opts, log: log, role: Follower, leader: -1, leaderEpoch: -1,
		producers: NewProducerStates(), replay: producerReplay{from: -1}} // followers and watchers are allocated on first use
	p.highWatermark = min(max(highWatermark, log.LogStartOffset()), log.LogEndOffset())
	p.durableEnd = log.RecoveryPoint()
	p.syncEveryAppend.Store(opts.SyncEveryAppend)
	p.leaderHighWatermarkNow.Store(-1)
	log.SetRollObserver((*rollSnapshotter)(p))
	return p
}

// BecomeLeaderOf makes this replica the leader in leaderEpoch and partitionEpoch with
// isr and the full replica list. It records the epoch's start offset in the leader
// epoch cache; followers start with unknown progress (caught up as of now for ISR
// members).
func (p *Partition) BecomeLeaderOf(leaderEpoch, partitionEpoch int32, isr, replicas []int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return ErrPartitionStopped
	}
	if leaderEpoch > p.log.LeaderEpochs().LatestEpoch() {
		if err := p.log.LeaderEpochs().AssignLeaderStart(leaderEpoch, p.log.LogEndOffset()); err != nil {
			return err
		}
	}
	newTerm := p.role != Leader || p.leaderEpoch != leaderEpoch
	p.role, p.leaderEpoch, p.leader, p.isr = Leader, leaderEpoch, p.opts.BrokerID, slices.Clone(isr)
	p.replicas, p.partitionEpoch = slices.Clone(replicas), partitionEpoch
	if newTerm {
		p.leaderEpochStartOffset = p.log.LogEndOffset()
		// At DEBUG: a whole-cluster start makes every partition such a leader at once,
		// and the broker logs them in one line per reconciliation (narrow_leads.go).
		if (!slices.Contains(isr, p.opts.BrokerID) || len(isr) == 1 && len(replicas) > 1) && p.opts.Logger.IsDebug() {
			p.opts.Logger.Debug("leading", "leader_epoch", leaderEpoch, "epoch_start_offset", p.leaderEpochStartOffset,
				"high_watermark", p.highWatermark, "isr", isr)
		}
		p.pendingISR = nil
		now := time.Now()
		p.followers = nil
		for _, r := range isr {
			if r != p.opts.BrokerID {
				if p.followers == nil {
					p.followers = map[int32]*followerState{}
				}
				p.followers[r] = &followerState{logEndOffset: -1, logStartOffset: -1, brokerEpoch: -1, lastCaughtUpTime: now}
			}
		}
	}
	p.maybeAdvanceHighWatermarkLocked()
	p.notifyLocked()
	return nil
}

// BecomeFollower makes this replica a follower of leader in leaderEpoch: it stops
// accepting produce requests and consumer fetches at once. Fetching from the leader is
// the follower fetcher's work.
func (p *Partition) BecomeFollower(leaderEpoch int32, leader int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return ErrPartitionStopped
	}
	p.role, p.leaderEpoch, p.leader, p.isr, p.pendingISR = Follower, leaderEpoch, leader, nil, nil
	p.notifyLocked()
	return nil
}

// UpdateISROf sets the committed ISR and partition epoch of a leader.
func (p *Partition) UpdateISROf(partitionEpoch int32, isr []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isr, p.partitionEpoch = slices.Clone(isr), partitionEpoch
	if p.pendingISR != nil && (slices.Equal(p.pendingISR, isr) || partitionEpoch > p.pendingISRBase) {
		// Newer committed state settles the pending change, applied or not; if it was
		// not, the next follower fetch asks again.
		p.pendingISR = nil
	}
	p.maybeAdvanceHighWatermarkLocked()
	p.notifyLocked()
}

// TopicID is the id of the replica's topic (Options.TopicID; zero when unknown).
func (p *Partition) TopicID() [16]byte { return p.opts.TopicID }

// State is a snapshot of a partition's offsets and role.
type State struct {
	Role           Role
	LeaderEpoch    int32
	ISR            []int32
	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
	// LastStableOffset is min(high watermark, first offset of the oldest ongoing
	// transaction): read_committed consumers read up to it.
	LastStableOffset int64
	RecoveryPoint    int64
	// LeaderEpochStartOffset is the log end offset when this replica became leader.
	LeaderEpochStartOffset int64
	// MaximalISRSize counts the ISR plus members a pending ISR change adds.
	MaximalISRSize int
	// FollowerLag is, on a follower, how far its log end offset is behind the leader's
	// high watermark as of the last fetch answer (Kafka's fetcher lag); 0 otherwise.
	FollowerLag int64
	// LogFailed: the log is failed for good (a write or fsync error, Kafka's log
	// directory failure): nothing past the high watermark will commit here.
	LogFailed bool
}

// State returns the partition's current offsets and role.
func (p *Partition) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stateLocked()
}

// LogStartOffset is the log start offset, as State has it, without State's copies
// (the produce response carries it).
func (p *Partition) LogStartOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.LogStartOffset()
}

func (p *Partition) stateLocked() State {
	return State{Role: p.role, LeaderEpoch: p.leaderEpoch, ISR: slices.Clone(p.isr),
		LogStartOffset: p.log.LogStartOffset(), LogEndOffset: p.log.LogEndOffset(),
		HighWatermark: p.highWatermark, LastStableOffset: p.lastStableOffsetLocked(), RecoveryPoint: p.log.RecoveryPoint(),
		LeaderEpochStartOffset: p.leaderEpochStartOffset, MaximalISRSize: len(p.maximalISRLocked()),
		FollowerLag: p.followerLagLocked(), LogFailed: p.log.Failure() != nil}
}

func (p *Partition) followerLagLocked() int64 {
	if p.role != Follower {
		return 0
	}
	return max(p.leaderHighWatermark-p.log.LogEndOffset(), 0)
}

// lastStableOffsetLocked is min(HW, first offset of the oldest ongoing transaction).
// Callers hold mu.
func (p *Partition) lastStableOffsetLocked() int64 {
	if first, ok := p.producers.FirstUnstableOffset(); ok && first < p.highWatermark {
		return first
	}
	return p.highWatermark
}

// CheckLeaderEpoch applies KIP-320 fencing to a request's current leader epoch (-1 skips
// the check) and requires leadership.
func (p *Partition) CheckLeaderEpoch(requestEpoch int32) error {
	return p.CheckEpoch(requestEpoch, LeaderOnly)
}

// CheckEpoch applies KIP-320 fencing to a request's current leader epoch (-1 skips the
// check) and requires leadership when scope is LeaderOnly; with AnyReplica a follower
// passes too (debug ListOffsets, KIP-392 consumer fetches).
func (p *Partition) CheckEpoch(requestEpoch int32, scope ReplicaScope) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkEpochLocked(requestEpoch, scope)
}

func (p *Partition) checkLeaderLocked(requestEpoch int32) error {
	return p.checkEpochLocked(requestEpoch, LeaderOnly)
}

func (p *Partition) checkEpochLocked(requestEpoch int32, scope ReplicaScope) error {
	switch {
	case p.role == Stopped:
		return ErrPartitionStopped
	case requestEpoch >= 0 && requestEpoch < p.leaderEpoch:
		return ErrFencedLeaderEpoch
	case requestEpoch > p.leaderEpoch:
		return ErrUnknownLeaderEpoch
	case p.role != Leader && scope == LeaderOnly:
		return ErrNotLeader
	}
	return nil
}

// ReplicaScope says whether only the leader may answer a request or any replica may.
type ReplicaScope int

const (
	// LeaderOnly requires leadership (producers, consumers before Fetch v11, followers).
	LeaderOnly ReplicaScope = iota
	// AnyReplica lets a follower answer from its own log: consumers with Fetch v11+
	// (KIP-392 fetch from follower) and ListOffsets with the debugging replica id -2.
	AnyReplica
)

// AppendAsLeader appends a producer's batches, stamping the leader epoch, and returns
// the append info. minInsync > 0 (acks=all) requires that many ISR members first
// (ErrNotEnoughReplicas, nothing written). Idempotent batches are checked against the
// producer state first (ErrInvalidProducerEpoch, ErrOutOfOrderSequence, nothing
// written); a duplicate of one of the producer's last 5 batches writes nothing and
// returns the original batch's offsets with Batches 0. With SyncEveryAppend the data is
// fsynced before the high watermark may pass it.
func (p *Partition) AppendAsLeader(records []byte, minInsync int) (segment.AppendInfo, error) {
	return p.AppendAsLeaderInEpoch(records, -1, minInsync)
}

// AppendAsLeaderInEpoch is AppendAsLeader for a writer bound to the leader epoch it was
// started in (the coordinator runtime): an older epoch is ErrFencedLeaderEpoch, a newer
// one ErrUnknownLeaderEpoch, and nothing is written; -1 skips the check.
func (p *Partition) AppendAsLeaderInEpoch(records []byte, leaderEpoch int32, minInsync int) (segment.AppendInfo, error) {
	return p.appendAsLeader(records, leaderAppend{leaderEpoch: leaderEpoch, minInsync: minInsync})
}

// AppendValidatedAsLeader is AppendAsLeader for records whose every batch the caller
// has just checked with segment.ValidateBatch (the produce handler does, to answer
// CORRUPT_MESSAGE): the CRC-32C is computed once per produced batch, not twice.
func (p *Partition) AppendValidatedAsLeader(records []byte, minInsync int) (segment.AppendInfo, error) {
	return p.appendAsLeader(records, leaderAppend{leaderEpoch: -1, minInsync: minInsync, crcChecked: true, inlineWake: true})
}

// leaderAppend says how appendAsLeader checks a leader's write.
type leaderAppend struct {
	leaderEpoch int32 // the writer's leader epoch (checkLeaderLocked); -1: any
	minInsync   int   // > 0 (acks=all): ISR members required first
	// verify: the transactional batches must pass checkTxnVerifiedLocked with guard.
	verify bool
	guard  *TxnVerification
	// crcChecked: the caller checked the batches' CRC-32C (segment.ValidateBatch).
	crcChecked bool
	// coordinator: a coordinator's transactional write (coordinator_append.go):
	// producer epochs are checked, sequences and duplicates are not.
	coordinator bool
	// strictMarkerEpoch: the records are a Transactions V2 marker (KIP-1228), whose
	// epoch must be newer than the producer's here (marker_append.go).
	strictMarkerEpoch bool
	// inlineWake: the caller holds no lock (the produce handler), so the after-unlock
	// functions of the waiters the append wakes (parked follower fetches) run on its
	// goroutine, before the fsync, or, with wakes, when the caller runs them.
	inlineWake bool
	// syncBehind: the caller waits for the high watermark (acks=all), so with
	// SyncEveryAppend the fsync runs behind the append on the flusher goroutine
	// (sync_behind.go) instead of before it returns.
	syncBehind bool
	// wakes, with inlineWake and syncBehind, takes the after-unlock functions instead
	// of running them: the caller runs them once it has appended every partition of
	// its request (Wakes).
	wakes *Wakes
}

// appendAsLeader is the one leader append: the checks a says, the write, the HW and
// the wake-ups, then (SyncEveryAppend) the fsync.
func (p *Partition) appendAsLeader(records []byte, a leaderAppend) (segment.AppendInfo, error) {
	p.mu.Lock()
	if err := p.checkLeaderLocked(a.leaderEpoch); err != nil {
		p.mu.Unlock()
		return segment.AppendInfo{}, err
	}
	if a.minInsync > 0 && len(p.isr) < a.minInsync {
		p.mu.Unlock()
		return segment.AppendInfo{}, fmt.Errorf("%w: isr %v, min.insync.replicas %d", ErrNotEnoughReplicas, p.isr, a.minInsync)
	}
	var dup *ProducerBatch
	var err error
	if a.coordinator {
		err = p.checkCoordinatorProducersLocked(records)
	} else {
		dup, err = p.checkProducersLocked(records)
	}
	if err != nil {
		p.mu.Unlock()
		return segment.AppendInfo{}, err
	}
	if dup != nil {
		info := segment.AppendInfo{FirstOffset: dup.FirstOffset, LastOffset: dup.LastOffset, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, LogAppendTime: -1}
		if p.log.Config().LogAppendTime {
			info.LogAppendTime = dup.Timestamp // the original's stamped maxTimestamp, as Kafka answers a duplicate
		}
		if a.syncBehind && p.syncEveryAppend.Load() {
			// The original may still wait for its fsync: the high watermark the caller
			// waits for passes it only once the flusher has made it durable.
			p.syncBehindLocked(dup.LastOffset + 1)
			p.mu.Unlock()
			return info, nil
		}
		p.mu.Unlock()
		if p.syncEveryAppend.Load() {
			// The original may still be in its group-commit fsync.
			return info, p.syncTo(dup.LastOffset + 1)
		}
		return info, nil
	}
	if a.strictMarkerEpoch {
		if err := p.checkMarkerEpochStrictLocked(records); err != nil {
			p.mu.Unlock()
			return segment.AppendInfo{}, err
		}
	}
	if a.verify {
		if err := p.checkTxnVerifiedLocked(records, a.guard); err != nil {
			p.mu.Unlock()
			return segment.AppendInfo{}, err
		}
	}
	var info segment.AppendInfo
	if a.crcChecked {
		info, err = p.log.AppendValidatedAsLeader(records, p.leaderEpoch)
	} else {
		info, err = p.log.AppendAsLeader(records, p.leaderEpoch)
	}
	if err == nil {
		open := len(p.producers.open)
		p.afterAppendLocked(records)
		// Followers may fetch the new batches at once, while the leader's fsync runs;
		// with SyncEveryAppend the HW still waits for that fsync (syncTo).
		advanced := p.maybeAdvanceHighWatermarkLocked()
		p.collecting = a.inlineWake
		if advanced || len(p.producers.open) != open {
			p.notifyLocked()
		} else {
			// Nothing up to the high watermark changed (a marker, closing a
			// transaction, may move the last stable offset: it wakes everyone).
			p.notifyAppendLocked()
		}
		if a.syncBehind && p.syncEveryAppend.Load() {
			p.syncBehindLocked(info.LastOffset + 1)
		}
	}
	after := p.takeCollectedLocked()
	p.mu.Unlock()
	// The parked follower fetches the append woke are answered here, on this
	// goroutine, before the fsync: the records leave for the followers at once, with no
	// goroutine to wake in between (NewAfterUnlockWaiter). With wakes they are answered
	// by the caller, after the rest of its request's appends.
	if a.wakes != nil {
		a.wakes.add(after)
	} else {
		runAfterUnlock(after)
	}
	if err != nil || !p.syncEveryAppend.Load() || a.syncBehind {
		return info, err
	}
	// Let the goroutines the append just woke (the followers' parked fetches) run
	// before this one enters the fsync: Go puts them on this goroutine's P, which a
	// blocking system call keeps until the runtime's monitor hands it off (up to the
	// whole fsync on a quiet broker), so the followers' copies would otherwise wait for
	// the leader's fsync instead of overlapping it.
	runtime.Gosched()
	if err := p.syncTo(info.LastOffset + 1); err != nil {
		return info, err
	}
	return info, nil
}

// testHookAfterFsync, when set by a test, runs in syncTo between the fsync and
// re-taking the lock.
var testHookAfterFsync func(*Partition)

// testHookFsyncError, when set by a test, replaces a successful fsync's result.
var testHookFsyncError func(*Partition) error

// syncTo makes offsets below end durable. Appends that arrive while one fsync runs are
// covered by the next one, which syncs everything appended by then. A truncation while
// the fsync runs (the lock is released for it) voids a successful result: the offsets it
// covered may since hold other batches, so the sync is done again. A failed fsync fails
// the log whatever happened meanwhile (sticky, never retried).
func (p *Partition) syncTo(end int64) error {
	// The acks=all answers the high watermark advance releases are written once
	// flushMu is released too (the defers run in reverse order).
	var after []func()
	defer func() { runAfterUnlock(after) }()
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	for {
		p.mu.Lock()
		if p.durableEnd >= end {
			p.mu.Unlock()
			return nil
		}
		if p.role == Stopped {
			p.mu.Unlock()
			return ErrPartitionStopped
		}
		files, target := p.log.SyncTarget()
		truncations := p.truncations
		p.mu.Unlock()
		var err error
		syncStart := time.Now()
		for _, f := range files {
			if err = f.Sync(); err != nil {
				break
			}
		}
		if p.opts.ObserveFsync != nil {
			p.opts.ObserveFsync(time.Since(syncStart))
		}
		if testHookAfterFsync != nil {
			testHookAfterFsync(p)
		}
		if err == nil && testHookFsyncError != nil {
			err = testHookFsyncError(p)
		}
		p.mu.Lock()
		// A failed fsync is never retried into success, even when a truncation
		// overtook it: the pages it did not write may hold offsets below the
		// truncation point, and Linux reports a writeback error once, so the retry
		// would succeed over lost data. Only a closed file (a segment deleted or its
		// descriptor evicted meanwhile) and a successful fsync go on.
		if closed := errors.Is(err, os.ErrClosed); err == nil || closed {
			if p.truncations != truncations {
				p.mu.Unlock()
				continue
			}
			if closed {
				// A segment was deleted meanwhile (retention): flush what remains under
				// the lock.
				if p.role == Stopped {
					p.mu.Unlock()
					return ErrPartitionStopped
				}
				err = p.log.Flush()
				target = p.log.LogEndOffset()
			}
		}
		if err != nil {
			// As a log directory failure in Kafka: the written data is not known to be
			// on disk, so the log is failed for good (the broker takes the replica
			// offline) and a follower stops reporting an end offset past durableEnd.
			err = p.log.MarkFailed("fsync", err)
			// The acks=all writes waiting for this fsync can no longer commit here:
			// they are answered KAFKA_STORAGE_ERROR now (AcksAllOutcome), on this
			// goroutine once the locks are released, not at their timeout.
			p.collecting = true
			p.notifyLocked()
			after = p.takeCollectedLocked()
			p.mu.Unlock()
			return fmt.Errorf("replication: fsync of %s-%d: %w", p.Topic, p.ID, err)
		}
		p.log.MarkFlushed(target)
		p.durableEnd = max(p.durableEnd, target)
		p.collecting = true
		if p.maybeAdvanceHighWatermarkLocked() {
			p.notifyProgressLocked()
		} else {
			p.wakeFsyncedLocked() // acks=1 writes wait for this fsync only
		}
		after = p.takeCollectedLocked()
		p.mu.Unlock()
		return nil
	}
}

// maybeAdvanceHighWatermarkLocked sets the HW to the minimum log end offset over the ISR,
// the leader's own counted only up to what is durable when SyncEveryAppend is set. It
// never moves backwards. It reports whether the HW moved. Callers hold mu.
func (p *Partition) maybeAdvanceHighWatermarkLocked() bool {
	if p.role != Leader {
		return false
	}
	hw := p.localEndLocked()
	for _, r := range p.maximalISRLocked() {
		if r == p.opts.BrokerID {
			continue
		}
		leo := p.highWatermark // unknown follower: hold the HW where it is
		if st := p.followers[r]; st != nil && st.logEndOffset >= 0 {
			leo = st.logEndOffset
		}
		hw = min(hw, leo)
	}
	if hw > p.highWatermark {
		p.highWatermark = hw
		p.leaderHighWatermarkNow.Store(hw)
		return true
	}
	return false
}

// FetchResult is what a fetch read returns for one partition.
type FetchResult struct {
	// Records holds the batches read (never nil); from the Held reads, only those the
	// file cache had no Hold left for (segment.FileRange.HoldOrCopy), else empty.
	Records []byte
	// Held is the range read by ReadIsolatedHeld and ReadForFollowerHeld (nil when
	// empty or copied into Records): its file stays open until the caller releases it,
	// so it can be sent without a copy after the partition lock is gone.
	Held             *segment.Hold
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	LogEndOffset     int64
	// Aborted lists, for a read_committed read, the aborted transactions that may
	// hold records of the range read (nil otherwise).
	Aborted []AbortedTxn
	// Changes is the partition's Changes() as of the read.
	Changes uint64
	// FallingBehind tells that the read came from an older segment than the one holding
	// its bound (segment.FileRange.FallingBehind): a delayed fetch answers at once.
	FallingBehind bool
}

// holdOrCopy puts the range r into Held, or, past the file cache's bound on Holds,
// its bytes into Records (segment.FileRange.HoldOrCopy). Callers hold mu.
func (res *FetchResult) holdOrCopy(r segment.FileRange) error {
	h, b, err := r.HoldOrCopy()
	if err != nil {
		return err
	}
	res.Held = h
	if b != nil {
		res.Records = b
	}
	return nil
}

// RecordBytes is the size of the records read, held or copied.
func (res *FetchResult) RecordBytes() int {
	if res.Held != nil {
		return int(res.Held.Len())
	}
	return len(res.Records)
}

// Read reads for a consumer, up to this replica's high watermark. It applies KIP-320
// fencing with currentLeaderEpoch (-1 skips) and requires leadership unless scope is
// AnyReplica. A follower's high watermark is min(leader's, own LEO), so it never serves
// uncommitted data either. Followers fetching from the leader use ReadForFollowerHeld.
func (p *Partition) Read(offset int64, maxBytes int, currentLeaderEpoch int32, scope ReplicaScope) (FetchResult, error) {
	return p.ReadIsolated(offset, maxBytes, currentLeaderEpoch, scope, false)
}

// ReadIsolated is Read with Kafka's isolation levels: readCommitted reads only up to
// the last stable offset and returns the aborted transactions of the range, so that
// the consumer can drop their records.
func (p *Partition) ReadIsolated(offset int64, maxBytes int, currentLeaderEpoch int32, scope ReplicaScope, readCommitted bool) (FetchResult, error) {
	return p.readIsolated(offset, maxBytes, currentLeaderEpoch, scope, readCommitted, false)
}

// ReadIsolatedHeld is ReadIsolated returning the range in Held, uncopied; the caller
// must Release it.
func (p *Partition) ReadIsolatedHeld(offset int64, maxBytes int, currentLeaderEpoch int32, scope ReplicaScope, readCommitted bool) (FetchResult, error) {
	return p.readIsolated(offset, maxBytes, currentLeaderEpoch, scope, readCommitted, true)
}

func (p *Partition) readIsolated(offset int64, maxBytes int, currentLeaderEpoch int32, scope ReplicaScope, readCommitted, hold bool) (FetchResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lso := p.lastStableOffsetLocked()
	res := FetchResult{Records: []byte{}, HighWatermark: p.highWatermark, LastStableOffset: lso,
		LogStartOffset: p.log.LogStartOffset(), LogEndOffset: p.log.LogEndOffset()}
	if err := p.checkEpochLocked(currentLeaderEpoch, scope); err != nil {
		return res, err
	}
	upTo := p.highWatermark
	if readCommitted {
		upTo = lso
		res.Aborted = p.producers.AbortedBetween(offset, upTo)
	}
	res.Changes = p.changes.Load()
	if err := p.checkRemoteTierLocked(offset); err != nil {
		return res, err
	}
	r, err := p.log.ReadForConsumer(offset, maxBytes, upTo)
	if err != nil {
		return res, err
	}
	res.FallingBehind = r.FallingBehind
	if hold {
		// Pinned under the lock, before anything can remove the segment.
		return res, res.holdOrCopy(r)
	}
	// The copy happens under the lock, so that no truncation or deletion can change the
	// range while it is read.
	res.Records, err = r.Bytes()
	r.Release()
	if err != nil {
		return res, err
	}
	return res, nil
}

// LogMaintenanceDue is the log's MaintenanceDue, read without the partition lock (the
// log pointer is set once, by NewPartition; MaintenanceDue is atomic): a periodic pass
// over every replica calls WithLog on these only.
func (p *Partition) LogMaintenanceDue() bool { return p.log.MaintenanceDue() }

// WithLog runs fn with the log under the partition lock (offset lookups, retention,
// checkpoint values). fn must not block.
func (p *Partition) WithLog(fn func(l *segment.Log) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return ErrPartitionStopped
	}
	return fn(p.log)
}

// StopForDeletion stops the replica and renames its directory for asynchronous
// deletion ("<dir>.<uniq>-delete"); it returns the renamed directory, or "" when the
// replica never made one (segment.Log.MarkForDeletion).
func (p *Partition) StopForDeletion(uniq string) (string, error) {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return "", ErrPartitionStopped
	}
	p.role = Stopped
	p.notifyLocked()
	return p.log.MarkForDeletion(uniq)
}

// Stop closes the log (delete removes its directory) and wakes every waiter. Later calls
// fail with ErrPartitionStopped.
func (p *Partition) Stop(deleteData bool) error {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return nil
	}
	p.role = Stopped
	p.notifyLocked()
	if deleteData {
		return p.log.Delete()
	}
	return p.log.Close()
}

// SetSyncEveryAppend switches the fsync-per-append mode (flush.messages=1) of an open
// replica. Switching it on counts as durable only what the log has flushed (its
// recovery point): the next append's group commit fsyncs everything written since, and
// the high watermark, which never moves back, waits for it from then on. Switching it
// off lets the high watermark pass unflushed offsets at once.
func (p *Partition) SetSyncEveryAppend(on bool) {
	p.flushMu.Lock() // no group commit in flight while the mode changes
	defer p.flushMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.syncEveryAppend.Load() == on {
		return
	}
	if on {
		p.durableEnd = p.log.RecoveryPoint()
		if p.role == Leader {
			// acks=all appends written while it was off may wait for the high
			// watermark: the flusher makes them durable (sync_behind.go).
			p.syncBehindLocked(p.log.LogEndOffset())
		}
	}
	p.syncEveryAppend.Store(on)
	// Every waiter is told, the high watermark moved or not: an acks=1 write waiting
	// for its fsync (WaitFsynced) is answerable once the mode is off.
	p.maybeAdvanceHighWatermarkLocked()
	p.notifyLocked()
}
