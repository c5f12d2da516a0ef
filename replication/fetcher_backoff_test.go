package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeLeader is broker 0 answering follower fetches of topic "t" as a leader does: a
// KIP-227 session (full fetches replace it, incremental ones add, change and forget
// partitions), an answer at once when a partition has records or an error, else after
// the fetch's max wait (or as soon as records arrive).
type fakeLeader struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when records or errors change
	failing  map[int32]int16
	batches  map[int32][][]byte // each partition's batches, from offset 0
	ends     map[int32]int64
	session  map[int32]int64 // partition -> fetch offset
	fetches  int
	errors   int // partition errors answered
	maxBytes int32
	// localStart is each partition's local log start (tiered storage): a fetch below it
	// is answered OFFSET_MOVED_TO_TIERED_STORAGE (fetcher_tiered_test.go).
	localStart map[int32]int64
	// quiet makes an incremental fetch's answer at its max wait name only the
	// partitions with records or an error, as Kafka's leader does; otherwise it names
	// every partition of the session.
	quiet bool
	// Fetch v13+ (fetcher_topic_ids_test.go): the version of the last fetch, its
	// replica state (v15), the topic id its topics and forgotten topics last named (the
	// answers name it too) and whether any named another one before.
	version       int16
	replicaState  kmsg.FetchRequestReplicaState
	topicID       [16]byte
	otherTopicIDs bool
	// fullTopicIDs are the topic ids the last full fetch named (v13+).
	fullTopicIDs [][16]byte
}

func newFakeLeader(t *testing.T) (*fakeLeader, string) {
	l := &fakeLeader{changed: make(chan struct{}), failing: map[int32]int16{}, batches: map[int32][][]byte{},
		ends: map[int32]int64{}, session: map[int32]int64{}}
	reg := rpc.NewRegistry()
	reg.Register(1, 12, 15, l.fetch)
	reg.Register(23, 3, 3, l.offsetForLeaderEpoch)
	reg.Register(2, 9, 9, l.listOffsets)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rpc.NewServer(rpc.ServerConfig{Logger: hclog.NewNullLogger()}, reg)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	return l, ln.Addr().String()
}

// appendBatch adds n records to partition id at the leader.
func (l *fakeLeader) appendBatch(id int32, n int, epoch int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches[id] = append(l.batches[id], followerBatch(n, l.ends[id], epoch))
	l.ends[id] += int64(n)
	close(l.changed)
	l.changed = make(chan struct{})
}

// fail makes partition id answer code (0: no error).
func (l *fakeLeader) fail(id int32, code int16) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failing[id] = code
	close(l.changed)
	l.changed = make(chan struct{})
}

// counts returns the fetches and the partition errors answered so far, and whether
// partition id is in the session.
func (l *fakeLeader) counts(id int32) (fetches, errs int, inSession bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, in := l.session[id]
	return l.fetches, l.errors, in
}

func (l *fakeLeader) fetch(ctx context.Context, r *rpc.Request) rpc.Result {
	req := r.Body.(*kmsg.FetchRequest)
	l.mu.Lock()
	l.fetches++
	l.maxBytes = req.MaxBytes
	l.version, l.replicaState = req.Version, req.ReplicaState
	full := req.SessionEpoch == 0
	if full {
		clear(l.session)
		l.fullTopicIDs = l.fullTopicIDs[:0]
	}
	for _, t := range req.Topics {
		if full && req.Version >= 13 {
			l.fullTopicIDs = append(l.fullTopicIDs, t.TopicID)
		}
		l.noteTopicID(req.Version, t.TopicID)
		for _, p := range t.Partitions {
			l.session[p.Partition] = p.FetchOffset
		}
	}
	for _, ft := range req.ForgottenTopics {
		l.noteTopicID(req.Version, ft.TopicID)
		for _, id := range ft.Partitions {
			delete(l.session, id)
		}
	}
	l.mu.Unlock()
	deadline := time.After(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		l.mu.Lock()
		resp, ready := l.answerLocked(full)
		changed := l.changed
		if ready {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 {
						l.errors++
					}
				}
			}
		}
		l.mu.Unlock()
		if ready {
			return rpc.Respond(resp)
		}
		select {
		case <-changed:
		case <-deadline:
			l.mu.Lock()
			if l.quiet {
				resp, _ := l.answerLocked(full)
				l.mu.Unlock()
				return rpc.Respond(resp)
			}
			l.mu.Unlock()
			full = true // max wait: answer what there is
		case <-ctx.Done():
			return rpc.Respond(resp)
		}
	}
}

