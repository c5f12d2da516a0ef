package broker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/tiered"
)

// expirePartition is Kafka's RLMExpirationTask on a partition lp this broker leads:
// remote retention (tiered.Expire over the partition's remote segments, its
// retention.ms and retention.bytes, its log start offset and its local bytes not yet
// copied) and, on a topic whose remote storage was turned off with
// remote.log.delete.on.disable=true, every remote segment. Each segment goes by
// DELETE_SEGMENT_STARTED, its objects, DELETE_SEGMENT_FINISHED; then the replica is
// handed the new log start offset. Nothing is deleted while the image and the replica
// disagree on the leadership; a failure is retried at the next pass.
func (m *remoteLogManager) expirePartition(ctx context.Context, lp *localPartition) error {
	set := lp.settings.Load()
	if set == nil {
		return nil
	}
	tp := tiered.TopicIDPartition{TopicID: lp.topicID, Topic: lp.Topic, Partition: lp.ID}
	rlmm := remoteLogMetadata{m.b}
	segs := rlmm.ListRemoteLogSegments(tp)
	if len(segs) == 0 {
		return nil
	}
	log := leaderLog{m.b, lp}
	epoch, leads := log.LeaderEpoch()
	if !leads {
		return nil
	}
	if !set.segment.RemoteStorageEnable {
		// remote.storage.enable turned off, which the controller allows only with
		// remote.log.delete.on.disable=true (KIP-950): the remote data goes.
		return m.deleteRemoteSegments(ctx, rlmm, tp, segs, epoch)
	}
	local, logEnd := log.LeaderEpochs()
	offsets := lp.TieredOffsets()
	var uncopied int64
	_ = lp.WithLog(func(lg *segment.Log) error { // a stopped replica: nothing uncopied
		for _, s := range lg.Segments() {
			if s.BaseOffset >= offsets.HighestCopiedOffset {
				uncopied += s.Size
			}
		}
		return nil
	})
	exp := tiered.Expire(segs, local, logEnd, tiered.RemoteRetentionInput{
		LocalSizeAboveCopied: uncopied, RetentionMs: set.segment.RetentionMs, RetentionBytes: set.segment.RetentionBytes,
		LogStartOffset: offsets.LogStartOffset, NowMs: time.Now().UnixMilli(),
	})
	if len(exp.Delete) == 0 {
		return nil
	}
	if err := m.deleteRemoteSegments(ctx, rlmm, tp, exp.Delete, epoch); err != nil {
		return err
	}
	m.log.Debug("remote retention deleted segments", "topic", lp.Topic, "partition", lp.ID,
		"segments", len(exp.Delete), "log_start_offset", exp.LogStartOffset)
	left := m.b.Image().RemoteLogSegments(lp.topicID, lp.ID)
	lp.SetRemoteLogStateBy(func(epochs []segment.EpochEntry, logEnd int64) (int64, int64) {
		highest, _ := remoteLogBounds(left, epochs, logEnd)
		return highest, exp.LogStartOffset
	})
	return nil
}

// deleteRemoteSegments deletes segs of tp, recorded at leaderEpoch (-1 for a deleted
// topic's): every DELETE_SEGMENT_STARTED first (one request per batch), then each
// segment's objects, then the DELETE_SEGMENT_FINISHED of those deleted. A segment's
// objects go only once its DELETE_SEGMENT_STARTED is recorded; a failure leaves the
// rest in DELETE_SEGMENT_STARTED for the next attempt.
func (m *remoteLogManager) deleteRemoteSegments(ctx context.Context, rlmm remoteLogMetadata, tp tiered.TopicIDPartition, segs []*tiered.RemoteLogSegmentMetadata, leaderEpoch int32) error {
	now := time.Now().UnixMilli()
	record := func(md *tiered.RemoteLogSegmentMetadata, state tiered.RemoteLogSegmentState) metadata.RemoteLogSegmentRecord {
		return tiered.UpdateRecord(md.Update(state, m.b.cfg.NodeID, now), leaderEpoch)
	}
	var starts []metadata.RemoteLogSegmentRecord
	for _, md := range segs {
		if md.State != tiered.DeleteSegmentStarted {
			starts = append(starts, record(md, tiered.DeleteSegmentStarted))
		}
	}
	if err := writeInBatches(ctx, rlmm, starts); err != nil {
		return err
	}
	var finishes []metadata.RemoteLogSegmentRecord
	var failed error
	for _, md := range segs {
		m.metrics().RemoteDeleteRequest(tp.Topic)
		cctx, cancel := context.WithTimeout(ctx, remoteCallTimeout)
		err := m.storage.DeleteLogSegmentData(cctx, md)
		cancel()
		if err != nil {
			m.metrics().RemoteDeleteError(tp.Topic)
			failed = err
			break
		}
		finishes = append(finishes, record(md, tiered.DeleteSegmentFinished))
	}
	if err := writeInBatches(ctx, rlmm, finishes); err != nil {
		return err
	}
	return failed
}

// expire runs expirePartition on lp, logging a failure (retried at the next pass).
func (m *remoteLogManager) expire(ctx context.Context, lp *localPartition) {
	if err := m.expirePartition(ctx, lp); err != nil && ctx.Err() == nil {
		m.log.Warn("remote retention failed; retrying at the next pass", "topic", lp.Topic, "partition", lp.ID, "error", err)
	}
}

// metrics are the broker's remote storage counters.
func (m *remoteLogManager) metrics() tiered.Metrics { return m.b.remoteMetrics() }

// remoteMetrics are the broker's remote storage counters (none before the registry).
func (b *Broker) remoteMetrics() tiered.Metrics {
	if b.metrics == nil {
		return tiered.NopMetrics{}
	}
	return b.metrics
}

// remoteIdle is the remote log manager's idle fraction over its last interval (Kafka's
// RemoteLogManagerTasksAvgIdlePercent): 1 - the time its pass took / the interval,
// at least 0.
type remoteIdle struct{ fraction atomic.Pointer[float64] }

func (r *remoteIdle) observe(start, end time.Time, interval time.Duration) {
	busy := float64(end.Sub(start)) / float64(max(interval, end.Sub(start), 1))
	idle := 1 - busy
	r.fraction.Store(&idle)
}

// idleFraction is the idle fraction, 1 before the first pass and without a manager.
func (m *remoteLogManager) idleFraction() float64 {
	if m == nil {
		return 1
	}
	if f := m.idle.fraction.Load(); f != nil {
		return *f
	}
	return 1
}
