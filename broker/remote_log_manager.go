package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/tiered"
)

// Kafka's remote.log.manager.task.retry.backoff.ms and .max.ms defaults: a partition
// whose copy failed is tried again after a backoff doubling from the first to the
// second.
const (
	remoteRetryBackoff    = 500 * time.Millisecond
	remoteRetryBackoffMax = 30 * time.Second
	// remoteCallTimeout bounds each call to the object store and each metadata write.
	remoteCallTimeout = 2 * time.Minute
)

// remoteLogManager is Kafka's RemoteLogManager on this broker (KIP-405), started by
// remote.log.storage.system.enable=true: every remote.log.manager.task.interval.ms it
// copies the closed segments of the partitions it leads whose topic has
// remote.storage.enable=true and remote.log.copy.disable=false (tiered.Copier), and,
// on the controller's node, deletes the remote segments of deleted topics. One
// goroutine; no lock held across a call to the store or the controller.
type remoteLogManager struct {
	b        *Broker
	log      hclog.Logger
	storage  tiered.RemoteStorageManager
	copier   *tiered.Copier
	interval time.Duration
	// reads serve remote reads (remote_reads.go).
	reads *remoteReads

	mu sync.Mutex // guards retries and copying
	// retries are the partitions whose last pass failed: when to try again and the
	// next backoff.
	retries map[segment.TopicPartition]remoteRetry
	// copying is the partition being copied, its leader epoch and its cancel (zero
	// when none): a new image that takes its leadership away cancels the copy.
	copying remoteCopying
	// idle is the loop's idle fraction (remote_log_expiration.go).
	idle remoteIdle
}

type remoteRetry struct {
	at      time.Time
	backoff time.Duration
}

type remoteCopying struct {
	topicID   metadata.Uuid
	partition int32
	epoch     int32
	cancel    context.CancelFunc
}

// newRemoteLogManager returns the manager when remote.log.storage.system.enable is
// true (nil otherwise), or why the S3 settings cannot be used: the broker then refuses
// to start.
func newRemoteLogManager(b *Broker) (*remoteLogManager, error) {
	if !b.cfg.boolValue("remote.log.storage.system.enable") {
		return nil, nil
	}
	value := func(name string) string { v, _ := b.cfg.brokerValue(name); return v }
	s3cfg := tiered.S3Config{
		EndpointURL: value(config.RemoteS3EndpointURLProperty), Bucket: value(config.RemoteS3BucketProperty),
		Region: value(config.RemoteS3RegionProperty), PathStyle: config.ParseBool(value(config.RemoteS3PathStyleProperty)),
		AccessKeyID: value(config.RemoteAWSAccessKeyIDProperty), SecretAccessKey: value(config.RemoteAWSSecretAccessKeyProperty),
		KeyPrefix: value(config.RemoteKeyPrefixProperty),
	}
	storage, err := tiered.NewS3Storage(s3cfg)
	if err != nil {
		return nil, fmt.Errorf("remote.log.storage.system.enable=true: %w", err)
	}
	reads, err := newRemoteReads(b, s3cfg) // remote_reads.go
	if err != nil {
		return nil, fmt.Errorf("remote.log.storage.system.enable=true: %w", err)
	}
	staging := filepath.Join(b.cfg.DataDir, "remote-staging")
	if err := os.RemoveAll(staging); err != nil { // links of copies a crash interrupted
		return nil, err
	}
	m := &remoteLogManager{b: b, log: b.logger.Named("remote-log"), storage: storage, reads: reads,
		interval: b.cfg.durationMs("remote.log.manager.task.interval.ms"),
		retries:  map[segment.TopicPartition]remoteRetry{}}
	m.copier = &tiered.Copier{
		Storage: storage, Metadata: remoteLogMetadata{b}, BrokerID: b.cfg.NodeID, StagingDir: staging,
		CallTimeout: remoteCallTimeout, Now: time.Now, NewID: newSegmentID,
		Throttle: tiered.NewThrottle(b.cfg.int64Value("remote.log.manager.copy.max.bytes.per.second"), time.Now),
		Metrics:  m.metrics(),
	}
	return m, nil
}

func newSegmentID() tiered.Uuid {
	var id [16]byte
	rand.Read(id[:]) //nolint:errcheck // never fails (crypto/rand)
	return metadata.UuidFromBytes(id)
}

// run is the manager's loop, until the broker stops.
func (m *remoteLogManager) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.b.goLoop("remote log manager stop", func() {
		select {
		case <-m.b.stop:
			cancel()
		case <-ctx.Done():
		}
	})
	if err := m.b.waitUnfenced(ctx); err != nil {
		return
	}
	ticker := time.NewTicker(m.interval)
	defer ticker.Stop()
	for {
		start := time.Now()
		m.pass(ctx)
		m.idle.observe(start, time.Now(), m.interval)
		select {
		case <-ticker.C:
		case <-ctx.Done():
			return
		}
	}
}

