package replication

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeRemote is a RemoteFetcher answering records or err after block is closed (nil:
// at once), recording its reads.
type fakeRemote struct {
	records []byte
	err     error
	block   chan struct{}
	// untilCtx, when set, makes a read wait for its ctx to end and answer its error
	// (a read cut off at the fetch's wait).
	untilCtx bool
	mu       sync.Mutex
	reads    []int64 // offsets read
	minOne   []bool
}

func (f *fakeRemote) Go(fn func()) bool { go fn(); return true }
func (f *fakeRemote) MaxWait() time.Duration {
	return 100 * time.Millisecond
}
func (f *fakeRemote) ReadRemote(ctx context.Context, _ *Partition, offset int64, _ int, minOne, _ bool) ([]byte, []AbortedTxn, error) {
	f.mu.Lock()
	f.reads, f.minOne = append(f.reads, offset), append(f.minOne, minOne)
	f.mu.Unlock()
	if f.untilCtx {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	if f.block != nil {
		<-f.block
	}
	return f.records, []AbortedTxn{{ProducerID: 3, FirstOffset: 2}}, f.err
}

// fetchDeferred sends r and returns its deferred answer; it fails if r answers at once.
func fetchDeferred(t *testing.T, s *FetchServer, r *kmsg.FetchRequest) *FetchAnswer {
	t.Helper()
	ch := make(chan kmsg.Response, 1)
	if resp := s.Fetch(context.Background(), r, nil, func() func(kmsg.Response) {
		return func(resp kmsg.Response) { ch <- resp }
	}); resp != nil {
		t.Fatal("a fetch with a remote partition answered at once")
	}
	select {
	case resp := <-ch:
		a := resp.(*FetchAnswer)
		t.Cleanup(a.Release)
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return nil
	}
}

// TestFetchServerReadsOneRemotePartition: a consumer's fetch below the local log start
// answers deferred with the remote read of the first such partition (the first batch
// whole), the other remote partition empty with its offsets, a local partition from
// the local log; a read error answers its partition's code alone; a read slower than
// remote.fetch.max.wait.ms answers the partition empty, and so does one that ends with
// its ctx at that wait.
func TestFetchServerReadsOneRemotePartition(t *testing.T) {
	s, src := fetchServer(t, 2, 1, "l")
	for _, name := range []string{"t", "u"} {
		p := tieredLeader(t, true)
		p.SetRemoteLogState(5, 0)
		if _, err := p.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		src.parts[name] = p
	}
	request := func() *kmsg.FetchRequest {
		r := consumerFetch(12, 1<<20, "t", "u", "l")
		r.MaxWaitMillis, r.MinBytes, r.IsolationLevel = 500, 1, 1
		r.Topics[0].Partitions[0].FetchOffset, r.Topics[1].Partitions[0].FetchOffset = 2, 3
		return r
	}
	part := func(a *FetchAnswer, i int) kmsg.FetchResponseTopicPartition { return a.Topics[i].Partitions[0] }

	remote := &fakeRemote{records: []byte("remote batches")}
	s.Remote = remote
	a := fetchDeferred(t, s, request())
	if tp := part(a, 0); tp.ErrorCode != 0 || !bytes.Equal(tp.RecordBatches, remote.records) || len(tp.AbortedTransactions) != 1 || tp.HighWatermark != 10 {
		t.Fatalf("remote partition: %+v", tp)
	}
	if up := part(a, 1); up.ErrorCode != 0 || len(up.RecordBatches) != 0 || up.HighWatermark != 10 || up.LogStartOffset != 0 {
		t.Fatalf("second remote partition: code %d, %d bytes, HW %d", up.ErrorCode, len(up.RecordBatches), up.HighWatermark)
	}
	if lp := part(a, 2); lp.ErrorCode != 0 || a.Held(2) == nil {
		t.Fatalf("local partition: code %d, held %v", lp.ErrorCode, a.Held(2))
	}
	if len(remote.reads) != 1 || remote.reads[0] != 2 || !remote.minOne[0] {
		t.Fatalf("remote reads %v (min one %v), want one of offset 2, the first batch whole", remote.reads, remote.minOne)
	}

	s.Remote = &fakeRemote{err: errors.New("store down")}
	a = fetchDeferred(t, s, request())
	if tp := part(a, 0); tp.ErrorCode != kerr.UnknownServerError.Code || tp.HighWatermark != -1 { // the source's one code
		t.Fatalf("remote partition with a read error: %+v", tp)
	}
	if lp := part(a, 2); lp.ErrorCode != 0 || a.Held(2) == nil {
		t.Fatalf("local partition beside a failed remote read: code %d", lp.ErrorCode)
	}

	slow := &fakeRemote{records: []byte("late"), block: make(chan struct{})}
	defer close(slow.block)
	s.Remote = slow
	start := time.Now()
	a = fetchDeferred(t, s, request())
	if tp := part(a, 0); tp.ErrorCode != 0 || len(tp.RecordBatches) != 0 || time.Since(start) < slow.MaxWait() {
		t.Fatalf("slow remote read: code %d, %d bytes after %s", tp.ErrorCode, len(tp.RecordBatches), time.Since(start))
	}

	// The read's ctx ends with the fetch's wait; cut off there, it answers the
	// partition empty, not with an error.
	s.Remote = &fakeRemote{untilCtx: true}
	for range 3 {
		a = fetchDeferred(t, s, request())
		if tp := part(a, 0); tp.ErrorCode != 0 || len(tp.RecordBatches) != 0 {
			t.Fatalf("remote read cut off at the wait: code %d, %d bytes", tp.ErrorCode, len(tp.RecordBatches))
		}
	}
}
