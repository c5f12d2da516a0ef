package shareleader

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeReplica is a led partition whose log is header-only record batches.
type fakeReplica struct {
	mu          sync.Mutex
	leaderEpoch int32
	role        replication.Role
	logStart    int64
	batches     [][]byte // in offset order
	next        int64    // log end offset (= high watermark)
	waiters     map[*replication.Waiter]bool
	aborted     []replication.AbortedTxn // answered to read_committed reads
	localStart  int64                    // reads below it are ErrOffsetMovedToTieredStorage
}

func newFakeReplica(epoch int32) *fakeReplica {
	return &fakeReplica{leaderEpoch: epoch, role: replication.Leader, waiters: map[*replication.Waiter]bool{}}
}

// batchHeader is a record batch of n records at base with no record bodies: enough
// for segment.ParseBatchHeader.
func batchHeader(base int64, n int32) []byte {
	b := make([]byte, 61)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], 49)
	b[16] = 2 // magic
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	return b
}

// produce appends a batch of n records and wakes the waiters.
func (r *fakeReplica) produce(n int32) { r.produceTxn(n, -1, 0) }

// produceTxn appends a batch of n records of producerID with attributes (0x10
// transactional, 0x20 control) and wakes the waiters.
func (r *fakeReplica) produceTxn(n int32, producerID int64, attributes uint16) {
	r.mu.Lock()
	b := batchHeader(r.next, n)
	binary.BigEndian.PutUint16(b[21:], attributes)
	binary.BigEndian.PutUint64(b[43:], uint64(producerID))
	r.batches = append(r.batches, b)
	r.next += int64(n)
	ws := make([]*replication.Waiter, 0, len(r.waiters))
	for w := range r.waiters {
		ws = append(ws, w)
	}
	r.mu.Unlock()
	for _, w := range ws {
		w.Wake()
	}
}

func (r *fakeReplica) State() replication.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return replication.State{Role: r.role, LeaderEpoch: r.leaderEpoch, LogStartOffset: r.logStart,
		LogEndOffset: r.next, HighWatermark: r.next, LastStableOffset: r.next}
}

func (r *fakeReplica) ReadIsolated(offset int64, maxBytes int, epoch int32, _ replication.ReplicaScope, readCommitted bool) (replication.FetchResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.role != replication.Leader {
		return replication.FetchResult{}, replication.ErrNotLeader
	}
	if epoch >= 0 && epoch != r.leaderEpoch {
		return replication.FetchResult{}, replication.ErrFencedLeaderEpoch
	}
	if offset < r.localStart {
		return replication.FetchResult{}, replication.ErrOffsetMovedToTieredStorage
	}
	return r.readLocked(offset, maxBytes, readCommitted), nil
}

// readLocked reads whole batches from offset, ignoring the local start (the remote
// tier's view). Callers hold mu.
func (r *fakeReplica) readLocked(offset int64, maxBytes int, readCommitted bool) replication.FetchResult {
	res := replication.FetchResult{Records: []byte{}, HighWatermark: r.next, LastStableOffset: r.next, LogStartOffset: r.logStart, LogEndOffset: r.next}
	if readCommitted {
		res.Aborted = r.aborted
	}
	for _, b := range r.batches {
		base := int64(binary.BigEndian.Uint64(b))
		last := base + int64(binary.BigEndian.Uint32(b[23:]))
		if last < offset {
			continue
		}
		if len(res.Records) > 0 && len(res.Records)+len(b) > maxBytes {
			break
		}
		res.Records = append(res.Records, b...)
	}
	return res
}

func (r *fakeReplica) ListOffset(q replication.OffsetQuery) (replication.ListedOffset, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch q.Timestamp {
	case -2:
		return replication.ListedOffset{Offset: r.logStart}, nil
	case -1:
		return replication.ListedOffset{Offset: r.next}, nil
	}
	return replication.ListedOffset{Offset: -1}, nil
}

func (r *fakeReplica) Watch(w *replication.Waiter) {
	r.mu.Lock()
	r.waiters[w] = true
	r.mu.Unlock()
}

func (r *fakeReplica) Unwatch(w *replication.Waiter) {
	r.mu.Lock()
	delete(r.waiters, w)
	r.mu.Unlock()
}

// fakeReplicas leads the replicas it holds.
type fakeReplicas struct {
	mu sync.Mutex
	m  map[TopicPartition]*fakeReplica
}

func (f *fakeReplicas) Leader(id [16]byte, p int32) (Replica, int16) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.m[TopicPartition{id, p}]
	if r == nil {
		return nil, 6
	}
	if r.State().Role != replication.Leader {
		return nil, 6
	}
	return r, 0
}

// persisterCall is one call a fakePersister saw.
type persisterCall struct {
	api         string // "read" or "write"
	leaderEpoch int32
	stateEpoch  int32
	change      share.Change
}

