package broker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/metrics"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// cleanShutdownFile marks a log directory closed cleanly (Kafka's name and format).
const cleanShutdownFile = ".kafka_cleanshutdown"

// topicSettings are a topic's resolved configs that the data path reads per request.
type topicSettings struct {
	maxMessageBytes int
	minInsync       int
	segment         segment.Config
	syncEveryAppend bool
	cleaner         cleanerSettings
	compression     segment.Compression // compression.type and its levels (segment/recompress.go)
	// remoteCopy: remote.storage.enable and not remote.log.copy.disable (the remote log
	// manager copies the partition's closed segments while it leads here).
	remoteCopy bool
}

// localPartition is a replica on this broker.
type localPartition struct {
	*replication.Partition
	topicID  metadata.Uuid
	settings atomic.Pointer[topicSettings]
	// replicationFactor is the assignment's replica count, for min.insync.replicas.
	replicationFactor atomic.Int32
	seen              *metadata.Partition // last applied assignment; reconciler only
	// remoteSeen is the topic's remote log its remote log state was last set from
	// (remote_log_metadata.go); reconciler only.
	remoteSeen *metadata.RemoteTopicLog
	// counters are the topic's BrokerTopicMetrics, resolved once.
	counters *metrics.TopicCounters
}

// partitionManager owns the local replicas and the log directory's checkpoints.
type partitionManager struct {
	b   *Broker
	dir string

	mu    sync.Mutex // guards parts, reconciled, reconciledCh, pendingDeletes and the checkpoint maps
	parts map[segment.TopicPartition]*localPartition
	// pendingDeletes maps "-delete" directories to when they may be removed.
	pendingDeletes map[string]time.Time
	recheckCh      chan struct{} // 1-buffered: reconcile the current image again (recheck)
	replicaLog     hclog.Logger  // the replicas' shared logger (replicaLogger)
	reconciled     uint64        // image offset the local replicas match
	reconciledCh   chan struct{} // closed and replaced when reconciled moves

	// isrRefusals are the followers the leaders here left out of an ISR as ineligible
	// (isr_eligibility.go).
	isrRefusals isrRefusals

	// carried holds the offset checkpoints' lines of the replicas that are not open here
	// (checkpoints.go): loaded at start, taken out when a replica opens, put back with
	// the offsets it stopped with when it is removed but its data kept (offline), dropped
	// with its data. A replica is never in parts and carried at once. Guarded by mu.
	carried map[segment.TopicPartition]replication.CloseOffsets
	// checkpointMu serialises the writes of the offset checkpoints and the moves of a
	// replica between parts and carried (checkpoints.go). Taken before mu and before
	// any Partition lock; held across the writes' fsyncs.
	checkpointMu sync.Mutex
	// checkpointed is every line of the offset checkpoints as this start's last periodic
	// write left them (checkpoint_changes.go; nil: write all three next). Guarded by
	// checkpointMu.
	checkpointed map[segment.TopicPartition]replication.CloseOffsets
	// cleanShutdown is set when the log directory was closed cleanly (the marker was
	// there at start); the marker is removed before the first replica opens
	// (removeCleanShutdownMarker, once: markerOnce, markerErr).
	cleanShutdown bool
	markerOnce    sync.Once
	markerErr     error
	// cleanTopicIDs are the topic ids of topicIDCheckpointFile, read at a clean start;
	// open takes each one out (guarded by mu).
	cleanTopicIDs map[segment.TopicPartition]metadata.Uuid
	// cleanLogStates are the encoded descriptions of cleanLogStatesFile, read at a clean
	// start; open takes each one out (guarded by mu).
	cleanLogStates map[segment.TopicPartition][]byte
	// fromShutdownState counts the replicas this start opened from their descriptions
	// (reported in the "broker ready" line).
	fromShutdownState atomic.Int64
	// narrowLeads are the leaderships with an ISR of this broker alone taken in the
	// current reconciliation pass, logged in one line at its end (narrow_leads.go).
	narrowLeads narrowLeads
	// compactedOnce holds the partitions the cleaner has ever cleaned (the keys of
	// cleaner-offset-checkpoint): their logs have offset gaps, which recovery must accept
	// even after cleanup.policy changes back to delete. Guarded by mu.
	compactedOnce map[segment.TopicPartition]bool
	// remoteTopics are the tiered topics whose replicas' remote log states were set,
	// with the remote log they were set from (remote_log_metadata.go); reconcile
	// goroutine only.
	remoteTopics map[metadata.Uuid]*metadata.RemoteTopicLog
	// remoteOpened is set when a replica opens: the next updateRemoteLogStates looks at
	// every tiered topic, not only the changed ones.
	remoteOpened atomic.Bool
	// straysRemoved is set once the first reconciliation of a caught-up image has
	// removed the partition directories this broker no longer hosts (reconcile
	// goroutine only).
	straysRemoved bool
}