// noteTopicID records the topic id a v13+ fetch named, the one "t" is answered under
// from then on, and whether it differs from the one named before.
func (l *fakeLeader) noteTopicID(version int16, id [16]byte) {
	if version < 13 {
		return
	}
	if l.topicID != [16]byte{} && id != l.topicID {
		l.otherTopicIDs = true
	}
	l.topicID = id
}

// offsetForLeaderEpoch answers where each asked epoch ends in the leader's batches
// (KIP-279): the latest epoch at or below it, and the first offset of a later one.
func (l *fakeLeader) offsetForLeaderEpoch(_ context.Context, r *rpc.Request) rpc.Result {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, -1, -1
			var at int64
			for _, b := range l.batches[p.Partition] {
				epoch := int32(binary.BigEndian.Uint32(b[12:]))
				if epoch > p.LeaderEpoch {
					break
				}
				at += int64(recordCount(b))
				rp.LeaderEpoch, rp.EndOffset = epoch, at
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return rpc.Respond(resp)
}

// answerLocked builds the answer of the session's partitions (all of them for a full
// fetch, else those with records or an error) and reports whether it is due now.
func (l *fakeLeader) answerLocked(full bool) (*kmsg.FetchResponse, bool) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version, resp.SessionID = 12, 1
	t := kmsg.NewFetchResponseTopic()
	t.Topic, t.TopicID = "t", l.topicID // the id is sent from v13
	due := full
	for id, off := range l.session {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.HighWatermark, rp.LogStartOffset = id, l.ends[id], 0
		rp.RecordBatches = []byte{}
		switch {
		case l.failing[id] != 0:
			rp.ErrorCode, rp.HighWatermark, rp.LogStartOffset = l.failing[id], -1, -1
		case off < l.localStart[id]:
			rp.ErrorCode = kerr.OffsetMovedToTieredStorage.Code
		case off < l.ends[id]:
			var at int64
			for _, b := range l.batches[id] {
				if at >= off {
					rp.RecordBatches = append(rp.RecordBatches, b...)
				}
				at += int64(recordCount(b))
			}
		case !full:
			continue
		}
		if rp.ErrorCode != 0 || len(rp.RecordBatches) > 0 {
			due = true
		}
		t.Partitions = append(t.Partitions, rp)
	}
	if len(t.Partitions) > 0 {
		resp.Topics = append(resp.Topics, t)
	}
	return resp, due
}

// recordCount is a batch's record count (its last offset delta + 1).
func recordCount(b []byte) int {
	return int(binary.BigEndian.Uint32(b[23:])) + 1
}

// newFollowingPartitions returns ids' empty follower replicas of "t" in leader epoch
// 1 of broker 0, fetched by a Fetchers of cfg from the fake leader at addr.
func newFollowingPartitions(t *testing.T, addr string, cfg FetcherConfig, ids ...int32) (*Fetchers, []*Partition) {
	cfg.BrokerID = 1
	cfg.Connect = func(ctx context.Context, _ int32) (*rpc.Client, error) { return rpc.Dial(ctx, addr, "follower-1") }
	fs := NewFetchers(cfg)
	t.Cleanup(fs.Close)
	var parts []*Partition
	for _, id := range ids {
		parts = append(parts, followOne(t, fs, id))
	}
	return fs, parts
}

// followOne opens an empty follower replica of "t" partition id in leader epoch 1 of
// broker 0 and makes fs fetch it from there.
func followOne(t *testing.T, fs *Fetchers, id int32) *Partition {
	t.Helper()
	return followOneOf(t, fs, id, [16]byte{})
}

