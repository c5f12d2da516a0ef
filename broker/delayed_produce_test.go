package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dpPartition is a leader replica (broker 0) of t-id with follower 1 in its ISR.
func dpPartition(t *testing.T, id int32) *localPartition {
	t.Helper()
	log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := replication.NewPartition("t", id, log, 0, replication.Options{BrokerID: 0})
	t.Cleanup(func() { p.Stop(false) })
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	return &localPartition{Partition: p}
}

// dpAppend appends one record as leader and returns the offset the high watermark must
// reach.
func dpAppend(t *testing.T, lp *localPartition) int64 {
	t.Helper()
	info, err := lp.AppendAsLeader(rvBatch(rvGoodSection(1, 16, false, 0), 1, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	return info.LastOffset + 1
}

// dpFollowerFetch is follower 1's fetch at offset: it advances the high watermark.
func dpFollowerFetch(t *testing.T, lp *localPartition, offset int64) {
	t.Helper()
	if _, _, err := lp.ReadForFollower(replication.FollowerFetch{ReplicaID: 1, FetchOffset: offset, CurrentLeaderEpoch: 1,
		LastFetchedEpoch: -1, MaxBytes: 1 << 20, LogStartOffset: 0}, time.Now()); err != nil {
		t.Error(err)
	}
}

// dpStart starts a delayed produce over parts with their end offsets.
func dpStart(b *Broker, ctx context.Context, parts []*localPartition, ends []int64, timeout time.Duration) (*kmsg.ProduceResponse, chan kmsg.Response) {
	resp := kmsg.NewPtrProduceResponse()
	resp.Topics = []kmsg.ProduceResponseTopic{{Topic: "t", Partitions: make([]kmsg.ProduceResponseTopicPartition, len(parts))}}
	pending := make([]producePending, len(parts))
	for i, lp := range parts {
		pending[i] = producePending{lp, &resp.Topics[0].Partitions[i], ends[i], 1}
	}
	ch := make(chan kmsg.Response, 2) // room for a wrong second answer
	b.startDelayedProduce(ctx, resp, pending, timeout, chanResponder(ch))
	return resp, ch
}

// chanResponder delivers a delayed response on its channel.
type chanResponder chan kmsg.Response

func (c chanResponder) Complete(r kmsg.Response) bool { c <- r; return true }

func dpReceive(t *testing.T, ch chan kmsg.Response) *kmsg.ProduceResponse {
	t.Helper()
	select {
	case r := <-ch:
		return r.(*kmsg.ProduceResponse)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return nil
	}
}

// The high watermark advance (on the follower fetch's goroutine) and the timeout race:
// the produce is answered exactly once, with success only if the high watermark passed
// its records, and its waiter no longer answers afterwards.
func TestDelayedProduceAnswersOnceWhenHighWatermarkAndTimeoutRace(t *testing.T) {
	b := &Broker{}
	lp := dpPartition(t, 0)
	var successes, timeouts int
	for i := range 200 {
		end := dpAppend(t, lp)
		timeout := time.Duration(i%4) * 250 * time.Microsecond
		start := time.Now()
		_, ch := dpStart(b, context.Background(), []*localPartition{lp}, []int64{end}, timeout)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); dpFollowerFetch(t, lp, end) }()
		r := dpReceive(t, ch)
		switch code := r.Topics[0].Partitions[0].ErrorCode; code {
		case 0:
			successes++
			if hw := lp.State().HighWatermark; hw < end {
				t.Fatalf("acknowledged at high watermark %d, before %d", hw, end)
			}
		case kerr.RequestTimedOut.Code:
			timeouts++
		default:
			t.Fatalf("error code %d", code)
		}
		wg.Wait()
		// Both sides have run (the timer by start+timeout, give it a moment to fire):
		// no second answer.
		select {
		case <-ch:
			t.Fatal("answered twice")
		case <-time.After(time.Until(start.Add(timeout)) + 5*time.Millisecond):
		}
	}
	t.Logf("%d answered by the high watermark, %d by the timeout", successes, timeouts)
}

// A produce over two partitions is answered when the last of them commits, on the
// goroutine of that partition's follower fetch; one whose high watermark is already
// there at registration counts at once.
func TestDelayedProduceAnswersWhenTheLastPartitionCommits(t *testing.T) {
	b := &Broker{}
	p0, p1 := dpPartition(t, 0), dpPartition(t, 1)
	e0, e1 := dpAppend(t, p0), dpAppend(t, p1)
	dpFollowerFetch(t, p0, e0) // p0 committed before the produce waits
	_, ch := dpStart(b, context.Background(), []*localPartition{p0, p1}, []int64{e0, e1}, time.Minute)
	select {
	case <-ch:
		t.Fatal("answered before partition 1 committed")
	default:
	}
	dpFollowerFetch(t, p1, e1)
	select { // sent by the follower fetch itself, before it returned
	case r := <-ch:
		for _, sp := range r.(*kmsg.ProduceResponse).Topics[0].Partitions {
			if sp.ErrorCode != 0 {
				t.Fatalf("partition %d: error code %d", sp.Partition, sp.ErrorCode)
			}
		}
	default:
		t.Fatal("the high watermark advance did not answer")
	}

	// Already committed everywhere: answered from startDelayedProduce.
	_, ch = dpStart(b, context.Background(), []*localPartition{p0, p1}, []int64{e0, e1}, time.Minute)
	if len(ch) != 1 {
		t.Fatal("a committed produce was not answered at once")
	}
}

// Losing leadership answers NOT_LEADER_OR_FOLLOWER and the connection closing answers
// REQUEST_TIMED_OUT, each once.
func TestDelayedProduceLeadershipChangeAndConnectionClose(t *testing.T) {
	b := &Broker{}
	lp := dpPartition(t, 0)
	end := dpAppend(t, lp)
	_, ch := dpStart(b, context.Background(), []*localPartition{lp}, []int64{end}, time.Minute)
	if err := lp.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	if code := dpReceive(t, ch).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("after losing leadership: error code %d", code)
	}

	lp = dpPartition(t, 1)
	end = dpAppend(t, lp)
	ctx, cancel := context.WithCancel(context.Background())
	_, ch = dpStart(b, ctx, []*localPartition{lp}, []int64{end}, time.Minute)
	cancel()
	if code := dpReceive(t, ch).Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("after the connection closed: error code %d", code)
	}
	dpFollowerFetch(t, lp, end) // commits now: no second answer from the waiter
	if len(ch) != 0 {
		t.Fatal("answered twice")
	}
}