func newPartitionManager(b *Broker) (*partitionManager, error) {
	dir := b.cfg.logsDir()
	pm := &partitionManager{b: b, dir: dir, parts: map[segment.TopicPartition]*localPartition{}, reconciledCh: make(chan struct{}),
		recheckCh:      make(chan struct{}, 1),
		replicaLog:     b.logger.Named("partition"),
		pendingDeletes: map[string]time.Time{}}
	pm.carried = readOffsetCheckpoints(dir, b.logger)
	pm.compactedOnce = map[segment.TopicPartition]bool{}
	if cleaned, err := segment.ReadOffsetCheckpoint(filepath.Join(dir, segment.CleanerOffsetCheckpointFile)); err == nil {
		for tp := range cleaned {
			pm.compactedOnce[tp] = true
		}
	}
	pm.scheduleLeftoverDeletions()
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err == nil {
		pm.cleanShutdown = true // the marker is removed before the first replica opens
		b.previousBrokerEpoch.Store(readCleanShutdownEpoch(dir))
		if pm.cleanTopicIDs, err = readTopicIDCheckpoint(filepath.Join(dir, topicIDCheckpointFile)); err != nil {
			b.logger.Warn("ignoring an unreadable topic id checkpoint; reading each replica's partition.metadata", "error", err)
		}
		if pm.cleanLogStates, err = readCleanLogStates(filepath.Join(dir, cleanLogStatesFile), b.previousBrokerEpoch.Load()); err != nil {
			b.logger.Warn("ignoring unreadable log descriptions of the clean shutdown; loading each log from its files", "error", err)
		}
	}
	return pm, nil
}

// get returns the local replica of topic-partition, or nil.
func (pm *partitionManager) get(topic string, partition int32) *localPartition {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return pm.parts[segment.TopicPartition{Topic: topic, Partition: partition}]
}

func (pm *partitionManager) all() []*localPartition {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	out := make([]*localPartition, 0, len(pm.parts))
	for _, p := range pm.parts {
		out = append(out, p)
	}
	return out
}