// fakePersister is a MemoryPersister recording every read and write. A write waits
// for gate (when set) before it is applied, and is refused with fail (when set).
type fakePersister struct {
	*MemoryPersister
	mu    sync.Mutex
	calls []persisterCall
	gate  chan struct{}
	fail  int16
	// arrived counts the writes received, before the gate.
	arrived int
}

func newFakePersister() *fakePersister { return &fakePersister{MemoryPersister: NewMemoryPersister()} }

func (f *fakePersister) ReadState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	f.mu.Lock()
	f.calls = append(f.calls, persisterCall{api: "read", leaderEpoch: req.Topics[0].Partitions[0].LeaderEpoch})
	f.mu.Unlock()
	return f.MemoryPersister.ReadState(ctx, req)
}

func (f *fakePersister) WriteState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	f.mu.Lock()
	gate := f.gate
	f.arrived++
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	p := req.Topics[0].Partitions[0]
	f.calls = append(f.calls, persisterCall{api: "write", leaderEpoch: p.LeaderEpoch, stateEpoch: p.StateEpoch, change: ChangeOfWrite(p)})
	fail := f.fail
	f.mu.Unlock()
	if fail != 0 {
		resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = req.Topics[0].TopicID
		rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.Partition, fail
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil
	}
	return f.MemoryPersister.WriteState(ctx, req)
}

func (f *fakePersister) callsSoFar() []persisterCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]persisterCall(nil), f.calls...)
}

var testTopic = [16]byte{1, 2, 3}

// rig is a manager over one led partition (testTopic/0) and a fake persister.
type rig struct {
	t       *testing.T
	m       *Manager
	replica *fakeReplica
	pers    *fakePersister
	reps    *fakeReplicas
}

func newRig(t *testing.T, cfg GroupConfig, opts ...func(*Config)) *rig {
	r := &rig{t: t, replica: newFakeReplica(7), pers: newFakePersister()}
	r.reps = &fakeReplicas{m: map[TopicPartition]*fakeReplica{{testTopic, 0}: r.replica}}
	mc := Config{
		Persister:   func() Persister { return r.pers },
		Replicas:    r.reps,
		GroupConfig: func(string) GroupConfig { return cfg },
	}
	for _, o := range opts {
		o(&mc)
	}
	r.m = New(mc)
	t.Cleanup(func() { r.m.Close() })
	return r
}

// fetch sends a ShareFetch of testTopic/0 (named when epoch is 0) with acks, and
// answers it without waiting.
func (r *rig) fetch(ctx context.Context, member string, epoch int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) fetchView {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr(member)
	req.ShareSessionEpoch, req.MaxRecords, req.BatchSize, req.MaxBytes = epoch, 500, 500, 1<<20
	if epoch == 0 || len(acks) > 0 {
		p := kmsg.NewShareFetchRequestTopicPartition()
		p.Partition, p.AcknowledgementBatches = 0, acks
		t := kmsg.NewShareFetchRequestTopic()
		t.TopicID, t.Partitions = testTopic, []kmsg.ShareFetchRequestTopicPartition{p}
		req.Topics = append(req.Topics, t)
	}
	f := r.m.ShareFetch(ctx, req, RequestOptions{ConnCtx: ctx})
	return viewOf(f.Response())
}

// fetchView is a ShareFetch answer's top-level code and testTopic/0's entry.
type fetchView struct {
	code  int16
	part  kmsg.ShareFetchResponseTopicPartition
	found bool
}

func viewOf(resp *kmsg.ShareFetchResponse) fetchView {
	v := fetchView{code: resp.ErrorCode}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.TopicID == testTopic && p.Partition == 0 {
				v.part, v.found = p, true
			}
		}
	}
	return v
}

// acquiredOffsets flattens the acquired ranges as "first-last@count".
func (v fetchView) acquired() []string {
	var out []string
	for _, a := range v.part.AcquiredRecords {
		out = append(out, fmt.Sprintf("%d-%d@%d", a.FirstOffset, a.LastOffset, a.DeliveryCount))
	}
	return out
}

// ack is an acknowledgement batch of one type.
func ack(first, last int64, t share.AcknowledgeType) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{int8(t)}
	return b
}

// acknowledge sends a ShareAcknowledge of testTopic/0 and returns the top-level and
// partition codes.
func (r *rig) acknowledge(ctx context.Context, member string, epoch int32, batches ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int16, int16) {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = 2
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr(member), epoch
	p := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, b := range batches {
		ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
		p.AcknowledgementBatches = append(p.AcknowledgementBatches, ab)
	}
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID, t.Partitions = testTopic, []kmsg.ShareAcknowledgeRequestTopicPartition{p}
	req.Topics = append(req.Topics, t)
	resp := r.m.ShareAcknowledge(ctx, req, RequestOptions{ConnCtx: ctx})
	var code int16 = -100
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			code = p.ErrorCode
		}
	}
	return resp.ErrorCode, code
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
