package tiered

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LocalSegment is a closed local segment the remote log manager may copy.
type LocalSegment struct {
	BaseOffset     int64 // its first offset
	LastOffset     int64 // its last offset, inclusive
	Size           int64 // the log's bytes
	MaxTimestampMs int64 // the largest record timestamp in it
}

// LeaderLog is a partition this broker leads, as the copier sees it; the broker
// implements it over its replica. Its methods are safe for concurrent use and never
// wait on the network.
type LeaderLog interface {
	// LeaderEpoch returns the leader epoch this broker leads the partition in, false
	// once it no longer leads it.
	LeaderEpoch() (int32, bool)
	// LeaderEpochs returns the local leader-epoch cache's entries, ascending, and the
	// log end offset.
	LeaderEpochs() ([]EpochStart, int64)
	// CopyableSegments returns the closed (not active) segments whose last offset is
	// below min(high watermark, last stable offset), oldest first.
	CopyableSegments() ([]LocalSegment, error)
	// StageSegment puts seg's files in dir — hard links, so that retention, a roll or
	// the cleaner cannot change them under the copy — with the producer snapshot at
	// the segment's end (written there when the log has none, as Kafka does), and
	// returns them; LeaderEpochIndex is left for the copier.
	StageSegment(seg LocalSegment, dir string) (LogSegmentData, error)
}

// ErrNotLeader stops a copy pass: this broker no longer leads the partition.
var ErrNotLeader = errors.New("tiered: no longer the partition's leader")

// ErrSegmentUnknown is a RemoteLogMetadataManager's refusal of a change to a segment
// the metadata does not hold (its topic was deleted and its record dropped) or holds in
// a state the change cannot follow: the objects of such a segment are nobody's.
var ErrSegmentUnknown = errors.New("tiered: remote segment unknown to the metadata or in another state")

// Copier is the copy task of Kafka's RemoteLogManager (RLMCopyTask) for one partition
// at a time: synchronous, no goroutines; the broker runs it on each partition it leads
// every remote.log.manager.task.interval.ms. It holds no lock across a call to the
// store or to the controller.
type Copier struct {
	Storage  RemoteStorageManager
	Metadata RemoteLogMetadataManager
	// BrokerID is this broker, the segments' BrokerID.
	BrokerID int32
	// StagingDir holds the hard links of the segment being copied.
	StagingDir string
	// CallTimeout bounds each call to the store (and each metadata write).
	CallTimeout time.Duration
	// Throttle paces the copies (remote.log.manager.copy.max.bytes.per.second); nil:
	// unthrottled.
	Throttle *Throttle
	// Now is the clock; NewID returns a fresh segment id.
	Now   func() time.Time
	NewID func() Uuid
	// Metrics counts the copies; nil: none.
	Metrics Metrics
}

func (c *Copier) metrics() Metrics {
	if c.Metrics == nil {
		return NopMetrics{}
	}
	return c.Metrics
}

// CopyPass copies tp's copyable segments above its highest copied offset, oldest
// first: for each, COPY_SEGMENT_STARTED with a new id, the objects, then
// COPY_SEGMENT_FINISHED. A copy that fails is abandoned — DELETE_SEGMENT_STARTED, its
// objects deleted, DELETE_SEGMENT_FINISHED — and the pass ends with the error, for the
// caller to retry after a backoff. Copies left in COPY_SEGMENT_STARTED (or deletions in
// DELETE_SEGMENT_STARTED) by an earlier leader or pass are abandoned first. The pass
// stops with ErrNotLeader as soon as log says this broker no longer leads, and with the
// controller's refusal when the epoch is fenced. It returns how many segments it
// copied.
func (c *Copier) CopyPass(ctx context.Context, tp TopicIDPartition, log LeaderLog) (int, error) {
	epoch, ok := log.LeaderEpoch()
	if !ok {
		return 0, ErrNotLeader
	}
	for _, md := range c.Metadata.ListRemoteLogSegments(tp) {
		if md.State == CopySegmentStarted || md.State == DeleteSegmentStarted {
			if err := c.Abandon(ctx, md, epoch); err != nil {
				return 0, err
			}
		}
	}
	segs, err := log.CopyableSegments()
	if err != nil {
		return 0, err
	}
	copied := 0
	for _, seg := range segs {
		epochs, logEnd := log.LeaderEpochs()
		if seg.LastOffset <= HighestCopiedOffset(c.Metadata, tp, epochs, logEnd) {
			continue
		}
		if epoch, ok = log.LeaderEpoch(); !ok {
			return copied, ErrNotLeader
		}
		if c.Throttle != nil {
			if err := c.Throttle.Wait(ctx, seg.Size); err != nil {
				return copied, err
			}
		}
		if err := c.copySegment(ctx, tp, log, seg, epochs, epoch); err != nil {
			return copied, err
		}
		copied++
	}
	return copied, nil
}