// allSorted is all, by topic and partition.
func (pm *partitionManager) allSorted() []*localPartition {
	parts := pm.all()
	slices.SortFunc(parts, func(x, y *localPartition) int {
		if c := strings.Compare(x.Topic, y.Topic); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
	return parts
}

// reconcileLoop applies every new metadata image to the local replicas, once this
// broker's metadata has caught up: it is registered with this process's incarnation
// and unfenced, which the controller allows only when the broker has applied the log
// up to its registration. Until then a restarted node's image may be stale (it may
// even name this node leader in an old epoch) and must not be acted on.
//
// The first reconciliation after catching up makes the broker ready (readiness.go).
func (pm *partitionManager) reconcileLoop() {
	if err := pm.b.waitUnfenced(context.Background()); err != nil {
		return // stopped before it caught up
	}
	caughtUp := time.Now()
	pm.b.logStartupTrace()
	prev := metadata.NewImage()
	first := true // the first pass is a full one (removeStrays)
	for {
		changed := pm.b.machine.Changed()
		again := false
		select {
		case <-pm.recheckCh:
			again = true
		default:
		}
		if im := pm.b.machine.Image(); im != prev || again {
			runStallHook(&pm.b.stalls.reconcile)
			ok := false
			if again || first || pm.b.offline.count() > 0 || im.ConfigsChangedSince(prev) {
				ok = pm.reconcile(im)
			} else {
				ok = pm.reconcileDelta(prev, im)
			}
			pm.narrowLeads.flush(pm.b.logger)
			if !ok {
				return // stopping
			}
			pm.updateRemoteLogStates(im)
			pm.recheckISRs(im)
			pm.b.remoteLogs.imageChanged(im)
			if first && pm.fromShutdownState.Load() > 0 {
				pm.b.goLoop("described-log-check", pm.checkDescribedLogs)
			}
			first = false
			prev = im
			pm.mu.Lock()
			pm.reconciled = im.Offset
			close(pm.reconciledCh)
			pm.reconciledCh = make(chan struct{})
			replicas := len(pm.parts)
			pm.mu.Unlock()
			pm.b.markReady(caughtUp, time.Now(), im.Offset, replicas, pm.fromShutdownState.Load())
		}
		select {
		case <-changed:
		case <-pm.recheckCh:
			pm.recheck() // consumed above, on the next turn
		case <-pm.b.stop:
			return
		}
	}
}

// waitReconciled waits until the local replicas match the image at offset or ctx ends.
func (pm *partitionManager) waitReconciled(ctx context.Context, offset uint64) {
	for {
		pm.mu.Lock()
		done, ch := pm.reconciled >= offset, pm.reconciledCh
		pm.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-pm.b.stop:
			return
		}
	}
}

// reconcile makes the local replicas match im: open replicas assigned here, apply
// leadership and ISR changes and config changes, stop and delete replicas of removed
// topics. It looks at every partition: the first pass, a recheck, while offline replicas
// wait, and after a config change; otherwise reconcileDelta does. It returns false,
// leaving the work unfinished, when the broker stops.
func (pm *partitionManager) reconcile(im *metadata.Image) bool {
	self := pm.b.cfg.NodeID
	live := map[segment.TopicPartition]bool{}
	var toOpen []replicaToOpen
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		settings := pm.b.topicSettings(im, name)
		for _, p := range t.Partitions {
			select {
			case <-pm.b.stop:
				return false
			default:
			}
			if !slices.Contains(p.Replicas, self) {
				continue
			}
			live[segment.TopicPartition{Topic: name, Partition: p.ID}] = true
			toOpen = pm.reconcilePartition(t, p, settings, toOpen)
		}
	}
	if !pm.openConcurrently(toOpen) {
		return false
	}
	for _, lp := range pm.all() {
		tp := segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}
		if !live[tp] {
			pm.remove(tp, true)
		}
	}
	pm.b.offline.retain(live)
	if !pm.straysRemoved {
		pm.straysRemoved = true
		pm.removeStrays(live)
		pm.mu.Lock()
		pm.cleanTopicIDs = nil  // the rest name no replica assigned here
		pm.cleanLogStates = nil // nor describe one
		pm.mu.Unlock()
		pm.forgetNotHosted(live)
	}
	pm.b.reconcileCoordinators(im)
	pm.b.dropUnledSharePartitions()
	return true
}

