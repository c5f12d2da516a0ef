package coordinator

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
)

// txnShard is a TransactionalShard that lists what it is given.
type txnShard struct {
	testShard
	mu     sync.Mutex
	events []string
}

func (s *txnShard) ReplayRecord(offset int64, b BatchInfo, key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, fmt.Sprintf("record %d pid %d txn %v %s", offset, b.ProducerID, b.Transactional, key))
	return nil
}

func (s *txnShard) ReplayMarker(m Marker) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, fmt.Sprintf("marker %d pid %d epoch %d commit %v", m.Offset, m.ProducerID, m.ProducerEpoch, m.Commit))
	return nil
}

func (s *txnShard) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// appendRaw appends whole batches to the fake as the partition would.
func appendRaw(t *testing.T, f *fakeLog, batches ...[]byte) {
	t.Helper()
	f.set(func(f *fakeLog) { f.autoCommit = true })
	for _, b := range batches {
		if _, err := f.AppendAsLeaderInEpoch(b, -1, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// transactionalLog is a partition with ordinary records, two producers' transactional
// batches and their markers, interleaved, and one producer still open at the end.
func transactionalLog(t *testing.T, f *fakeLog) {
	now := time.Unix(0, 0)
	appendRaw(t, f,
		EncodeBatch([]Record{{Key: []byte("a"), Value: []byte("1")}}, now),                     // 0
		EncodeTransactionalBatch([]Record{{Key: []byte("t7"), Value: []byte("1")}}, 7, 2, now), // 1
		EncodeTransactionalBatch([]Record{{Key: []byte("t8"), Value: []byte("1")}}, 8, 0, now), // 2
		EncodeMarker(8, 0, false, 5, now),                                                      // 3
		EncodeMarker(7, 2, true, 5, now),                                                       // 4
		EncodeTransactionalBatch([]Record{{Key: []byte("u7"), Value: []byte("2")}}, 7, 2, now), // 5
	)
}

// A TransactionalShard's load sees every record with its offset and batch, and every
// marker, in log order.
func TestLoadReplaysTransactionalBatchesAndMarkers(t *testing.T) {
	f := newFakeLog(0)
	transactionalLog(t, f)
	r := startRuntime(t, Config{})
	s := &txnShard{testShard: testShard{t: t}}
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	want := []string{
		"record 0 pid -1 txn false a",
		"record 1 pid 7 txn true t7",
		"record 2 pid 8 txn true t8",
		"marker 3 pid 8 epoch 0 commit false",
		"marker 4 pid 7 epoch 2 commit true",
		"record 5 pid 7 txn true u7",
	}
	if got := s.seen(); !slices.Equal(got, want) {
		t.Fatalf("replayed\n%v\nwant\n%v", got, want)
	}
}

// A shard that is not transactional (__transaction_state's) skips markers and
// transactional batches safely and still loads.
func TestPlainShardSkipsMarkersAndTransactionalBatches(t *testing.T) {
	f := newFakeLog(0)
	transactionalLog(t, f)
	r := startRuntime(t, Config{})
	s := &testShard{t: t}
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	got := submitWait(t, r, 0, func(_ time.Time, sh Shard) ([]Record, Result) {
		return slices.Clone(sh.(*testShard).replayed), Result{}
	})
	if len(got) != 1 || string(got[0].Key) != "a" {
		t.Fatalf("replayed %v, want only the ordinary record", got)
	}
}

// A write with Producer is one transactional batch of that producer, sequence 0,
// appended with the producer checks asked for; a Marker write is a control batch,
// replayed on the shard only once committed, before its Committed.
func TestTransactionalWriteAndMarker(t *testing.T) {
	f := newFakeLog(0)
	r := startRuntime(t, Config{})
	s := &txnShard{testShard: testShard{t: t}}
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	guard := &replication.TxnVerification{}
	done := make(chan int16, 2)
	submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
		return struct{}{}, Result{Records: []Record{{Key: []byte("k"), Value: []byte("v")}},
			Producer:  &Producer{ID: 7, Epoch: 2, Verify: true, Guard: guard},
			Committed: func(_ time.Time, code int16) Result { done <- code; return Result{} }}
	})
	testwait.Until(t, 10*time.Second, "the transactional batch", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.batches) == 1 })
	f.mu.Lock()
	h, err := segment.ParseBatchHeader(f.batches[0])
	calls := slices.Clone(f.txnWrites)
	f.mu.Unlock()
	if err != nil || !h.Transactional() || h.Control() || h.ProducerID != 7 || h.ProducerEpoch != 2 || h.BaseSequence != 0 {
		t.Fatalf("batch %+v, %v", h, err)
	}
	if len(calls) != 1 || !calls[0].verify || calls[0].guard != guard {
		t.Fatalf("producer checks %+v", calls)
	}
	f.set(func(f *fakeLog) { f.hw = f.leo })
	if code := <-done; code != 0 {
		t.Fatalf("transactional write: %d", code)
	}
	var eventsAtCommit []string
	submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
		return struct{}{}, Result{Marker: &MarkerWrite{ProducerID: 7, ProducerEpoch: 2, Commit: true, CoordinatorEpoch: 4},
			Committed: func(_ time.Time, code int16) Result {
				eventsAtCommit = s.seen()
				done <- code
				return Result{}
			}}
	})
	testwait.Until(t, 10*time.Second, "the marker", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.batches) == 2 })
	if got := s.seen(); len(got) != 0 {
		t.Fatalf("replayed before the marker was committed: %v", got)
	}
	f.mu.Lock()
	h, err = segment.ParseBatchHeader(f.batches[1])
	f.mu.Unlock()
	if err != nil || !h.Control() || !h.Transactional() || h.ControlType != 1 || h.ControlCoordinatorEpoch != 4 || h.ProducerID != 7 {
		t.Fatalf("marker %+v, %v", h, err)
	}
	f.set(func(f *fakeLog) { f.hw = f.leo })
	if code := <-done; code != 0 {
		t.Fatalf("marker: %d", code)
	}
	if want := []string{"marker 1 pid 7 epoch 2 commit true"}; !slices.Equal(eventsAtCommit, want) {
		t.Fatalf("at Committed the shard had seen %v, want %v", eventsAtCommit, want)
	}
}

// A marker or transactional write refused by the partition's producer state gets
// Kafka's code, and a refused marker is not replayed.
func TestTransactionalWriteErrorsAreTranslated(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int16
	}{
		{replication.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch.Code},
		{replication.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced.Code},
		{replication.ErrInvalidTxnState, kerr.InvalidTxnState.Code},
	} {
		f := newFakeLog(0)
		f.appendErr = tc.err
		r := startRuntime(t, Config{})
		s := &txnShard{testShard: testShard{t: t}}
		r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
		testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
		for _, res := range []Result{
			{Marker: &MarkerWrite{ProducerID: 7}},
			{Records: []Record{{Key: []byte("k")}}, Producer: &Producer{ID: 7}},
		} {
			done := make(chan int16, 1)
			res.Committed = func(_ time.Time, code int16) Result { done <- code; return Result{} }
			submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) { return struct{}{}, res })
			if code := <-done; code != tc.want {
				t.Fatalf("%v: code %d, want %d", tc.err, code, tc.want)
			}
		}
		if got := s.seen(); len(got) != 0 {
			t.Fatalf("%v: a refused marker was replayed: %v", tc.err, got)
		}
		r.Close()
	}
}
