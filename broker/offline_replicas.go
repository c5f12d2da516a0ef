package broker

// Replicas this broker cannot open or write are never silently advertised (Kafka's
// offline log directory, per replica): the reconciler records each such replica here
// instead of leaving it unopened, clients asking this broker for it are answered
// KAFKA_STORAGE_ERROR (noReplicaError), and the report loop tells the controller
// (AssignReplicasToDirs to Kafka's LOST directory, 73_assign_replicas_to_dirs.go), which
// takes the replica out of the ISR and moves its leadership to another ISR member. The
// reconciler tries to open the replica again at every later image; once it opens it
// follows the leader and rejoins the ISR as any follower does.
//
// A failed write is different: it takes the whole log directory offline, as Kafka's
// LogDirFailureChannel does (failLogDir). The first log to fail a write (its sticky
// ErrLogFailed: an append, fsync, roll or truncation — on a full disk, ENOSPC) or a
// failed checkpoint write marks the directory offline, once, with one ERROR line; the
// reconciler then stops every replica of it and records them all offline, reported to
// the controller like the others, and opens none again, nor any replica assigned here
// later, until the broker restarts: a full file system fails every log in turn, and a
// replica reopened on it would fail again at its first fetch. The broker keeps serving
// (Metadata, forwarded admin requests, KAFKA_STORAGE_ERROR for its replicas; Kafka halts
// when its last log directory fails). Nothing acknowledged is lost: an acknowledged
// record was fsynced, and a restart recovers the logs and rejoins their ISRs.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offlineReportRetry is how often unacknowledged reports are sent again.
const offlineReportRetry = time.Second

// offlineReplica is a replica assigned here that could not be opened or written.
type offlineReplica struct {
	topicID metadata.Uuid
	err     error
	since   time.Time
}

// errLogDirOffline marks the error of a replica whose log directory is offline.
var errLogDirOffline = errors.New("log directory offline")

// offlineReplicas is the broker's set of offline replicas and the state of its log
// directory. mu is a leaf.
type offlineReplicas struct {
	mu   sync.Mutex
	m    map[segment.TopicPartition]offlineReplica
	wake chan struct{} // 1-buffered: the report loop has work
	// dirErr is the log directory's failure (wrapping errLogDirOffline), nil while it is
	// online. Set once, kept until the broker restarts. Guarded by mu.
	dirErr error
}

// failDir records the log directory offline because of err; it reports whether it was
// online before.
func (o *offlineReplicas) failDir(err error) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dirErr != nil {
		return false
	}
	o.dirErr = fmt.Errorf("%w: %w", errLogDirOffline, err)
	return true
}

// dirFailure is the log directory's failure, or nil while it is online.
func (o *offlineReplicas) dirFailure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dirErr
}

func newOfflineReplicas() *offlineReplicas {
	return &offlineReplicas{m: map[segment.TopicPartition]offlineReplica{}, wake: make(chan struct{}, 1)}
}

// add records tp as offline; it reports whether tp was not offline before.
func (o *offlineReplicas) add(tp segment.TopicPartition, topicID metadata.Uuid, err error) bool {
	o.mu.Lock()
	_, had := o.m[tp]
	if !had {
		o.m[tp] = offlineReplica{topicID: topicID, err: err, since: time.Now()}
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return !had
}

// remove forgets tp (opened after all, or no longer assigned here).
func (o *offlineReplicas) remove(tp segment.TopicPartition) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, had := o.m[tp]
	delete(o.m, tp)
	return had
}

// retain forgets the replicas not in live (no longer assigned here).
func (o *offlineReplicas) retain(live map[segment.TopicPartition]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for tp := range o.m {
		if !live[tp] {
			delete(o.m, tp)
		}
	}
}

// get returns tp's record and whether it is offline.
func (o *offlineReplicas) get(topic string, partition int32) (offlineReplica, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.m[segment.TopicPartition{Topic: topic, Partition: partition}]
	return r, ok
}

// count is how many replicas are offline.
func (o *offlineReplicas) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.m)
}

// unreported returns the offline replicas the image still has this broker lead or in the
// ISR of: what the controller must still be told.
func (o *offlineReplicas) unreported(im *metadata.Image, self int32) []metadata.ReplicaRef {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []metadata.ReplicaRef
	for tp, r := range o.m {
		t := im.Topic(tp.Topic)
		if t == nil || t.ID != r.topicID || int(tp.Partition) >= len(t.Partitions) {
			continue
		}
		if p := t.Partitions[tp.Partition]; p.Leader == self || slices.Contains(p.ISR, self) {
			out = append(out, metadata.ReplicaRef{TopicID: r.topicID, Partition: tp.Partition})
		}
	}
	return out
}

