package coordinator

// One __share_group_state partition's share coordinator shard (Kafka 4.2's
// ShareCoordinatorShard): a share.StateLog per share partition key (group, topic id,
// partition), rebuilt on load by replaying the partition's ShareSnapshot and
// ShareUpdate records.
//
// Each key has two logs. committed holds what the records the high watermark passed
// say, exactly what a load would replay: reads and summaries answer from it. working
// is committed plus the writes still in flight: the epochs are checked against it and
// the next record is computed from it, so two writes in a row build on each other as
// in Kafka. A write whose append fails leaves committed untouched; once no write of
// the key is in flight any more, working is rebuilt from committed.

import (
	"slices"
	"time"

	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ShareStateShard is the share state of one __share_group_state partition. The
// runtime calls it from the partition's executor only.
type ShareStateShard struct {
	snapshotUpdateRecords int
	// partitionExists reports whether a topic id's partition is in the metadata image.
	partitionExists func(topicID [16]byte, partition int32) bool
	committed       map[share.Key]*share.StateLog
	working         map[share.Key]*share.StateLog
	inFlight        map[share.Key]int  // writes of the key not yet settled
	failed          map[share.Key]bool // a write of the key failed since working was last rebuilt
}

// SharePartitionResult is the share coordinator's answer for one share partition:
// the error, or the state (for reads and summaries; StartOffset -1 and StateEpoch 0
// when the partition was never initialized, as Kafka answers).
type SharePartitionResult struct {
	ErrorCode    int16
	ErrorMessage *string
	State        share.State
}

func newShareStateShard(snapshotUpdateRecords int, exists func([16]byte, int32) bool) *ShareStateShard {
	return &ShareStateShard{
		snapshotUpdateRecords: snapshotUpdateRecords,
		partitionExists:       exists,
		committed:             map[share.Key]*share.StateLog{},
		working:               map[share.Key]*share.StateLog{},
		inFlight:              map[share.Key]int{},
		failed:                map[share.Key]bool{},
	}
}

// Replay applies a record read while loading.
func (s *ShareStateShard) Replay(key, value []byte) error {
	s.replayInto(s.committed, share.Record{Key: key, Value: value})
	return nil
}

// replayInto applies r to logs: the log of r's key is created by a snapshot and
// forgotten with a tombstone. Records it cannot decode are skipped, as Kafka's
// loader does.
func (s *ShareStateShard) replayInto(logs map[share.Key]*share.StateLog, r share.Record) {
	d, ok, err := share.DecodeRecord(r.Key, r.Value)
	if err != nil || !ok {
		return
	}
	l := logs[d.Key]
	if l == nil {
		if d.Snapshot == nil {
			return // an update or a tombstone of a state not held
		}
		l = &share.StateLog{Key: d.Key, SnapshotUpdateRecords: s.snapshotUpdateRecords}
		logs[d.Key] = l
	}
	_ = l.Replay(r) // decoded above
	if !l.Loaded {
		delete(logs, d.Key)
	}
}

// Loaded starts serving: the working state is the replayed one.
func (s *ShareStateShard) Loaded(time.Time) Result {
	for k := range s.committed {
		s.resync(k)
	}
	return Result{}
}

// Unloaded answers nothing: the writes in flight get NOT_COORDINATOR from the runtime.
func (s *ShareStateShard) Unloaded(time.Time) Result { return Result{} }

// resync makes k's working log a copy of its committed one.
func (s *ShareStateShard) resync(k share.Key) {
	c := s.committed[k]
	if c == nil {
		delete(s.working, k)
		return
	}
	w := *c
	w.State.Batches = slices.Clone(c.State.Batches)
	s.working[k] = &w
}

// workingLog returns k's working log, created empty (not Loaded) when absent.
func (s *ShareStateShard) workingLog(k share.Key) *share.StateLog {
	l := s.working[k]
	if l == nil {
		l = &share.StateLog{Key: k, SnapshotUpdateRecords: s.snapshotUpdateRecords}
		s.working[k] = l
	}
	return l
}

// write appends r for k and calls done once with its fate: 0 once committed (and
// applied to the committed state), else the runtime's code (the timeout's
// COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...).
func (s *ShareStateShard) write(k share.Key, r share.Record, done func(code int16)) Result {
	s.inFlight[k]++
	answered := false
	answer := func(code int16) {
		if !answered {
			answered = true
			done(code)
		}
	}
	return Result{
		Records: []Record{{Key: r.Key, Value: r.Value}},
		Committed: func(_ time.Time, code int16) Result {
			if code == 0 {
				s.replayInto(s.committed, r)
			} else {
				s.failed[k] = true
			}
			if s.inFlight[k]--; s.inFlight[k] <= 0 {
				delete(s.inFlight, k)
				if s.failed[k] {
					delete(s.failed, k)
					s.resync(k)
				}
			}
			answer(code)
			return Result{}
		},
		TimedOut: func(_ time.Time, code int16) Result { answer(code); return Result{} },
	}
}

// check is Kafka's validation of one share partition of a request: a negative
// partition is INVALID_REQUEST, a topic-partition missing from the metadata image
// UNKNOWN_TOPIC_OR_PARTITION.
func (s *ShareStateShard) check(k share.Key) (int16, bool) {
	switch {
	case k.Partition < 0:
		return kerr.InvalidRequest.Code, false
	case s.partitionExists != nil && !s.partitionExists(k.TopicID, k.Partition):
		return kerr.UnknownTopicOrPartition.Code, false
	}
	return 0, true
}

// Initialize is InitializeShareGroupState for k: a ShareSnapshot with stateEpoch and
// startOffset and no state batches (a new snapshot epoch over an existing state). A
// state epoch older than the state's is FENCED_STATE_EPOCH.
func (s *ShareStateShard) Initialize(now time.Time, k share.Key, stateEpoch int32, startOffset int64, done func(SharePartitionResult)) Result {
	if code, ok := s.check(k); !ok {
		done(SharePartitionResult{ErrorCode: code})
		return Result{}
	}
	l := s.workingLog(k)
	if l.Loaded && stateEpoch < l.State.StateEpoch {
		done(SharePartitionResult{ErrorCode: kerr.FencedStateEpoch.Code})
		return Result{}
	}
	// A start offset set with nothing in flight has no delivered record above it
	// (KIP-1226's count is 0); a state left to share.auto.offset.reset (-1) has none.
	st := share.State{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: startOffset, DeliveryCompleteCount: -1}
	if startOffset >= 0 {
		st.DeliveryCompleteCount = 0
	}
	if l.Loaded {
		st.LeaderEpoch = l.State.LeaderEpoch
	}
	r := l.Initialize(st, now.UnixMilli())
	return s.write(k, r, func(code int16) { done(SharePartitionResult{ErrorCode: code}) })
}

// ShareWrite is one share partition of a WriteShareGroupState request.
type ShareWrite struct {
	StateEpoch  int32
	LeaderEpoch int32
	Change      share.Change
}

// Write is WriteShareGroupState for k (Kafka's writeState): a ShareUpdate, or a
// ShareSnapshot when enough updates piled up. A key not initialized (or deleted) is
// INVALID_REQUEST, a leader epoch older than the state's FENCED_LEADER_EPOCH, a state
// epoch other than the state's FENCED_STATE_EPOCH.
func (s *ShareStateShard) Write(now time.Time, k share.Key, w ShareWrite, done func(SharePartitionResult)) Result {
	if code, ok := s.check(k); !ok {
		done(SharePartitionResult{ErrorCode: code})
		return Result{}
	}
	l := s.working[k]
	if l == nil || !l.Loaded {
		// Never initialized, or deleted with its group: a leader's write does not
		// bring the state back (Kafka's answer).
		msg := "Write operation on uninitialized share partition not allowed."
		done(SharePartitionResult{ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: &msg})
		return Result{}
	}
	if w.StateEpoch >= 0 && w.StateEpoch != l.State.StateEpoch {
		// Older: the state was initialized again (offsets altered) since the leader
		// read it. Newer: the leader read a deleted group's state, and the state was
		// created again since; both are fenced.
		done(SharePartitionResult{ErrorCode: kerr.FencedStateEpoch.Code})
		return Result{}
	}
	c := w.Change
	if c.StartOffset < 0 && l.Loaded {
		c.StartOffset = l.State.StartOffset
	}
	r, err := l.Write(c, w.LeaderEpoch, now.UnixMilli())
	if err != nil {
		done(SharePartitionResult{ErrorCode: kerr.FencedLeaderEpoch.Code})
		return Result{}
	}
	return s.write(k, r, func(code int16) { done(SharePartitionResult{ErrorCode: code}) })
}

// Read is ReadShareGroupState for k (Kafka's readStateAndMaybeUpdateLeaderEpoch): the
// committed state; a leader epoch older than the state's is FENCED_LEADER_EPOCH, a
// newer one is recorded with a ShareUpdate first (the answer waits for it), so that
// the previous leader's writes are fenced from then on. -1 checks nothing. With
// writes of k still in flight (one timed out, or a leader's that it abandoned) the
// answer is ordered after them, through an update that changes nothing: a reload
// never reads a state that an earlier write lands over afterwards.
func (s *ShareStateShard) Read(now time.Time, k share.Key, leaderEpoch int32, done func(SharePartitionResult)) Result {
	if code, ok := s.check(k); !ok {
		done(SharePartitionResult{ErrorCode: code})
		return Result{}
	}
	l := s.workingLog(k)
	answer := func(code int16) {
		if code != 0 {
			done(SharePartitionResult{ErrorCode: code})
			return
		}
		done(SharePartitionResult{State: s.committedState(k)})
	}
	if !l.Loaded || leaderEpoch < 0 || (leaderEpoch == l.State.LeaderEpoch && s.inFlight[k] == 0) {
		if !l.Loaded {
			delete(s.working, k)
		}
		answer(0)
		return Result{}
	}
	if leaderEpoch < l.State.LeaderEpoch {
		done(SharePartitionResult{ErrorCode: kerr.FencedLeaderEpoch.Code})
		return Result{}
	}
	c := share.Change{StartOffset: l.State.StartOffset, DeliveryCompleteCount: l.State.DeliveryCompleteCount}
	r, err := l.Write(c, leaderEpoch, now.UnixMilli())
	if err != nil { // unreachable: the epoch is newer
		done(SharePartitionResult{ErrorCode: kerr.FencedLeaderEpoch.Code})
		return Result{}
	}
	return s.write(k, r, answer)
}

// committedState is k's committed state, or Kafka's answer for a share partition
// never initialized: start offset -1, state epoch 0, leader epoch -1.
func (s *ShareStateShard) committedState(k share.Key) share.State {
	if l := s.committed[k]; l != nil {
		st := l.State
		st.Batches = slices.Clone(st.Batches)
		return st
	}
	return share.State{StartOffset: -1, LeaderEpoch: -1, DeliveryCompleteCount: -1}
}

// Summary is ReadShareGroupStateSummary for k: the committed state's epochs, start
// offset and delivery-complete count, without batches; nothing is fenced or written.
func (s *ShareStateShard) Summary(k share.Key) SharePartitionResult {
	if code, ok := s.check(k); !ok {
		return SharePartitionResult{ErrorCode: code}
	}
	st := s.committedState(k)
	st.Batches = nil
	return SharePartitionResult{State: st}
}

// Delete is DeleteShareGroupState for k: a tombstone, once committed the state is
// forgotten; a key without state is answered at once.
func (s *ShareStateShard) Delete(k share.Key, done func(SharePartitionResult)) Result {
	if k.Partition < 0 {
		done(SharePartitionResult{ErrorCode: kerr.InvalidRequest.Code})
		return Result{}
	}
	if l := s.working[k]; l == nil || !l.Loaded {
		done(SharePartitionResult{})
		return Result{}
	}
	delete(s.working, k)
	return s.write(k, share.Tombstone(k), func(code int16) { done(SharePartitionResult{ErrorCode: code}) })
}