// reconcilePartition applies partition p of t, which the image assigns to this broker,
// to its local replica; a replica that is not open is appended to toOpen.
func (pm *partitionManager) reconcilePartition(t *metadata.Topic, p *metadata.Partition, settings *topicSettings, toOpen []replicaToOpen) []replicaToOpen {
	tp := segment.TopicPartition{Topic: t.Name, Partition: p.ID}
	lp := pm.get(t.Name, p.ID)
	if lp != nil && lp.topicID != t.ID {
		pm.remove(tp, true) // same name, new topic
		lp = nil
	}
	if lp != nil {
		if err := lp.WithLog(func(l *segment.Log) error { return l.Failure() }); logFailed(err) {
			if errors.Is(err, segment.ErrLogFailed) {
				pm.failLogDir(err) // a failed write: the whole directory goes offline (offline_replicas.go)
			} else {
				// Files changed while the broker was stopped: this replica alone goes
				// offline, and is opened again from its files (recovered) once the
				// controller has moved its leadership and ISR membership; a replica that
				// had neither is opened at the next pass, which no image may bring.
				pm.recheck()
			}
			pm.remove(tp, false)
			pm.markOffline(tp, t.ID, err)
			return toOpen
		}
	}
	if pm.offlineByDir(tp, t.ID, lp) {
		return toOpen // until the broker restarts
	}
	if lp == nil && pm.b.offline.waiting(tp, p, pm.b.cfg.NodeID) {
		return toOpen // until the controller has taken it out of the ISR and leadership
	}
	if lp == nil {
		return append(toOpen, replicaToOpen{t: t, p: p, settings: settings})
	}
	pm.applySettings(lp, settings)
	pm.applyAssignment(lp, p)
	return toOpen
}

// applyAssignment turns a partition's committed state into the local role.
func (pm *partitionManager) applyAssignment(lp *localPartition, p *metadata.Partition) {
	if leader, follow := pm.takeRole(lp, p); follow {
		pm.b.fetchers.Follow(lp.Partition, leader)
	}
}

// takeRole is applyAssignment but for the start of a new follower's fetches: it reports
// the leader the replica is to start fetching from (follow), for the caller to hand to
// the fetchers.
func (pm *partitionManager) takeRole(lp *localPartition, p *metadata.Partition) (leader int32, follow bool) {
	if lp.seen != nil && lp.seen.LeaderEpoch == p.LeaderEpoch && lp.seen.PartitionEpoch == p.PartitionEpoch {
		return -1, false
	}
	prev := lp.seen
	lp.seen = p
	lp.replicationFactor.Store(int32(len(p.Replicas)))
	if p.Leader != pm.b.cfg.NodeID {
		// Follow the leader (or wait for one: -1).
		if prev == nil || prev.LeaderEpoch != p.LeaderEpoch || prev.Leader != p.Leader {
			if err := lp.BecomeFollower(p.LeaderEpoch, p.Leader); err != nil {
				pm.b.logger.Error("cannot become follower", "topic", lp.Topic, "partition", lp.ID, "error", err)
			}
			if p.Leader >= 0 {
				return p.Leader, true
			}
			pm.b.fetchers.Unfollow(lp.Partition)
		}
		return -1, false
	}
	if prev == nil || prev.LeaderEpoch != p.LeaderEpoch || prev.Leader != p.Leader {
		pm.b.fetchers.Unfollow(lp.Partition)
		if err := lp.BecomeLeaderOf(p.LeaderEpoch, p.PartitionEpoch, p.ISR, p.Replicas); err != nil {
			pm.b.logger.Error("cannot become leader", "topic", lp.Topic, "partition", lp.ID, "error", err)
		} else if len(p.Replicas) > 1 {
			pm.b.purgatory.LeadershipGained() // followers' parked fetches come back to name it
			if !slices.Contains(p.ISR, pm.b.cfg.NodeID) || len(p.ISR) == 1 {
				pm.narrowLeads.add(lp.Topic, lp.ID, p.LeaderEpoch, p.ISR)
			}
		}
		return -1, false
	}
	lp.UpdateReplicas(p.Replicas)
	lp.UpdateISROf(p.PartitionEpoch, p.ISR)
	return -1, false
}

func (pm *partitionManager) applySettings(lp *localPartition, s *topicSettings) {
	if old := lp.settings.Load(); old != nil && *old == *s {
		return
	}
	// The log and the fsync mode first, the settings last: whoever sees the new
	// settings (a produce, a test waiting for them) finds them in force.
	// Derived under the partition's lock so that a clean committing meanwhile
	// (markCompacted) cannot be overwritten with a Compacted flag read before it.
	tp := segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}
	lp.WithLog(func(l *segment.Log) error { l.SetConfig(pm.logConfig(tp, s)); return nil })
	lp.SetSyncEveryAppend(s.syncEveryAppend) // flush.messages to or from 1, at once
	lp.settings.Store(s)
}