// followOneOf is followOne for a replica of the topic with id topicID.
func followOneOf(t *testing.T, fs *Fetchers, id int32, topicID [16]byte) *Partition {
	t.Helper()
	log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartition("t", id, log, 0, Options{BrokerID: 1, TopicID: topicID})
	t.Cleanup(func() { p.Stop(false) })
	if err := p.BecomeFollower(1, 0); err != nil {
		t.Fatal(err)
	}
	fs.Follow(p, 0)
	return p
}

// reaches waits until p's log ends at end.
func reaches(t *testing.T, p *Partition, end int64) {
	t.Helper()
	testwait.For(t, 10*time.Second, func() error {
		if got := p.State().LogEndOffset; got != end {
			return fmt.Errorf("partition %d's log ends at %d, want %d", p.ID, got, end)
		}
		return nil
	})
}

// TestFetcherBacksOffAPartitionInError: a partition the leader answers with
// NOT_LEADER_OR_FOLLOWER is left out of the fetch for replica.fetch.backoff.ms, so the
// fetcher does not spin on the leader's at-once answers (the fetches over a second
// stay near one per max wait), while the other partition keeps replicating; once the
// error clears the partition replicates again.
func TestFetcherBacksOffAPartitionInError(t *testing.T) {
	const maxWait, backoff, window = 100 * time.Millisecond, 300 * time.Millisecond, time.Second
	l, addr := newFakeLeader(t)
	l.fail(0, kerr.NotLeaderForPartition.Code)
	l.appendBatch(1, 3, 1)
	_, parts := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: maxWait, Backoff: backoff}, 0, 1)
	reaches(t, parts[1], 3)
	testwait.For(t, 10*time.Second, func() error {
		if _, errs, _ := l.counts(0); errs == 0 {
			return errors.New("the error not answered yet")
		}
		return nil
	})

	start, _, _ := l.counts(0)
	began := time.Now()
	l.appendBatch(1, 2, 1) // the healthy partition keeps flowing meanwhile
	reaches(t, parts[1], 5)
	for time.Since(began) < window {
		time.Sleep(window / 10) // the measured window, not a synchronisation
	}
	end, _, _ := l.counts(0)
	elapsed := time.Since(began)
	// At most one parked fetch per max wait, plus one at-once answer each time the
	// partition joins again after its backoff, and the healthy partition's records.
	limit := int(elapsed/maxWait) + 2*int(elapsed/backoff) + 10
	if n := end - start; n > limit {
		t.Fatalf("%d fetches in %v with a partition in error: the fetcher spins (at most %d expected)", n, elapsed, limit)
	}

	l.fail(0, 0)
	l.appendBatch(0, 4, 1)
	reaches(t, parts[0], 4)
	reaches(t, parts[1], 5)
}

// TestFetcherResumesAPartitionInErrorOnNewMetadata: a partition in error leaves the
// leader's session for its backoff (here a minute), and joins the fetch again at once
// when its leader epoch moves, as new metadata clears the error.
func TestFetcherResumesAPartitionInErrorOnNewMetadata(t *testing.T) {
	l, addr := newFakeLeader(t)
	l.fail(0, kerr.UnknownTopicOrPartition.Code)
	l.appendBatch(1, 3, 1)
	_, parts := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: 100 * time.Millisecond, Backoff: time.Minute}, 0, 1)
	reaches(t, parts[1], 3)
	testwait.For(t, 10*time.Second, func() error {
		if _, errs, in := l.counts(0); errs == 0 || in {
			return fmt.Errorf("errors answered %d, partition in the leader's session %v", errs, in)
		}
		return nil
	})
	l.fail(0, 0)
	l.appendBatch(0, 4, 2)
	if err := parts[0].BecomeFollower(2, 0); err != nil {
		t.Fatal(err)
	}
	reaches(t, parts[0], 4)
}

// TestFetcherResponseMaxBytes: a follower's fetch asks for replica.fetch.response.max.bytes
// in all (10 MiB by default), however many partitions it names: the product of the
// per-partition limit and the partition count wrapped past 2,048 partitions in int32.
func TestFetcherResponseMaxBytes(t *testing.T) {
	for _, c := range []struct {
		set, want int32
	}{{0, 10 << 20}, {12345, 12345}} {
		l, addr := newFakeLeader(t)
		l.appendBatch(0, 1, 1)
		_, parts := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: 100 * time.Millisecond, ResponseMaxBytes: c.set}, 0, 1, 2)
		reaches(t, parts[0], 1)
		l.mu.Lock()
		got := l.maxBytes
		l.mu.Unlock()
		if got != c.want {
			t.Errorf("replica.fetch.response.max.bytes %d: fetch MaxBytes %d, want %d", c.set, got, c.want)
		}
	}
}

