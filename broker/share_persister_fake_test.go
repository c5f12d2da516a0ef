package broker

// An in-memory share-state Persister for the share group offsets APIs' tests: the
// share coordinator's initialize, summary and delete over a map, recording the calls.

import (
	"context"
	"errors"
	"sync"

	"github.com/petrel-broker/petrel/shareleader"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeSharePersister is an in-memory share-state Persister (safe for concurrent use): each (group, topic id,
// partition) with its state epoch, start offset and leader epoch, as the share
// coordinator's initialize, delete and summary would keep them.
type fakeSharePersister struct {
	mu    sync.Mutex
	state map[fakeShareKey]fakeShareState
	// initialized and deleted count the partitions of each call, for tests to see.
	initialized []kmsg.InitializeShareGroupStateRequest
	deleted     []kmsg.DeleteShareGroupStateRequest
}

type fakeShareKey struct {
	group     string
	topic     [16]byte
	partition int32
}

type fakeShareState struct {
	stateEpoch, leaderEpoch int32
	startOffset             int64
}

var _ shareleader.Persister = (*fakeSharePersister)(nil)

func newFakeSharePersister() *fakeSharePersister {
	return &fakeSharePersister{state: map[fakeShareKey]fakeShareState{}}
}

func (f *fakeSharePersister) InitializeState(_ context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.initialized = append(f.initialized, *req)
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := fakeShareKey{req.GroupID, t.TopicID, p.Partition}
			if cur, ok := f.state[k]; ok && cur.stateEpoch >= p.StateEpoch {
				rp.ErrorCode = kerr.FencedStateEpoch.Code
			} else {
				f.state[k] = fakeShareState{stateEpoch: p.StateEpoch, startOffset: p.StartOffset}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// errFakeSharePersister answers what the share offsets APIs never ask.
var errFakeSharePersister = errors.New("broker: the in-memory share persister keeps no records")

func (f *fakeSharePersister) ReadState(context.Context, *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	return nil, errFakeSharePersister
}

func (f *fakeSharePersister) WriteState(context.Context, *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	return nil, errFakeSharePersister
}

func (f *fakeSharePersister) DeleteState(_ context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, *req)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			delete(f.state, fakeShareKey{req.GroupID, t.TopicID, p.Partition})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (f *fakeSharePersister) ReadStateSummary(_ context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.StartOffset, rp.StateEpoch = p.Partition, -1, -1
			if st, ok := f.state[fakeShareKey{req.GroupID, t.TopicID, p.Partition}]; ok {
				rp.StartOffset, rp.StateEpoch, rp.LeaderEpoch, rp.DeliveryCompleteCount = st.startOffset, st.stateEpoch, st.leaderEpoch, 0
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