// waiting reports whether offline replica tp must not be opened again yet: the image
// still has this broker lead it, or in the ISR of a partition with a leader. A replica
// that failed while leading is reopened (and its log recovered) only as a follower, so
// it never leads again in the epoch in which its log may have lost a tail.
func (o *offlineReplicas) waiting(tp segment.TopicPartition, p *metadata.Partition, self int32) bool {
	if _, ok := o.get(tp.Topic, tp.Partition); !ok {
		return false
	}
	return p.Leader == self || (p.Leader >= 0 && slices.Contains(p.ISR, self))
}

// logFailed reports whether err is a log's sticky failure, which takes its replica
// offline at the reconciler's next pass (reconcilePartition): a failed write
// (segment.ErrLogFailed, the whole directory with it) or files changed while the broker
// was stopped (segment.ErrLogDamaged, that replica alone).
func logFailed(err error) bool {
	return errors.Is(err, segment.ErrLogFailed) || errors.Is(err, segment.ErrLogDamaged)
}

// markOffline records a replica the reconciler could not open or whose log failed
// (logged once; not at all when the log directory is offline: failLogDir said it).
func (pm *partitionManager) markOffline(tp segment.TopicPartition, topicID metadata.Uuid, err error) {
	if pm.b.offline.add(tp, topicID, err) && pm.b.offline.dirFailure() == nil {
		pm.b.logger.Error("replica offline: its log cannot be opened or written; reporting it to the controller",
			"topic", tp.Topic, "partition", tp.Partition, "error", err)
	}
}

// failLogDir takes the log directory offline after a failed write (see the file
// comment): once, with one ERROR line; the reconciler then takes every replica offline.
func (pm *partitionManager) failLogDir(err error) {
	if !pm.b.offline.failDir(err) {
		return
	}
	pm.b.logger.Error("log directory offline: a write failed; every replica in it is offline until the broker restarts "+
		"(the controller moves their leaderships and ISR memberships to other brokers)",
		"dir", pm.dir, "replicas", len(pm.all()), "error", err)
	pm.recheck()
}

// offlineByDir stops the open replica lp (nil when not open) of tp because the log
// directory is offline, and records it offline. It reports whether the directory is
// offline.
func (pm *partitionManager) offlineByDir(tp segment.TopicPartition, topicID metadata.Uuid, lp *localPartition) bool {
	err := pm.b.offline.dirFailure()
	if err == nil {
		return false
	}
	if lp != nil {
		pm.remove(tp, false)
	}
	pm.markOffline(tp, topicID, err)
	return true
}

// recheck makes the reconciler run again on the current image (a replica's log failed).
func (pm *partitionManager) recheck() {
	select {
	case pm.recheckCh <- struct{}{}:
	default:
	}
}

// offlineReportLoop sends the controller the offline replicas it has not yet taken out of
// their ISR and leadership, whenever one is added and every offlineReportRetry while any
// remains unacknowledged in the image.
func (b *Broker) offlineReportLoop() {
	tick := time.NewTicker(offlineReportRetry)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-b.offline.wake:
		case <-tick.C:
			if b.offline.count() == 0 {
				continue
			}
		}
		if b.brokerEpoch.Load() < 0 {
			continue // not registered yet: the tick retries
		}
		refs := b.offline.unreported(b.Image(), b.cfg.NodeID)
		if len(refs) == 0 {
			continue
		}
		if err := b.reportOffline(refs); err != nil {
			b.logger.Warn("reporting offline replicas to the controller", "replicas", len(refs), "error", err)
		}
	}
}

// reportOffline sends one AssignReplicasToDirs naming refs in Kafka's LOST directory.
func (b *Broker) reportOffline(refs []metadata.ReplicaRef) error {
	ctx, cancel := b.waitTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.Version = 0
	req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, b.brokerEpoch.Load()
	d := kmsg.NewAssignReplicasToDirsRequestDirectory()
	d.ID = lostDirectoryID
	byTopic := map[metadata.Uuid]int{}
	for _, r := range refs {
		i, ok := byTopic[r.TopicID]
		if !ok {
			i = len(d.Topics)
			byTopic[r.TopicID] = i
			t := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
			t.TopicID = r.TopicID
			d.Topics = append(d.Topics, t)
		}
		p := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
		p.Partition = r.Partition
		d.Topics[i].Partitions = append(d.Topics[i].Partitions, p)
	}
	req.Directories = append(req.Directories, d)
	resp, err := b.controllerCall(ctx, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.AssignReplicasToDirsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return err
	}
	b.logger.Info("controller took offline replicas out of their ISR and leadership", "replicas", len(refs))
	return nil
}