// logConfig is s's storage configuration for tp: a log the cleaner has ever cleaned
// stays Compacted (gaps accepted) whatever its cleanup.policy is now.
func (pm *partitionManager) logConfig(tp segment.TopicPartition, s *topicSettings) segment.Config {
	cfg := s.segment
	pm.mu.Lock()
	cfg.Compacted = cfg.Compacted || pm.compactedOnce[tp]
	pm.mu.Unlock()
	return cfg
}

// forgetCleaned drops what the cleaner knows of tp, whose data is being deleted.
func (pm *partitionManager) forgetCleaned(tp segment.TopicPartition) {
	pm.mu.Lock()
	delete(pm.compactedOnce, tp)
	pm.mu.Unlock()
	if c := pm.b.cleaner.Load(); c != nil {
		c.forget(tp)
	}
}

// markCompacted records that the cleaner has cleaned lp (see compactedOnce) and keeps
// its log Compacted from now on, even when cleanup.policy became delete while the
// clean ran: replica verification skips a log its cleaner has rewritten.
func (pm *partitionManager) markCompacted(tp segment.TopicPartition, lp *localPartition) {
	pm.mu.Lock()
	pm.compactedOnce[tp] = true
	pm.mu.Unlock()
	lp.WithLog(func(l *segment.Log) error {
		if cfg := l.Config(); !cfg.Compacted {
			cfg.Compacted = true
			l.SetConfig(cfg)
		}
		return nil
	})
}

// replicaToOpen is a replica the image assigns here that is not open.
type replicaToOpen struct {
	t        *metadata.Topic
	p        *metadata.Partition
	settings *topicSettings
	lp       *localPartition
	err      error
	leader   int32 // the leader to start fetching from, when follow
	follow   bool
}

// replicaOpeners is how many replicas are opened at once: opening and taking the first
// role are mostly waiting for the disk (directory listings, fsyncs of directories and
// checkpoints, recovery reads), so several overlap well even on two cores.
const replicaOpeners = 8

// openConcurrently opens the replicas of todo, replicaOpeners at a time, each opener
// giving the replica it opened its settings and role, then starts the new followers'
// fetches and marks those that cannot be opened offline, in image order. It returns
// false when the broker stops meanwhile. The fetches start once the whole batch is
// open: started one by one, they compete for the cores with the openings still to come
// (a whole-cluster start: each leader's fetch sessions are rebuilt as partitions trickle
// in), and every partition was led about 1 s later at 100,000 replicas
// (docs/benchmarks.md, item 4).
func (pm *partitionManager) openConcurrently(todo []replicaToOpen) bool {
	if len(todo) == 0 {
		return true
	}
	jobs := make(chan int)
	metaFiles := newPartitionMetadataFiles() // one partition.metadata per topic of todo
	var wg sync.WaitGroup
	for w := 0; w < min(replicaOpeners, len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				r := &todo[i]
				if r.lp, r.err = pm.open(r.t, r.p.ID, r.settings, metaFiles); r.err != nil {
					continue
				}
				if pm.b.offline.remove(segment.TopicPartition{Topic: r.t.Name, Partition: r.p.ID}) {
					pm.b.logger.Info("offline replica opened: following its leader again", "topic", r.t.Name, "partition", r.p.ID)
				}
				pm.applySettings(r.lp, r.settings)
				r.leader, r.follow = pm.takeRole(r.lp, r.p)
			}
		}()
	}
	stopped := false