// pass copies each led tiered partition whose retry is due, then (on the controller's
// node) deletes deleted topics' remote segments.
func (m *remoteLogManager) pass(ctx context.Context) {
	parts := m.b.partitions.allSorted()
	for _, lp := range parts {
		if ctx.Err() != nil {
			return
		}
		if s := lp.settings.Load(); s != nil && s.remoteCopy {
			m.copyPartition(ctx, lp)
		}
		m.expire(ctx, lp)
	}
	if m.b.IsController() {
		m.deleteRemoteLogsOfDeletedTopics(ctx)
	}
}

// copyPartition runs one copy pass over lp if this broker leads it and its retry is
// due, under a context the next image cancels if the leadership moves.
func (m *remoteLogManager) copyPartition(ctx context.Context, lp *localPartition) {
	tp := segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}
	now := time.Now()
	m.mu.Lock()
	r, retrying := m.retries[tp]
	m.mu.Unlock()
	if retrying && now.Before(r.at) {
		return
	}
	log := leaderLog{m.b, lp}
	epoch, leads := log.LeaderEpoch()
	if !leads {
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.mu.Lock()
	m.copying = remoteCopying{topicID: lp.topicID, partition: lp.ID, epoch: epoch, cancel: cancel}
	m.mu.Unlock()
	n, err := m.copier.CopyPass(cctx, tiered.TopicIDPartition{TopicID: lp.topicID, Topic: lp.Topic, Partition: lp.ID}, log)
	m.mu.Lock()
	m.copying = remoteCopying{}
	if err == nil || errors.Is(err, tiered.ErrNotLeader) || cctx.Err() != nil {
		delete(m.retries, tp)
	} else {
		r.backoff = min(max(2*r.backoff, remoteRetryBackoff), remoteRetryBackoffMax)
		r.at = time.Now().Add(r.backoff)
		m.retries[tp] = r
	}
	m.mu.Unlock()
	switch {
	case err == nil:
		if n > 0 {
			m.log.Debug("copied segments to remote storage", "topic", lp.Topic, "partition", lp.ID, "segments", n)
		}
	case errors.Is(err, tiered.ErrNotLeader) || cctx.Err() != nil:
		m.log.Debug("remote copy stopped: leadership moved or the broker is stopping", "topic", lp.Topic, "partition", lp.ID, "error", err)
	default:
		m.log.Warn("remote copy failed; retrying after a backoff", "topic", lp.Topic, "partition", lp.ID, "backoff", r.backoff, "error", err)
	}
}

// imageChanged cancels the copy in flight when im no longer names this broker its
// partition's leader at the copy's epoch: copying stops at once (the controller would
// refuse its records anyway). Reconciler goroutine; nil-safe.
func (m *remoteLogManager) imageChanged(im *metadata.Image) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.copying
	if c.cancel == nil {
		return
	}
	t := im.TopicByID(c.topicID)
	if t == nil || int(c.partition) >= len(t.Partitions) ||
		t.Partitions[c.partition].Leader != m.b.cfg.NodeID || t.Partitions[c.partition].LeaderEpoch != c.epoch {
		c.cancel()
	}
}

// deleteRemoteLogsOfDeletedTopics deletes the objects of deleted topics' remote
// segments and records each deletion (the controller's node does it: one broker, always
// one while there is a controller), a partition's DELETE_SEGMENT_STARTED changes in one
// request, its DELETE_SEGMENT_FINISHED ones in another. A failure is retried at the
// next pass.
func (m *remoteLogManager) deleteRemoteLogsOfDeletedTopics(ctx context.Context) {
	rlmm := remoteLogMetadata{m.b}
	for id, rl := range m.b.Image().DeletedRemoteLogs() {
		for partition, segs := range rl.Partitions {
			tp := tiered.TopicIDPartition{TopicID: id, Topic: rl.Name, Partition: partition}
			if err := m.deleteSegments(ctx, rlmm, tp, segs); err != nil {
				m.log.Warn("deleting a deleted topic's remote segments failed; retrying at the next pass",
					"topic", rl.Name, "partition", partition, "error", err)
				return
			}
		}
	}
}

// deleteSegments deletes segs of a deleted topic's partition tp.
func (m *remoteLogManager) deleteSegments(ctx context.Context, rlmm remoteLogMetadata, tp tiered.TopicIDPartition, segs []metadata.RemoteLogSegment) error {
	mds := make([]*tiered.RemoteLogSegmentMetadata, len(segs))
	for i, s := range segs {
		mds[i] = tiered.FromImage(tp, s)
	}
	return m.deleteRemoteSegments(ctx, rlmm, tp, mds, -1)
}

// remoteBatchRecords bounds the changes of one RemoteLogSegments request (one Raft
// entry): the controller refuses more.
const remoteBatchRecords = controller.MaxRemoteLogChangesPerRequest

// writeInBatches writes recs, remoteBatchRecords a request.
func writeInBatches(ctx context.Context, rlmm remoteLogMetadata, recs []metadata.RemoteLogSegmentRecord) error {
	for batch := range slices.Chunk(recs, remoteBatchRecords) {
		if err := errors.Join(rlmm.writeBatch(ctx, batch)...); err != nil {
			return err
		}
	}
	return nil
}