// copySegment copies one segment, abandoning it on failure.
func (c *Copier) copySegment(ctx context.Context, tp TopicIDPartition, log LeaderLog, seg LocalSegment, epochs []EpochStart, epoch int32) error {
	md := &RemoteLogSegmentMetadata{
		SegmentID:   RemoteLogSegmentID{TopicIDPartition: tp, ID: c.NewID()},
		StartOffset: seg.BaseOffset, EndOffset: seg.LastOffset, MaxTimestampMs: seg.MaxTimestampMs,
		BrokerID: c.BrokerID, EventTimestampMs: c.Now().UnixMilli(),
		SegmentLeaderEpochs: SegmentEpochs(epochs, seg.BaseOffset, seg.LastOffset),
		SegmentSizeInBytes:  int32(min(seg.Size, 1<<31-1)), State: CopySegmentStarted,
	}
	if err := md.Validate(); err != nil {
		return fmt.Errorf("segment at %d of %s-%d: %w", seg.BaseOffset, tp.Topic, tp.Partition, err)
	}
	dir := filepath.Join(c.StagingDir, fmt.Sprintf("%s-%d-%s", tp.Topic, tp.Partition, md.SegmentID.ID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	data, err := log.StageSegment(seg, dir)
	if err != nil {
		return err
	}
	data.LeaderEpochIndex = EpochCheckpoint(epochs, seg.LastOffset+1)
	md.TxnIdxEmpty = data.TransactionIndex == ""
	if err := c.withTimeout(ctx, func(ctx context.Context) error { return c.Metadata.AddRemoteLogSegmentMetadata(ctx, md, epoch) }); err != nil {
		return err
	}
	c.metrics().RemoteCopyRequest(tp.Topic)
	err = c.withTimeout(ctx, func(ctx context.Context) error { return c.Storage.CopyLogSegmentData(ctx, md, data) })
	if err != nil {
		c.metrics().RemoteCopyError(tp.Topic)
	} else {
		c.metrics().RemoteCopied(tp.Topic, seg.Size)
	}
	if err == nil {
		if _, ok := log.LeaderEpoch(); !ok {
			err = ErrNotLeader
		}
	}
	if err == nil {
		u := md.Update(CopySegmentFinished, c.BrokerID, c.Now().UnixMilli())
		if err = c.withTimeout(ctx, func(ctx context.Context) error { return c.Metadata.UpdateRemoteLogSegmentMetadata(ctx, u, epoch) }); err == nil {
			return nil
		}
	}
	if aerr := c.Abandon(ctx, md, epoch); aerr != nil {
		err = errors.Join(err, aerr)
	}
	return err
}

// Abandon deletes a remote segment that is not (or no longer) being copied:
// DELETE_SEGMENT_STARTED unless it is there already, its objects deleted,
// DELETE_SEGMENT_FINISHED; leaderEpoch is the writer's (-1 for a deleted topic's
// segment). A failure leaves it in DELETE_SEGMENT_STARTED for the next attempt. When
// the metadata refuses the deletion as ErrSegmentUnknown (the topic's deletion removed
// the segment while this broker was still copying it), the objects are deleted all the
// same: no record names them any more.
func (c *Copier) Abandon(ctx context.Context, md *RemoteLogSegmentMetadata, leaderEpoch int32) error {
	if md.State != DeleteSegmentStarted {
		u := md.Update(DeleteSegmentStarted, c.BrokerID, c.Now().UnixMilli())
		if err := c.withTimeout(ctx, func(ctx context.Context) error { return c.Metadata.UpdateRemoteLogSegmentMetadata(ctx, u, leaderEpoch) }); err != nil {
			if errors.Is(err, ErrSegmentUnknown) {
				err = errors.Join(err, c.withTimeout(ctx, func(ctx context.Context) error { return c.deleteObjects(ctx, md) }))
			}
			return err
		}
	}
	if err := c.withTimeout(ctx, func(ctx context.Context) error { return c.deleteObjects(ctx, md) }); err != nil {
		return err
	}
	u := md.Update(DeleteSegmentFinished, c.BrokerID, c.Now().UnixMilli())
	return c.withTimeout(ctx, func(ctx context.Context) error { return c.Metadata.UpdateRemoteLogSegmentMetadata(ctx, u, leaderEpoch) })
}

// deleteObjects deletes md's objects, counting the deletion and its failure.
func (c *Copier) deleteObjects(ctx context.Context, md *RemoteLogSegmentMetadata) error {
	c.metrics().RemoteDeleteRequest(md.SegmentID.TopicIDPartition.Topic)
	err := c.Storage.DeleteLogSegmentData(ctx, md)
	if err != nil {
		c.metrics().RemoteDeleteError(md.SegmentID.TopicIDPartition.Topic)
	}
	return err
}

func (c *Copier) withTimeout(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.CallTimeout)
	defer cancel()
	return fn(ctx)
}

// SegmentEpochs are the leader epochs of the offsets [base, last] by the local cache's
// entries (ascending): the epoch in effect at base, starting at base, then each epoch
// that starts inside. An offset before every entry is taken to be in the first one.
func SegmentEpochs(entries []EpochStart, base, last int64) []EpochStart {
	var out []EpochStart
	for i, e := range entries {
		if e.StartOffset > last {
			break
		}
		if i+1 < len(entries) && entries[i+1].StartOffset <= base {
			continue // ended before the segment
		}
		out = append(out, EpochStart{Epoch: e.Epoch, StartOffset: max(e.StartOffset, base)})
	}
	return out
}

// EpochCheckpoint is the leader-epoch checkpoint file (Kafka's format: version 0, the
// count, then "epoch startOffset" lines) of the entries that start below end.
func EpochCheckpoint(entries []EpochStart, end int64) []byte {
	var lines []string
	for _, e := range entries {
		if e.StartOffset < end {
			lines = append(lines, strconv.FormatInt(int64(e.Epoch), 10)+" "+strconv.FormatInt(e.StartOffset, 10))
		}
	}
	return []byte("0\n" + strconv.Itoa(len(lines)) + "\n" + strings.Join(append(lines, ""), "\n"))
}