feed:
	for i := range todo {
		select {
		case jobs <- i:
		case <-pm.b.stop:
			stopped = true
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	for _, r := range todo {
		if r.follow {
			pm.b.fetchers.Follow(r.lp.Partition, r.leader)
		}
		tp := segment.TopicPartition{Topic: r.t.Name, Partition: r.p.ID}
		if r.lp == nil && r.err == nil {
			continue // not started: the broker is stopping
		}
		if r.err != nil {
			pm.markOffline(tp, r.t.ID, r.err)
		}
	}
	return !stopped
}

// open opens (creating or recovering) a partition's log directory, from its carried
// checkpoint line. Several run at once (openConcurrently): the carried lines are read
// and changed under pm.mu.
func (pm *partitionManager) open(t *metadata.Topic, id int32, s *topicSettings, metaFiles *partitionMetadataFiles) (*localPartition, error) {
	if err := pm.removeCleanShutdownMarker(); err != nil {
		return nil, err
	}
	tp := segment.TopicPartition{Topic: t.Name, Partition: id}
	dir := filepath.Join(pm.dir, segment.PartitionDirName(t.Name, id))
	pm.mu.Lock()
	old, known := pm.cleanTopicIDs[tp]
	delete(pm.cleanTopicIDs, tp)
	rawState := pm.cleanLogStates[tp]
	delete(pm.cleanLogStates, tp)
	_, hasLine := pm.carried[tp]
	pm.mu.Unlock()
	// A replica no checkpoint names is most likely new (a CreateTopics): when its
	// directory is absent, neither its partition.metadata nor its listing is looked up
	// (one failed lookup per replica of a bulk creation instead of three), and the
	// directory is not made: the log makes it when it first writes a file there
	// (segment.Log.makeDir), so a replica that never holds a record costs no inode. One
	// that exists (a crash before its first checkpoint) takes the path below.
	absent := false
	if !known && !hasLine {
		_, err := os.Lstat(dir)
		absent = errors.Is(err, fs.ErrNotExist)
	}
	var oldErr error
	switch {
	case absent:
		oldErr = fs.ErrNotExist
	case !known || old != t.ID: // else the clean shutdown's checkpoint names this topic
		old, oldErr = readPartitionMetadata(dir)
	}
	if errors.Is(oldErr, errMalformedPartitionMetadata) {
		// The replica is ours by assignment: the topic id comes from the image and the
		// file is rewritten below (never a failed open for it).
		pm.b.logger.Warn("ignoring a malformed partition.metadata; taking the topic id from the metadata", "dir", dir, "topic_id", t.ID.String(), "error", oldErr)
	}
	if oldErr == nil && old != t.ID {
		pm.b.logger.Info("removing the data of an earlier topic with the same name", "dir", dir, "old_topic_id", old.String())
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		pm.mu.Lock()
		delete(pm.carried, tp)
		pm.mu.Unlock()
		pm.forgetCleaned(tp)
	}
	pm.mu.Lock()
	prev := pm.carried[tp]
	pm.mu.Unlock()
	if prev != (replication.CloseOffsets{}) && errors.Is(oldErr, fs.ErrNotExist) {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			prev = replication.CloseOffsets{} // a line of data that is gone (a new topic of an old name)
		}
	}
	var shutdownState *segment.ShutdownState
	if known && old == t.ID && rawState != nil {
		// The log as the clean shutdown left it: opened without reading its directory
		// when its offsets agree with the checkpoints (clean_log_states.go).
		if st, err := segment.ParseShutdownState(rawState); err == nil {
			shutdownState = &st
		} else {
			pm.b.logger.Warn("ignoring a malformed log description; loading the log from its files", "topic", t.Name, "partition", id, "error", err)
		}
	}
	log, report, err := segment.Open(dir, pm.logConfig(tp, s), segment.OpenOptions{
		RecoveryPoint:  prev.RecoveryPoint,
		LogStartOffset: prev.LogStartOffset,
		CleanShutdown:  pm.cleanShutdown,
		Decompress:     pm.b.records.Decompress, // time lookups look inside compressed batches
		Files:          pm.b.segFiles,
		DirAbsent:      absent,
		ShutdownState:  shutdownState,
	})
	if err != nil {
		return nil, err
	}
	if report.FromShutdownState {
		pm.fromShutdownState.Add(1)
	}
	pm.mu.Lock()
	// A log an older build's cleaner may have cleaned hides the empty batches it left
	// until the cleaner has checked it (logCleaner.clean).
	log.SetHideEmptyBatches(pm.compactedOnce[tp])
	pm.mu.Unlock()
	if report.Cut != nil {
		pm.b.logger.Warn("recovery cut a torn or corrupt log tail", "topic", t.Name, "partition", id,
			"segment", report.Cut.SegmentBaseOffset, "log_end_offset", report.Cut.Offset,
			"bytes", report.Cut.TruncatedBytes, "reason", report.Cut.Reason)
	}
	// New, the data of an earlier topic removed, missing or malformed, or (unborn) not
	// known to be written: for a log without segment files the write waits for the first
	// segment's birth and its directory fsyncs (no fsync per partition creation), so the
	// file is durable, whole, before the log's first record (Kafka flushes it before the
	// first append); otherwise it is written at once, atomically.
	if oldErr != nil || old != t.ID || log.Unborn() {
		if err := log.WriteMetadataFile(metaFiles.get(t.ID)); err != nil {
			log.Close()
			return nil, err
		}
	}
	lp := &localPartition{topicID: t.ID, Partition: replication.NewPartition(t.Name, id, log, prev.HighWatermark,
		pm.b.replicaMetricsOptions(replication.Options{BrokerID: pm.b.cfg.NodeID, TopicID: t.ID, SyncEveryAppend: s.syncEveryAppend, AlterISR: pm.b.alterISR, ReplicaEligible: pm.replicaEligibleFor(segment.TopicPartition{Topic: t.Name, Partition: id}), Remote: pm.b.remoteLog(),
			Logger: &replicaLogger{Logger: pm.replicaLog, topic: t.Name, partition: id}})),
		counters: pm.b.metrics.Topic(t.Name)}
	lp.settings.Store(s)
	ps, err := lp.LoadProducerState(time.Now().UnixMilli(), pm.b.dynamicBrokerInt64("producer.id.expiration.ms"))
	if err != nil {
		lp.Stop(false)
		return nil, err
	}
	if ps.SnapshotOffset >= 0 || ps.Producers > 0 || len(ps.CorruptSnapshots) > 0 {
		pm.b.logger.Debug("producer state loaded", "topic", t.Name, "partition", id, "snapshot", ps.SnapshotOffset,
			"batches_replayed", ps.BatchesReplayed, "producers", ps.Producers, "corrupt_snapshots", ps.CorruptSnapshots)
	}
	pm.mu.Lock()
	pm.parts[tp] = lp
	delete(pm.carried, tp) // the open replica's own offsets are checkpointed from now on
	pm.mu.Unlock()
	pm.remoteOpened.Store(true) // its remote log state is set at the next pass (remote_log_metadata.go)
	return lp, nil
}