// TestFetcherForgetsADelayedPartitionWhenNothingElseIsFetched: when every partition of
// a session is delayed by an error, no fetch goes out; the first to join again starts
// a new (full) session without the others, so the leader does not keep answering
// their errors at once (the fetcher would spin until their backoff ends).
func TestFetcherForgetsADelayedPartitionWhenNothingElseIsFetched(t *testing.T) {
	const maxWait, window = 100 * time.Millisecond, time.Second
	l, addr := newFakeLeader(t)
	l.appendBatch(0, 1, 1)
	l.appendBatch(1, 1, 1)
	_, parts := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: maxWait, Backoff: time.Minute}, 0, 1)
	reaches(t, parts[0], 1)
	reaches(t, parts[1], 1)
	// Both fail in one answer: both leave the fetch, and no fetch goes out.
	l.mu.Lock()
	l.failing[0], l.failing[1] = kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	testwait.For(t, 10*time.Second, func() error {
		if _, errs, _ := l.counts(0); errs < 2 {
			return errors.New("the errors not answered yet")
		}
		return nil
	})
	l.fail(1, 0)
	l.appendBatch(1, 3, 2)
	if err := parts[1].BecomeFollower(2, 0); err != nil { // new metadata for partition 1 only
		t.Fatal(err)
	}
	reaches(t, parts[1], 4)
	start, _, _ := l.counts(0)
	began := time.Now()
	for time.Since(began) < window {
		time.Sleep(window / 10) // the measured window, not a synchronisation
	}
	end, _, in := l.counts(0)
	elapsed := time.Since(began)
	if limit := int(elapsed/maxWait) + 5; end-start > limit || in {
		t.Fatalf("%d fetches in %v (at most %d expected), delayed partition in the leader's session %v", end-start, elapsed, limit, in)
	}
	if got := parts[0].State().LogEndOffset; got != 1 {
		t.Fatalf("the delayed partition's log ends at %d", got)
	}
}

// TestFetcherRetriesSoonALeaderBehindItsMetadata: a leader that has not applied the
// topic or opened its replica yet (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
// UNKNOWN_TOPIC_ID right after CreateTopics) catches up without the follower's epoch moving, so the
// partition is asked again after leaderBehindFirstBackoff, doubling, not after the
// whole replica.fetch.backoff.ms (a minute here): the first acks=all writes to a new
// topic do not wait a backoff for their high watermark. Another error keeps the full
// backoff.
func TestFetcherRetriesSoonALeaderBehindItsMetadata(t *testing.T) {
	for _, code := range []int16{kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code,
		kerr.InconsistentTopicID.Code, kerr.UnknownLeaderEpoch.Code} {
		t.Run(kerr.ErrorForCode(code).Error(), func(t *testing.T) {
			l, addr := newFakeLeader(t)
			l.fail(0, code)
			_, parts := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: 100 * time.Millisecond, Backoff: time.Minute}, 0)
			testwait.For(t, 10*time.Second, func() error {
				if _, errs, _ := l.counts(0); errs == 0 {
					return errors.New("the error not answered yet")
				}
				return nil
			})
			l.fail(0, 0) // the leader caught up
			l.appendBatch(0, 4, 1)
			reaches(t, parts[0], 4) // within 10 s, not the minute's backoff
		})
	}
	st := &fetchState{}
	if got := st.backoff(kerr.FencedLeaderEpoch, time.Minute); got != time.Minute {
		t.Fatalf("FENCED_LEADER_EPOCH backoff %v, want replica.fetch.backoff.ms", got)
	}
	st = &fetchState{}
	var got []time.Duration
	for range 5 {
		got = append(got, st.backoff(kerr.NotLeaderForPartition, 300*time.Millisecond))
	}
	want := []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	if !slices.Equal(got, want) {
		t.Fatalf("backoffs %v, want %v", got, want)
	}
}
