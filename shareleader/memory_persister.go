package shareleader

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MemoryPersister is a Persister that keeps the partition leaders' share state in
// memory with the share coordinator's merge rules (share.StateLog): ReadState and
// WriteState, for tests of the share-partition leader. Nothing survives the process.
// Safe for concurrent use.
type MemoryPersister struct {
	mu   sync.Mutex
	logs map[share.Key]*share.StateLog // guarded by mu
}

// NewMemoryPersister returns an empty MemoryPersister.
func NewMemoryPersister() *MemoryPersister {
	return &MemoryPersister{logs: map[share.Key]*share.StateLog{}}
}

func (m *MemoryPersister) logLocked(k share.Key) *share.StateLog {
	l := m.logs[k]
	if l == nil {
		l = &share.StateLog{Key: k}
		m.logs[k] = l
	}
	return l
}

// State returns key's state; ok is false when none was written.
func (m *MemoryPersister) State(key share.Key) (share.State, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logs[key]
	if l == nil || !l.Loaded {
		return share.State{}, false
	}
	return l.State, true
}

// ReadState answers each partition's state: start offset -1 when never written.
func (m *MemoryPersister) ReadState(_ context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			l := m.logLocked(share.Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition})
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.StartOffset, rp.StateEpoch = p.Partition, -1, l.State.StateEpoch
			if l.Loaded {
				rp.StartOffset = l.State.StartOffset
				for _, b := range l.State.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset = b.FirstOffset, b.LastOffset
					sb.DeliveryState, sb.DeliveryCount = int8(b.DeliveryState), b.DeliveryCount
					rp.StateBatches = append(rp.StateBatches, sb)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// WriteState merges each partition's change; a leader epoch older than the state's
// is FENCED_LEADER_EPOCH.
func (m *MemoryPersister) WriteState(_ context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			l := m.logLocked(share.Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition})
			if _, err := l.Write(ChangeOfWrite(p), p.LeaderEpoch, time.Now().UnixMilli()); errors.Is(err, share.ErrFencedLeaderEpoch) {
				rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// ErrNotKept is MemoryPersister's answer to the calls of the group coordinator and
// the admin APIs (InitializeShareGroupState, DeleteShareGroupState,
// ReadShareGroupStateSummary): it keeps only what a partition leader reads and writes.
var ErrNotKept = errors.New("shareleader: the memory persister keeps only the partition leaders' reads and writes")

// InitializeState fails with ErrNotKept.
func (m *MemoryPersister) InitializeState(context.Context, *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	return nil, ErrNotKept
}

// DeleteState fails with ErrNotKept.
func (m *MemoryPersister) DeleteState(context.Context, *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	return nil, ErrNotKept
}

// ReadStateSummary fails with ErrNotKept.
func (m *MemoryPersister) ReadStateSummary(context.Context, *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	return nil, ErrNotKept
}

// ChangeOfWrite is the share.Change a WriteShareGroupState partition carries.
func ChangeOfWrite(p kmsg.WriteShareGroupStateRequestTopicPartition) share.Change {
	c := share.Change{StartOffset: p.StartOffset, DeliveryCompleteCount: p.DeliveryCompleteCount}
	for _, b := range p.StateBatches {
		c.Batches = append(c.Batches, share.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
			DeliveryState: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
	}
	return c
}