// remove stops a replica; with deleteData its directory is renamed to
// "<topic>-<partition>.<uuid>-delete" and removed after log.segment.delete.delay.ms.
func (pm *partitionManager) remove(tp segment.TopicPartition, deleteData bool) {
	if !deleteData {
		// Its line moves from parts to carried, with the offsets it stops with, in one
		// step as the checkpoint writes see it.
		pm.checkpointMu.Lock()
		defer pm.checkpointMu.Unlock()
	}
	pm.mu.Lock()
	lp := pm.parts[tp]
	delete(pm.parts, tp)
	if deleteData {
		delete(pm.carried, tp)
	}
	pm.mu.Unlock()
	if deleteData {
		pm.b.metrics.ForgetTopic(tp.Topic)
	}
	if lp == nil {
		return
	}
	switch tp.Topic {
	case offsetsTopic:
		pm.b.groups.Unload(tp.Partition)
	case transactionStateTopic:
		pm.b.txns.Unload(tp.Partition)
	}
	pm.b.fetchers.Unfollow(lp.Partition)
	if !deleteData {
		if err := lp.Stop(false); err != nil {
			pm.b.logger.Warn("stopping partition", "topic", tp.Topic, "partition", tp.Partition, "error", err)
		}
		off := lp.CheckpointOffsets()
		pm.mu.Lock()
		pm.carried[tp] = off
		pm.mu.Unlock()
		return
	}
	pm.forgetCleaned(tp)
	var raw [16]byte
	rand.Read(raw[:])
	dir, err := lp.StopForDeletion(hex.EncodeToString(raw[:]))
	if err != nil {
		pm.b.logger.Warn("deleting partition", "topic", tp.Topic, "partition", tp.Partition, "error", err)
		return
	}
	if dir != "" { // else the replica never made its directory
		pm.scheduleDeletion(dir)
	}
}

