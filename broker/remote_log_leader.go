package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/tiered"
)

// leaderLog is a local replica as the remote log manager's copier sees it
// (tiered.LeaderLog): led by this broker while the image and the replica agree on it.
type leaderLog struct {
	b  *Broker
	lp *localPartition
}

var _ tiered.LeaderLog = leaderLog{}

// LeaderEpoch is the replica's leader epoch while it leads and the image names this
// broker its leader at that epoch.
func (l leaderLog) LeaderEpoch() (int32, bool) {
	st := l.lp.State()
	if st.Role != replication.Leader {
		return 0, false
	}
	t := l.b.Image().TopicByID(l.lp.topicID)
	if t == nil || int(l.lp.ID) >= len(t.Partitions) {
		return 0, false
	}
	p := t.Partitions[l.lp.ID]
	return st.LeaderEpoch, p.Leader == l.b.cfg.NodeID && p.LeaderEpoch == st.LeaderEpoch
}

// LeaderEpochs returns the leader-epoch cache and the log end offset.
func (l leaderLog) LeaderEpochs() (entries []tiered.EpochStart, logEnd int64) {
	l.lp.WithLog(func(lg *segment.Log) error { //nolint:errcheck // a stopped replica: no entries
		entries = tieredEpochs(lg.LeaderEpochs().Entries())
		logEnd = lg.LogEndOffset()
		return nil
	})
	return entries, logEnd
}

// tieredEpochs are a leader-epoch cache's entries as tiered sees them.
func tieredEpochs(entries []segment.EpochEntry) []tiered.EpochStart {
	out := make([]tiered.EpochStart, len(entries))
	for i, e := range entries {
		out[i] = tiered.EpochStart{Epoch: e.Epoch, StartOffset: e.StartOffset}
	}
	return out
}

// CopyableSegments are the closed, non-empty segments that end below min(high
// watermark, last stable offset) and at or above the log start offset: one wholly
// below it (remote retention or DeleteRecords) is deleted uncopied, as Kafka copies
// from the local log start (segment.Log.AdvanceLogStartOffset deletes it at once).
func (l leaderLog) CopyableSegments() ([]tiered.LocalSegment, error) {
	st := l.lp.State()
	upTo := min(st.HighWatermark, st.LastStableOffset)
	var out []tiered.LocalSegment
	err := l.lp.WithLog(func(lg *segment.Log) error {
		segs := lg.Segments()
		for _, s := range segs[:len(segs)-1] { // the last is the active segment
			if s.NextOffset > upTo {
				break
			}
			if s.NextOffset > s.BaseOffset && s.NextOffset > lg.LogStartOffset() {
				out = append(out, tiered.LocalSegment{BaseOffset: s.BaseOffset, LastOffset: s.NextOffset - 1, Size: s.Size, MaxTimestampMs: s.MaxTimestamp})
			}
		}
		return nil
	})
	return out, err
}

// StageSegment hard-links the segment's files into dir under the partition lock (a
// segment retention deletes or the cleaner replaces keeps its old files through the
// links), then writes an empty producer snapshot when the log has none at the
// segment's end.
func (l leaderLog) StageSegment(seg tiered.LocalSegment, dir string) (tiered.LogSegmentData, error) {
	var data tiered.LogSegmentData
	end := seg.LastOffset + 1
	err := l.lp.WithLog(func(lg *segment.Log) error {
		if lg.FirstSegmentBaseOffset() > seg.BaseOffset {
			return fmt.Errorf("segment at %d of %s-%d is gone", seg.BaseOffset, l.lp.Topic, l.lp.ID)
		}
		// Never copy a file changed while the broker was stopped (segment.ErrLogDamaged):
		// the files are linked, not read through the log, so its first open's checks
		// run here.
		if err := lg.CheckSegmentFiles(seg.BaseOffset); err != nil {
			return err
		}
		link := func(src string, optional bool) (string, error) {
			dst := filepath.Join(dir, filepath.Base(src))
			err := os.Link(src, dst)
			if errors.Is(err, os.ErrNotExist) {
				if optional {
					return "", nil
				}
				return dst, os.WriteFile(dst, nil, 0o644) // an index never written
			}
			return dst, err
		}
		name := func(base int64, suffix string) string {
			return filepath.Join(lg.Dir(), fmt.Sprintf("%020d%s", base, suffix))
		}
		var err error
		if data.LogSegment, err = link(name(seg.BaseOffset, segment.LogFileSuffix), false); err != nil {
			return err
		}
		if data.OffsetIndex, err = link(name(seg.BaseOffset, segment.IndexFileSuffix), false); err != nil {
			return err
		}
		if data.TimeIndex, err = link(name(seg.BaseOffset, segment.TimeIndexFileSuffix), false); err != nil {
			return err
		}
		if data.TransactionIndex, err = link(name(seg.BaseOffset, segment.TxnIndexFileSuffix), true); err != nil {
			return err
		}
		data.ProducerSnapshot, err = link(replication.ProducerSnapshotPath(lg.Dir(), end), true)
		return err
	})
	if err != nil {
		return data, err
	}
	if data.TransactionIndex != "" {
		if info, err := os.Stat(data.TransactionIndex); err == nil && info.Size() == 0 {
			data.TransactionIndex = "" // no aborted transaction: copied without one (KIP-1058)
		}
	}
	if data.ProducerSnapshot == "" {
		// Kafka writes the snapshot at the segment's end when the log has none there
		// (trimmed, or the segment predates snapshots): an empty producer state.
		data.ProducerSnapshot = replication.ProducerSnapshotPath(dir, end)
		if err := os.WriteFile(data.ProducerSnapshot, replication.EncodeProducerSnapshot(replication.NewProducerStates()), 0o644); err != nil {
			return data, err
		}
	}
	return data, nil
}
