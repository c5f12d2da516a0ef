package replication

import (
	"context"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// followerFetch is broker 1's Fetch v12 in session id at epoch of partition 0 of
// topics (none: an incremental fetch with nothing changed), from offset, waiting wait.
func followerFetch(id, epoch int32, offset int64, wait int32, topics ...string) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.ReplicaID, r.MaxBytes, r.MinBytes, r.MaxWaitMillis = 12, 1, 1<<20, 1, wait
	r.SessionID, r.SessionEpoch = id, epoch
	for _, name := range topics {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = name
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = offset, 1<<20, 1, -1
		ft.Partitions = append(ft.Partitions, fp)
		r.Topics = append(r.Topics, ft)
	}
	return r
}

// topicsOf is the topics an answer names.
func topicsOf(a *FetchAnswer) []string {
	var out []string
	for _, t := range a.Topics {
		out = append(out, t.Topic)
	}
	return out
}

// TestIdleFollowerSessionSkipsUnchanged: an idle follower's incremental fetch reads
// none of the partitions unchanged since an answer left them out (the idle cost of
// 100,000 replicas, fetch_idle.go), yet an append to any of them is answered, at once
// or by waking the parked fetch, and the idle follower stays in the ISR.
func TestIdleFollowerSessionSkipsUnchanged(t *testing.T) {
	src := &fetchSource{parts: map[string]*Partition{}}
	for _, name := range []string{"a", "b", "c"} {
		log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := NewPartition(name, 0, log, 0, Options{BrokerID: 0})
		t.Cleanup(func() { p.Stop(false) })
		if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
			t.Fatal(err)
		}
		src.parts[name] = p
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &FetchServer{Sessions: NewFetchSessionCache(10, 1000), Purgatory: NewPurgatory(ctx), Source: src, Leader: &Quota{}}
	noPark := func() func(kmsg.Response) { t.Fatal("parked"); return nil }
	fetch := func(r *kmsg.FetchRequest) *FetchAnswer {
		t.Helper()
		a := s.Fetch(ctx, r, nil, noPark).(*FetchAnswer)
		t.Cleanup(a.Release)
		if a.ErrorCode != 0 {
			t.Fatalf("fetch error %d", a.ErrorCode)
		}
		return a
	}
	skipped := func(a *FetchAnswer) int {
		n := 0
		for i := range a.marks {
			if a.skipped(i) {
				n++
			}
		}
		return n
	}

	full := fetch(followerFetch(0, 0, 0, 0, "a", "b", "c"))
	id := full.SessionID
	if id == 0 || len(full.Topics) != 3 {
		t.Fatalf("full fetch: session %d, topics %v", id, topicsOf(full))
	}
	// The first incremental fetch reads every partition; nothing changed, so it names
	// none, and marks them idle.
	first := fetch(followerFetch(id, 1, 0, 0))
	if len(first.Topics) != 0 || skipped(first) != 0 {
		t.Fatalf("first incremental fetch: topics %v, %d skipped", topicsOf(first), skipped(first))
	}
	idle := fetch(followerFetch(id, 2, 0, 0))
	if len(idle.Topics) != 0 || skipped(idle) != 3 {
		t.Fatalf("idle fetch: topics %v, %d of 3 skipped", topicsOf(idle), skipped(idle))
	}

	// An append to one: the next fetch reads it (its records), the others not.
	if _, err := src.parts["b"].AppendAsLeader(batch(2), 0); err != nil {
		t.Fatal(err)
	}
	got := fetch(followerFetch(id, 3, 0, 0))
	if len(got.Topics) != 1 || got.Topics[0].Topic != "b" || got.HeldBytes() == 0 || skipped(got) != 2 {
		t.Fatalf("after an append to b: topics %v, %d bytes, %d skipped", topicsOf(got), got.HeldBytes(), skipped(got))
	}

	// The follower catches b up; then a parked fetch that skips every partition is
	// woken by an append to one.
	r := followerFetch(id, 4, 2, 0, "b")
	r.Topics[0].Partitions[0].LastFetchedEpoch = 1
	fetch(r)                          // b's high watermark moves to 2: b named
	fetch(followerFetch(id, 5, 0, 0)) // marks b idle again
	answers := make(chan kmsg.Response, 1)
	if got := s.Fetch(ctx, followerFetch(id, 6, 0, 30_000), nil, func() func(kmsg.Response) {
		return func(resp kmsg.Response) { answers <- resp }
	}); got != nil {
		t.Fatalf("idle fetch answered at once: topics %v", topicsOf(got.(*FetchAnswer)))
	}
	if _, err := src.parts["c"].AppendAsLeader(batch(1), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-answers:
		a := resp.(*FetchAnswer)
		defer a.Release()
		if len(a.Topics) != 1 || a.Topics[0].Topic != "c" || a.HeldBytes() == 0 {
			t.Fatalf("parked fetch woken by an append to c: topics %v, %d bytes", topicsOf(a), a.HeldBytes())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("parked idle fetch not answered by an append to a skipped partition")
	}

	// Skipped reads record nothing, yet an idle follower at the log end never lags.
	src.parts["a"].MaybeShrinkISR(time.Now().Add(time.Hour), 30*time.Second)
	if !src.parts["a"].InSync(1) {
		t.Fatal("the idle follower left a's ISR")
	}
}