// scheduleDeletion removes dir after log.segment.delete.delay.ms (the maintenance loop
// does it).
func (pm *partitionManager) scheduleDeletion(dir string) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.pendingDeletes[dir] = time.Now().Add(pm.b.cfg.durationMs("log.segment.delete.delay.ms"))
}

// deleteDue removes the directories whose deletion delay has passed.
func (pm *partitionManager) deleteDue(now time.Time) {
	pm.mu.Lock()
	var due []string
	for dir, at := range pm.pendingDeletes {
		if !now.Before(at) {
			due = append(due, dir)
			delete(pm.pendingDeletes, dir)
		}
	}
	pm.mu.Unlock()
	for _, dir := range due {
		if err := os.RemoveAll(dir); err != nil {
			pm.b.logger.Warn("removing a deleted partition directory", "dir", dir, "error", err)
		}
	}
}

// removeStrays renames for deletion the partition directories left from before this
// start whose replica the caught-up image no longer assigns to this broker — a
// reassignment that completed or a topic deleted while it was down — as Kafka deletes
// stray logs at start. It runs once, after the first reconciliation of a caught-up image,
// so that a directory is never judged against a stale image.
func (pm *partitionManager) removeStrays(live map[segment.TopicPartition]bool) {
	ents, err := os.ReadDir(pm.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasSuffix(e.Name(), segment.DeleteDirSuffix) {
			continue
		}
		topic, partition, err := segment.ParsePartitionDirName(e.Name())
		if err != nil {
			continue
		}
		tp := segment.TopicPartition{Topic: topic, Partition: partition}
		if live[tp] || pm.get(topic, partition) != nil {
			continue
		}
		var raw [16]byte
		rand.Read(raw[:])
		from := filepath.Join(pm.dir, e.Name())
		to := from + "." + hex.EncodeToString(raw[:]) + segment.DeleteDirSuffix
		if err := os.Rename(from, to); err != nil {
			pm.b.logger.Warn("cannot remove a stray partition directory", "dir", from, "error", err)
			continue
		}
		pm.b.logger.Info("removing a stray partition directory: this broker no longer hosts the replica", "topic", topic, "partition", partition)
		pm.mu.Lock()
		delete(pm.carried, tp)
		pm.mu.Unlock()
		pm.forgetCleaned(tp)
		pm.scheduleDeletion(to)
	}
}

// scheduleLeftoverDeletions schedules "-delete" directories found at start.
func (pm *partitionManager) scheduleLeftoverDeletions() {
	ents, err := os.ReadDir(pm.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasSuffix(e.Name(), segment.DeleteDirSuffix) {
			pm.scheduleDeletion(filepath.Join(pm.dir, e.Name()))
		}
	}
}

// topicSettings resolves a topic's configs.
func (b *Broker) topicSettings(im *metadata.Image, topic string) *topicSettings {
	cfgs := b.topicConfigsFor(im, topic)
	atoi := func(name string) int { n, _ := strconv.Atoi(cfgs[name].Value); return n }
	return &topicSettings{
		maxMessageBytes: atoi("max.message.bytes"),
		minInsync:       atoi("min.insync.replicas"),
		segment:         segmentConfig(cfgs),
		syncEveryAppend: cfgs["flush.messages"].Value == "1",
		cleaner:         cleanerConfig(cfgs),
		compression:     compressionConfig(cfgs),
		remoteCopy:      cfgs["remote.storage.enable"].Value == "true" && cfgs["remote.log.copy.disable"].Value != "true",
	}
}
