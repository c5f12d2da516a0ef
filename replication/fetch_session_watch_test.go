package replication

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// watchCluster is a leader (broker 0) of n partitions, topics w0..w(n-1) partition 0,
// each with follower 1 in its ISR, behind a FetchServer; isrChanges receives every
// AlterPartition the leaders ask for.
type watchCluster struct {
	s          *FetchServer
	parts      []*Partition
	isrChanges chan ISRChange
	// alter, when set, answers the AlterPartition calls (else they succeed).
	alter atomic.Pointer[func(ISRChange) error]
}

func newWatchCluster(t *testing.T, n int) *watchCluster {
	t.Helper()
	c := &watchCluster{isrChanges: make(chan ISRChange, 4*n)}
	src := &fetchSource{parts: map[string]*Partition{}, zstd: map[string]bool{}, ids: map[string][16]byte{}}
	for i := range n {
		log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("w%d", i)
		p := NewPartition(name, 0, log, 0, Options{BrokerID: 0, AlterISR: func(ch ISRChange) error {
			c.isrChanges <- ch
			if alter := c.alter.Load(); alter != nil {
				return (*alter)(ch)
			}
			return nil
		}})
		t.Cleanup(func() { p.Stop(false) })
		if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
			t.Fatal(err)
		}
		src.parts[name] = p
		src.ids[name] = [16]byte{byte(i + 1), 0x77}
		c.parts = append(c.parts, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.s = &FetchServer{Sessions: NewFetchSessionCache(10, 60_000), Purgatory: NewPurgatory(ctx), Source: src, Leader: &Quota{}}
	return c
}

// watchFollower is follower 1's side of one fetch session: its fetch offsets and the
// leader's high watermark and log start offset, as answered.
type watchFollower struct {
	c         *watchCluster
	id, epoch int32
	offsets   []int64
	sent      []int64 // the fetch offsets as the session holds them
	epochs    []int32 // the leader epoch each partition fetches in
	hw, start []int64
	errs      []int16
	maxBytes  int32
	forget    []int // partitions the next fetch forgets
	// brokerEpoch, when not -1, makes the fetches v15 (topics by id, ReplicaState with
	// this broker epoch, KIP-903); else they are v12.
	brokerEpoch int64
}

func newWatchFollower(c *watchCluster) *watchFollower {
	n := len(c.parts)
	f := &watchFollower{c: c, offsets: make([]int64, n), sent: make([]int64, n), epochs: make([]int32, n), hw: make([]int64, n), start: make([]int64, n),
		errs: make([]int16, n), maxBytes: 1 << 20, brokerEpoch: -1}
	for i := range f.epochs {
		f.epochs[i] = 1
	}
	return f
}

// fetch sends one fetch naming the partitions in named, and those whose fetch offset
// moved (all of them for a full fetch), with maxWait, and applies its answer; it
// returns the partitions the answer named.
func (f *watchFollower) fetch(t *testing.T, maxWait time.Duration, named ...int) []int {
	t.Helper()
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.ReplicaID, r.MaxWaitMillis, r.MinBytes, r.MaxBytes = 12, 1, int32(maxWait/time.Millisecond), 1, f.maxBytes
	if f.brokerEpoch >= 0 {
		r.Version = 15 // the broker copies ReplicaState.ID into ReplicaID (broker/01_fetch.go)
		r.ReplicaState.ID, r.ReplicaState.Epoch = 1, f.brokerEpoch
	}
	ids := f.c.s.Source.(topicIDSource).topicIDs()
	r.SessionID, r.SessionEpoch = f.id, f.epoch
	if f.epoch == 0 {
		named = named[:0]
	}
	for i := range f.c.parts {
		if f.epoch == 0 || f.offsets[i] != f.sent[i] && !slices.Contains(named, i) {
			named = append(named, i)
		}
		f.sent[i] = f.offsets[i]
	}
	for _, i := range named {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = f.c.parts[i].Topic, ids[f.c.parts[i].Topic]
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.PartitionMaxBytes, fp.LogStartOffset = f.offsets[i], f.epochs[i], -1, 1<<20, 0
		ft.Partitions = append(ft.Partitions, fp)
		r.Topics = append(r.Topics, ft)
	}
	for _, i := range f.forget {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = f.c.parts[i].Topic, ids[f.c.parts[i].Topic], []int32{0}
		r.ForgottenTopics = append(r.ForgottenTopics, ft)
	}
	f.forget = nil
	done := make(chan kmsg.Response, 1)
	resp := f.c.s.Fetch(context.Background(), r, nil, func() func(kmsg.Response) {
		return func(resp kmsg.Response) { done <- resp }
	})
	if resp == nil {
		select {
		case resp = <-done:
		case <-time.After(maxWait + 20*time.Second):
			t.Fatal("parked fetch never answered")
		}
	}
	a := resp.(*FetchAnswer)
	defer a.Release()
	// Decoded as the follower reads it (the held record sets read in).
	var fr kmsg.FetchResponse
	fr.Version = r.Version
	if err := fr.ReadFrom(a.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if fr.ErrorCode != 0 {
		t.Fatalf("fetch error %v", kerr.ErrorForCode(fr.ErrorCode))
	}
	f.id, f.epoch = fr.SessionID, nextSessionEpoch(f.epoch)
	var got []int
	for _, rt := range fr.Topics {
		for _, rp := range rt.Partitions {
			var i int
			name := rt.Topic
			for n, id := range ids {
				if r.Version >= 13 && id == rt.TopicID {
					name = n
				}
			}
			if _, err := fmt.Sscanf(name, "w%d", &i); err != nil {
				t.Fatal(err)
			}
			got = append(got, i)
			f.errs[i] = rp.ErrorCode
			if rp.ErrorCode != 0 {
				continue
			}
			f.hw[i], f.start[i] = rp.HighWatermark, rp.LogStartOffset
			b := rp.RecordBatches
			for len(b) > 0 {
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(b); err != nil {
					t.Fatal(err)
				}
				if end := rb.FirstOffset + int64(rb.LastOffsetDelta); rb.FirstOffset > f.offsets[i] || end < f.offsets[i] {
					t.Fatalf("partition %d: batch %d-%d, fetching from %d (answer %+v)", i, rb.FirstOffset, end, f.offsets[i], fr.Topics)
				}
				f.offsets[i] = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
				b = b[12+int(rb.Length):]
			}
		}
	}
	return got
}

// changedSince returns the partitions whose fetch offset differs from before.
func (f *watchFollower) changedSince(before []int64) []int {
	var out []int
	for i := range f.offsets {
		if f.offsets[i] != before[i] {
			out = append(out, i)
		}
	}
	return out
}

// TestIdleFollowerStaysInSyncAcrossQuietSpell: a caught-up follower whose session
// fetches read nothing (every partition idle) for longer than replica.lag.time.max.ms
// stays in the ISR, and the first append after the quiet spell neither shrinks it
// (the reverted idle skip's bug: the caught-up time went stale across skipped reads)
// nor waits: the follower fetches it and the high watermark reaches it.
func TestIdleFollowerStaysInSyncAcrossQuietSpell(t *testing.T) {
	const lagMax = 600 * time.Millisecond
	c := newWatchCluster(t, 40)
	for _, p := range c.parts {
		if _, err := p.AppendAsLeader(batch(2), 0); err != nil {
			t.Fatal(err)
		}
	}
	f := newWatchFollower(c)
	f.fetch(t, 0) // full: every partition's two records
	if f.id == 0 {
		t.Fatal("no session created")
	}
	f.fetch(t, 0, f.changedSince(make([]int64, len(f.offsets)))...) // at the log end: the HW moves
	quietUntil := time.Now().Add(3 * lagMax)
	for time.Now().Before(quietUntil) {
		if got := f.fetch(t, 50*time.Millisecond); len(got) > 0 && f.hw[got[0]] != 2 {
			t.Fatalf("idle fetch named %v", got)
		}
		for _, p := range c.parts {
			p.MaybeShrinkISR(time.Now(), lagMax)
		}
	}
	// The quiet spell is over: an append, and the ISR check at once, before the
	// follower fetches it.
	p := c.parts[17]
	info, err := p.AppendAsLeader(batch(1), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.parts {
		p.MaybeShrinkISR(time.Now(), lagMax)
		p.mu.Lock()
		pending := p.pendingISR
		p.mu.Unlock()
		if pending != nil {
			t.Fatalf("%s: ISR shrink asked after the quiet spell: %v", p.Topic, pending)
		}
	}
	if got := f.fetch(t, 5*time.Second); len(got) != 1 || got[0] != 17 || f.offsets[17] != info.LastOffset+1 {
		t.Fatalf("answer named %v, partition 17 at %d", got, f.offsets[17])
	}
	f.fetch(t, 0, 17) // the follower's new log end: the HW reaches the append (acks=all)
	if hw := p.State().HighWatermark; hw != info.LastOffset+1 {
		t.Fatalf("high watermark %d, want %d", hw, info.LastOffset+1)
	}
	if isr := p.State().ISR; len(isr) != 2 {
		t.Fatalf("ISR %v", isr)
	}
	select {
	case ch := <-c.isrChanges:
		t.Fatalf("ISR changed: %+v", ch)
	default:
	}
}

// TestWatchedSessionDeliversWhatASizeLimitedAnswerLeftOut: a full answer cut by the
// response's max_bytes leaves most partitions' records out; the later incremental
// fetches, which name only the partitions the follower got records of, still deliver
// every partition's records (the reverted idle skip's bug: a partition left out was
// skipped with records unread).
func TestWatchedSessionDeliversWhatASizeLimitedAnswerLeftOut(t *testing.T) {
	const n = 20
	c := newWatchCluster(t, n)
	ends := make([]int64, n)
	for i, p := range c.parts {
		for range 2 {
			info, err := p.AppendAsLeader(batch(4), 0)
			if err != nil {
				t.Fatal(err)
			}
			ends[i] = info.LastOffset + 1
		}
	}
	f := newWatchFollower(c)
	f.maxBytes = 1 // the first batch only (KIP-74)
	before := make([]int64, n)
	f.fetch(t, 0)
	for round := 0; ; round++ {
		done := true
		for i := range ends {
			done = done && f.offsets[i] == ends[i]
		}
		if done {
			break
		}
		if round > 3*2*n { // one batch per answer
			t.Fatalf("after %d rounds the follower is at %v, want %v", round, f.offsets, ends)
		}
		changed := f.changedSince(before)
		copy(before, f.offsets)
		f.fetch(t, 100*time.Millisecond, changed...)
	}
}

// TestWatchedSessionWakesOnOnePartitionsChange: in a large idle session whose fetch
// parks, an append to one partition answers the parked fetch at once with its
// records; its high watermark and log start moves are delivered (with the next
// answer: they do not wake a parked follower fetch, as in Kafka); a new leader epoch
// answers at once with the partition's error (the follower's epoch is fenced), and so
// does the leadership moving away (the test source answers every error
// UNKNOWN_SERVER_ERROR; the broker's FENCED_LEADER_EPOCH and NOT_LEADER_OR_FOLLOWER).
func TestWatchedSessionWakesOnOnePartitionsChange(t *testing.T) {
	const n = 300
	c := newWatchCluster(t, n)
	f := newWatchFollower(c)
	f.fetch(t, 0)
	f.fetch(t, 0) // every partition idle and attached
	const long = 20 * time.Second

	// parked runs a fetch that must park, then change, and returns how long it took
	// and what it named.
	parked := func(change func(), named ...int) (time.Duration, []int) {
		t.Helper()
		var wg sync.WaitGroup
		wg.Add(1)
		id := f.id
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(5 * time.Second)
			for !sessionParked(c, id) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			change()
		}()
		start := time.Now()
		got := f.fetch(t, long, named...)
		wg.Wait()
		return time.Since(start), got
	}

	// An append wakes it.
	p := c.parts[123]
	took, got := parked(func() {
		if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
			t.Error(err)
		}
	})
	if took >= long || len(got) != 1 || got[0] != 123 || f.offsets[123] != 3 {
		t.Fatalf("append: answered after %v naming %v, follower at %d", took, got, f.offsets[123])
	}
	// The follower's new log end moves the high watermark: told in the next answer.
	if got := f.fetch(t, 300*time.Millisecond, 123); len(got) != 1 || f.hw[123] != 3 {
		t.Fatalf("high watermark: answer named %v, hw %d", got, f.hw[123])
	}
	// A log start move (DeleteRecords) is told too.
	if _, err := p.DeleteRecordsBefore(2); err != nil {
		t.Fatal(err)
	}
	if got := f.fetch(t, 300*time.Millisecond); len(got) != 1 || got[0] != 123 || f.start[123] != 2 {
		t.Fatalf("log start: answer named %v, log start %d", got, f.start[123])
	}
	// A new leader epoch (the same leader) answers at once.
	q := c.parts[7]
	took, got = parked(func() {
		if err := q.BecomeLeaderOf(2, 1, []int32{0, 1}, []int32{0, 1}); err != nil {
			t.Error(err)
		}
	})
	if took >= long || len(got) != 1 || got[0] != 7 || f.errs[7] == 0 {
		t.Fatalf("leader epoch: answered after %v naming %v, error %d", took, got, f.errs[7])
	}
	f.epochs[7] = 2
	f.fetch(t, 0, 7)
	if f.errs[7] != 0 {
		t.Fatalf("fetching in the new epoch: error %d", f.errs[7])
	}
	// The follower, truncated (to an offset it still has): it names its new offset,
	// which the leader reads.
	f.offsets[123] = 2
	if got := f.fetch(t, 300*time.Millisecond, 123); len(got) != 1 || f.offsets[123] != 3 {
		t.Fatalf("truncated follower: answer named %v, follower at %d", got, f.offsets[123])
	}
	// Leadership moving away ends the park.
	r := c.parts[250]
	took, got = parked(func() {
		if err := r.BecomeFollower(3, 2); err != nil {
			t.Error(err)
		}
	})
	if took >= long || len(got) != 1 || got[0] != 250 || f.errs[250] == 0 {
		t.Fatalf("leadership moved: answered after %v naming %v, error %d", took, got, f.errs[250])
	}
}

// countingSource counts the partitions a FetchServer reads (looks up).
type countingSource struct {
	FetchSource
	reads atomic.Int64
}

// topicIDSource is a test source that knows its topics' ids (fetchSource, and
// countingSource around it).
type topicIDSource interface{ topicIDs() map[string][16]byte }

func (s *countingSource) topicIDs() map[string][16]byte {
	return s.FetchSource.(topicIDSource).topicIDs()
}

func (s *countingSource) Replica(topic string, partition int32) (*Partition, bool, int16) {
	s.reads.Add(1)
	return s.FetchSource.Replica(topic, partition)
}

// TestWatchedSessionIdleFetchReadsNothing: an idle incremental fetch of a follower
// session, parked and answered at its max wait, reads no partition at all.
func TestWatchedSessionIdleFetchReadsNothing(t *testing.T) {
	c := newWatchCluster(t, 50)
	src := &countingSource{FetchSource: c.s.Source}
	c.s.Source = src
	f := newWatchFollower(c)
	f.fetch(t, 0)
	f.fetch(t, 0)
	f.fetch(t, 0)
	before := src.reads.Load()
	for range 3 {
		if got := f.fetch(t, 20*time.Millisecond); len(got) != 0 {
			t.Fatalf("idle fetch named %v", got)
		}
	}
	if n := src.reads.Load() - before; n != 0 {
		t.Fatalf("idle fetches read %d partitions", n)
	}
}

// TestWatchedSessionAsksAgainForADroppedISRAddition: a caught-up follower's ISR
// addition that the controller did not attempt is asked again at the session's next
// fetch, although nothing else changed on the partition (before the watch, every
// fetch read every partition, and asked again).
func TestWatchedSessionAsksAgainForADroppedISRAddition(t *testing.T) {
	c := newWatchCluster(t, 5)
	notAttempted := func(ISRChange) error { return fmt.Errorf("%w: INELIGIBLE_REPLICA", ErrISRChangeNotAttempted) }
	c.alter.Store(&notAttempted)
	p := c.parts[3]
	if err := p.BecomeLeaderOf(2, 1, []int32{0}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	f := newWatchFollower(c)
	f.epochs[3] = 2
	f.fetch(t, 0) // full: follower 1 at the log end, its addition asked
	asked := func() bool {
		select {
		case ch := <-c.isrChanges:
			if ch.Partition != 0 || ch.Topic != p.Topic || len(ch.ISR) != 2 {
				t.Fatalf("unexpected ISR change %+v", ch)
			}
			return true
		case <-time.After(5 * time.Second):
			return false
		}
	}
	if !asked() {
		t.Fatal("no ISR addition asked")
	}
	// Dropped (not attempted): the pending change clears on the settling goroutine.
	testwait.For(t, 10*time.Second, func() error {
		if n := p.State().MaximalISRSize; n != 1 {
			return fmt.Errorf("maximal ISR of %d: the addition is still pending", n)
		}
		return nil
	})
	for range 3 {
		f.fetch(t, 20*time.Millisecond)
	}
	if !asked() {
		t.Fatal("the dropped ISR addition was not asked again at the next fetches")
	}
}

// TestForgottenPartitionLeavesTheSessionClock: a partition the follower's session
// forgets no longer counts the session's fetches as the follower's: after a quiet spell
// longer than replica.lag.time.max.ms, an append finds the follower out of sync there
// (Kafka: it last fetched the partition before the spell), while the partitions still
// in the session keep it in sync.
func TestForgottenPartitionLeavesTheSessionClock(t *testing.T) {
	const lagMax = 400 * time.Millisecond
	c := newWatchCluster(t, 4)
	f := newWatchFollower(c)
	f.fetch(t, 0)
	f.fetch(t, 0)
	f.forget = []int{2}
	f.fetch(t, 0)
	quietUntil := time.Now().Add(3 * lagMax)
	for time.Now().Before(quietUntil) {
		f.fetch(t, 50*time.Millisecond)
	}
	for _, i := range []int{1, 2} {
		if _, err := c.parts[i].AppendAsLeader(batch(1), 0); err != nil {
			t.Fatal(err)
		}
		c.parts[i].MaybeShrinkISR(time.Now(), lagMax)
	}
	pending := func(p *Partition) []int32 {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.pendingISR
	}
	if got := pending(c.parts[2]); len(got) != 1 || got[0] != 0 {
		t.Fatalf("forgotten partition: ISR change %v, want [0]", got)
	}
	if got := pending(c.parts[1]); got != nil {
		t.Fatalf("partition still in the session: ISR change %v", got)
	}
}

// TestWatchedSessionToldOfRetention: the leader's retention deleting segments moves the
// log start, and an idle caught-up follower's session is told it at its next fetch
// (the follower's own log start follows the leader's, as in Kafka), not only at the
// partition's next append.
func TestWatchedSessionToldOfRetention(t *testing.T) {
	c := newWatchCluster(t, 4)
	f := newWatchFollower(c)
	p := c.parts[2]
	for range 3 {
		if _, err := p.AppendAsLeader(batch(2), 0); err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		err := p.log.Roll()
		p.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	for range 6 { // fetch to the log end, then until an answer names nothing
		if got = f.fetch(t, 100*time.Millisecond); len(got) == 0 && f.hw[2] == 6 {
			break
		}
	}
	if len(got) != 0 || f.hw[2] != 6 {
		t.Fatalf("not idle: named %v, hw %d", got, f.hw[2])
	}
	p.mu.Lock()
	cfg := p.log.Config()
	cfg.RetentionBytes = 1
	p.log.SetConfig(cfg)
	p.mu.Unlock()
	res, err := p.EnforceRetention()
	if err != nil || len(res.DeletedSegments) == 0 {
		t.Fatalf("retention deleted %v: %v", res.DeletedSegments, err)
	}
	if got := f.fetch(t, 300*time.Millisecond); len(got) != 1 || got[0] != 2 || f.start[2] == 0 {
		t.Fatalf("after retention: answer named %v, log start %d", got, f.start[2])
	}
}

// TestWatchedSessionReadsEveryPartitionWhenItsBrokerEpochChanges: a follower session's
// fetch naming another broker epoch than the one before (the follower registered again
// and kept its session) reads every partition once, so that the leader learns the new
// epoch for the idle ones too (KIP-903: an ISR addition names the epoch of the
// follower's latest read); the fetches after it read nothing again.
func TestWatchedSessionReadsEveryPartitionWhenItsBrokerEpochChanges(t *testing.T) {
	const n = 20
	c := newWatchCluster(t, n)
	src := &countingSource{FetchSource: c.s.Source}
	c.s.Source = src
	f := newWatchFollower(c)
	f.brokerEpoch = 5
	f.fetch(t, 0)
	f.fetch(t, 0)
	f.fetch(t, 0)
	idle := func() {
		t.Helper()
		before := src.reads.Load()
		if got := f.fetch(t, 20*time.Millisecond); len(got) != 0 {
			t.Fatalf("idle fetch named %v", got)
		}
		if k := src.reads.Load() - before; k != 0 {
			t.Fatalf("idle fetch read %d partitions", k)
		}
	}
	idle()
	f.brokerEpoch = 6
	before := src.reads.Load()
	f.fetch(t, 0)
	if k := src.reads.Load() - before; k != n {
		t.Fatalf("the fetch at a new broker epoch read %d partitions, want every one (%d)", k, n)
	}
	idle()
}

func TestWatchedSessionGetsEveryPartitionOfOneProduceRequest(t *testing.T) {
	// A produce request appending to two partitions of one follower session: with the
	// request's Wakes run after both appends, the parked fetch is answered once, with
	// the records of both, as Kafka answers it; answered at each append (no Wakes), it
	// carries the first partition's records only, and the second's wait for the
	// follower's next fetch.
	c := newWatchCluster(t, 4)
	f := newWatchFollower(c)
	f.fetch(t, 0)
	f.fetch(t, 0) // every partition idle and attached
	const long = 20 * time.Second
	parked := func(change func()) {
		t.Helper()
		var wg sync.WaitGroup
		id := f.id
		wg.Go(func() {
			deadline := time.Now().Add(10 * time.Second)
			for !sessionParked(c, id) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			change()
		})
		f.fetch(t, long)
		wg.Wait()
	}
	appendBoth := func(wakes *Wakes) {
		for _, i := range []int{1, 2} {
			if _, err := c.parts[i].AppendForAcksAll(batch(2), 1, false, nil, wakes); err != nil {
				t.Error(err)
			}
		}
	}
	parked(func() {
		var wakes Wakes
		appendBoth(&wakes)
		wakes.Run()
	})
	if !slices.Equal(f.offsets, []int64{0, 2, 2, 0}) {
		t.Fatalf("with the request's wakes: follower at %v after one answer, want both partitions' records", f.offsets)
	}
	parked(func() { appendBoth(nil) })
	if !slices.Equal(f.offsets, []int64{0, 4, 2, 0}) {
		t.Fatalf("answered at each append: follower at %v after one answer, want the first partition's records alone", f.offsets)
	}
	f.fetch(t, long)
	if !slices.Equal(f.offsets, []int64{0, 4, 4, 0}) {
		t.Fatalf("the next fetch: follower at %v", f.offsets)
	}
}

// sessionParked reports whether fetch session id has a fetch parked on its watch
// (sessionWatch.park ran): from then on every wake-up reaches it, where the
// purgatory counts it parked a little earlier.
func sessionParked(c *watchCluster, id int32) bool {
	s := c.s.Sessions.get(id)
	if s == nil || s.watch == nil {
		return false
	}
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.parked != nil
}
