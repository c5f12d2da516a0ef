package share

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// ErrFencedLeaderEpoch is Kafka's FENCED_LEADER_EPOCH (74) from the share coordinator:
// a write from a leader epoch older than the one the state was last written with.
var ErrFencedLeaderEpoch = errors.New("share: write from a fenced leader epoch")

// DefaultSnapshotUpdateRecords is share.coordinator.snapshot.update.records.per.snapshot
// (500): how many ShareUpdate records follow a ShareSnapshot before the next write is a
// new snapshot.
const DefaultSnapshotUpdateRecords = 500

// State is one share partition's durable state, a ShareSnapshotValue: what the share
// coordinator keeps per key after replaying the last ShareSnapshot and the ShareUpdates
// after it (org.apache.kafka.coordinator.share.ShareGroupOffset). Batches are in
// offset order, do not overlap and start at or after StartOffset.
type State struct {
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32 // -1: not known
	CreateTimestampMs     int64
	WriteTimestampMs      int64
	Batches               []StateBatch
}

// merge lays batches over the state's (later wins, Kafka's PersisterStateBatchCombiner)
// and cuts everything before startOffset. Available batches never delivered are
// dropped: a gap in the batches means the same.
func (s *State) merge(startOffset int64, batches []StateBatch) {
	s.StartOffset = startOffset
	var all []StateBatch
	for _, b := range s.Batches {
		all = append(all, subtract(b, batches)...)
	}
	all = append(all, batches...)
	slices.SortFunc(all, func(a, b StateBatch) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	s.Batches = s.Batches[:0:0]
	for _, b := range all {
		if b.LastOffset < startOffset || (b.DeliveryState == Available && b.DeliveryCount == 0) {
			continue
		}
		b.FirstOffset = max(b.FirstOffset, startOffset)
		s.Batches = appendBatch(s.Batches, b)
	}
}

// subtract returns the parts of b no batch of over covers.
func subtract(b StateBatch, over []StateBatch) []StateBatch {
	parts := []StateBatch{b}
	for _, o := range over {
		var next []StateBatch
		for _, p := range parts {
			if o.LastOffset < p.FirstOffset || o.FirstOffset > p.LastOffset {
				next = append(next, p)
				continue
			}
			if p.FirstOffset < o.FirstOffset {
				l := p
				l.LastOffset = o.FirstOffset - 1
				next = append(next, l)
			}
			if p.LastOffset > o.LastOffset {
				r := p
				r.FirstOffset = o.LastOffset + 1
				next = append(next, r)
			}
		}
		parts = next
	}
	return parts
}

// StateLog is the share coordinator's side of one share partition
// (org.apache.kafka.coordinator.share.ShareCoordinatorShard for one key): it turns a
// leader's changes into __share_group_state records, a ShareSnapshot first and after
// every SnapshotUpdateRecords updates, ShareUpdates in between, and replays those
// records on load. The zero value with Key set is ready; State is valid once Loaded.
type StateLog struct {
	Key Key
	// SnapshotUpdateRecords is share.coordinator.snapshot.update.records.per.snapshot
	// (0: DefaultSnapshotUpdateRecords).
	SnapshotUpdateRecords int
	// State is the merged state the records written or replayed so far describe.
	State State
	// Loaded reports whether a snapshot has been written or replayed.
	Loaded bool

	updates int // ShareUpdates since the last ShareSnapshot
}

// Initialize returns the first record of a share partition: a snapshot of st (Kafka's
// InitializeShareGroupState). A log already holding a state is restarted from st with
// a new snapshot epoch (an AlterShareGroupOffsets reset).
func (l *StateLog) Initialize(st State, nowMs int64) Record {
	if l.Loaded {
		st.SnapshotEpoch = l.State.SnapshotEpoch + 1
		st.CreateTimestampMs = l.State.CreateTimestampMs
	} else {
		st.CreateTimestampMs = nowMs
	}
	st.WriteTimestampMs = nowMs
	l.State, l.Loaded, l.updates = st, true, 0
	return EncodeSnapshot(l.Key, st)
}

// Write returns the record for a leader's change (Kafka's
// ShareCoordinatorShard.writeState): a ShareUpdate, or a ShareSnapshot of the merged
// state when none exists yet or enough updates have piled up. A change from an older
// leader epoch than the state's is ErrFencedLeaderEpoch.
func (l *StateLog) Write(c Change, leaderEpoch int32, nowMs int64) (Record, error) {
	if l.Loaded && leaderEpoch < l.State.LeaderEpoch {
		return Record{}, fmt.Errorf("%w: %d is before %d", ErrFencedLeaderEpoch, leaderEpoch, l.State.LeaderEpoch)
	}
	limit := l.SnapshotUpdateRecords
	if limit <= 0 {
		limit = DefaultSnapshotUpdateRecords
	}
	if !l.Loaded || l.updates >= limit {
		st := l.State
		st.Batches = slices.Clone(st.Batches)
		st.merge(c.StartOffset, c.Batches)
		st.LeaderEpoch, st.DeliveryCompleteCount = leaderEpoch, c.DeliveryCompleteCount
		return l.Initialize(st, nowMs), nil
	}
	u := UpdateValue{
		SnapshotEpoch:         l.State.SnapshotEpoch,
		LeaderEpoch:           leaderEpoch,
		StartOffset:           c.StartOffset,
		DeliveryCompleteCount: c.DeliveryCompleteCount,
		Batches:               c.Batches,
	}
	l.applyUpdate(u)
	return EncodeUpdate(l.Key, u), nil
}

func (l *StateLog) applyUpdate(u UpdateValue) {
	start := l.State.StartOffset
	if u.StartOffset >= 0 {
		start = u.StartOffset
	}
	l.State.merge(start, u.Batches)
	l.State.LeaderEpoch = u.LeaderEpoch
	if u.DeliveryCompleteCount != noDeliveryCompleteCount {
		l.State.DeliveryCompleteCount = u.DeliveryCompleteCount
	}
	l.updates++
}

// Replay applies a record of this log's key read back from __share_group_state (Kafka's
// ShareCoordinatorShard.replay): a snapshot replaces the state, an update of the current
// snapshot epoch is merged in, a tombstone forgets the state. Records of other keys or
// unknown types are ignored.
func (l *StateLog) Replay(r Record) error {
	d, ok, err := DecodeRecord(r.Key, r.Value)
	if err != nil || !ok || d.Key != l.Key {
		return err
	}
	switch {
	case d.Snapshot != nil:
		l.State, l.Loaded, l.updates = *d.Snapshot, true, 0
	case d.Update != nil:
		if l.Loaded && d.Update.SnapshotEpoch == l.State.SnapshotEpoch {
			l.applyUpdate(*d.Update)
		}
	default:
		l.State, l.Loaded, l.updates = State{}, false, 0
	}
	return nil
}
