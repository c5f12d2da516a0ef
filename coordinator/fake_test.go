package coordinator

import (
	"encoding/binary"
	"sync"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// fakeLog is an in-memory partition: whole batches, a settable high watermark and role.
type fakeLog struct {
	mu         sync.Mutex
	batches    [][]byte
	logStart   int64
	leo, hw    int64
	role       replication.Role
	epoch      int32
	isr        int
	autoCommit bool  // the high watermark follows every append
	appendErr  error // the next appends fail with it
	watchers   map[*replication.Waiter]struct{}
	txnWrites  []txnWrite // AppendTransactionalAsCoordinator's calls
}

func newFakeLog(epoch int32) *fakeLog {
	return &fakeLog{role: replication.Leader, epoch: epoch, isr: 1, watchers: map[*replication.Waiter]struct{}{}}
}

func (f *fakeLog) notifyLocked() {
	for w := range f.watchers {
		w.Wake()
	}
}

func (f *fakeLog) AppendAsLeaderInEpoch(records []byte, leaderEpoch int32, minInsync int) (segment.AppendInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case leaderEpoch >= 0 && leaderEpoch < f.epoch:
		return segment.AppendInfo{}, replication.ErrFencedLeaderEpoch
	case leaderEpoch > f.epoch:
		return segment.AppendInfo{}, replication.ErrUnknownLeaderEpoch
	case f.role != replication.Leader:
		return segment.AppendInfo{}, replication.ErrNotLeader
	}
	if f.appendErr != nil {
		return segment.AppendInfo{}, f.appendErr
	}
	if f.isr < minInsync {
		return segment.AppendInfo{}, replication.ErrNotEnoughReplicas
	}
	h, err := segment.ValidateBatch(records)
	if err != nil {
		return segment.AppendInfo{}, err
	}
	b := append([]byte(nil), records...)
	binary.BigEndian.PutUint64(b, uint64(f.leo))
	f.batches = append(f.batches, b)
	info := segment.AppendInfo{FirstOffset: f.leo, LastOffset: f.leo + int64(h.LastOffsetDelta)}
	f.leo = info.LastOffset + 1
	if f.autoCommit {
		f.hw = f.leo
	}
	f.notifyLocked()
	return info, nil
}

// AppendTransactionalAsCoordinator records the producer checks asked for and appends
// as AppendAsLeaderInEpoch.
func (f *fakeLog) AppendTransactionalAsCoordinator(records []byte, leaderEpoch int32, minInsync int, verify bool, guard *replication.TxnVerification) (segment.AppendInfo, error) {
	f.mu.Lock()
	f.txnWrites = append(f.txnWrites, txnWrite{verify: verify, guard: guard})
	f.mu.Unlock()
	return f.AppendAsLeaderInEpoch(records, leaderEpoch, minInsync)
}

func (f *fakeLog) AppendMarkerAsLeaderInEpoch(records []byte, leaderEpoch int32, minInsync int, _ int8) (segment.AppendInfo, error) {
	return f.AppendAsLeaderInEpoch(records, leaderEpoch, minInsync)
}

type txnWrite struct {
	verify bool
	guard  *replication.TxnVerification
}

func (f *fakeLog) Read(offset int64, maxBytes int, _ int32, _ replication.ReplicaScope) (replication.FetchResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := replication.FetchResult{Records: []byte{}, HighWatermark: f.hw, LogEndOffset: f.leo, LogStartOffset: f.logStart}
	if f.role != replication.Leader {
		return res, replication.ErrNotLeader
	}
	for _, b := range f.batches {
		h, _ := segment.ParseBatchHeader(b)
		if h.LastOffset() < offset || h.LastOffset() >= f.hw {
			continue
		}
		if len(res.Records) > 0 && len(res.Records)+len(b) > maxBytes {
			break
		}
		res.Records = append(res.Records, b...)
	}
	return res, nil
}

func (f *fakeLog) State() replication.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return replication.State{Role: f.role, LeaderEpoch: f.epoch, LogStartOffset: f.logStart, LogEndOffset: f.leo,
		HighWatermark: f.hw, MaximalISRSize: f.isr}
}

func (f *fakeLog) Watch(w *replication.Waiter) {
	f.mu.Lock()
	f.watchers[w] = struct{}{}
	f.mu.Unlock()
}

func (f *fakeLog) Unwatch(w *replication.Waiter) {
	f.mu.Lock()
	delete(f.watchers, w)
	f.mu.Unlock()
}

// set changes the fake under its lock and wakes the watchers.
func (f *fakeLog) set(fn func(f *fakeLog)) {
	f.mu.Lock()
	fn(f)
	f.notifyLocked()
	f.mu.Unlock()
}
