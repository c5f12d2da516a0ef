package replication

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/segment"
)

// purgPartition is a leader replica (broker 0) of t-id with follower 1 in its ISR.
func purgPartition(t *testing.T, id int32) *Partition {
	t.Helper()
	log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartition("t", id, log, 0, Options{BrokerID: 0})
	t.Cleanup(func() { p.Stop(false) })
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	return p
}

// purgAppend appends one record as leader and returns the offset the high watermark
// must reach.
func purgAppend(t *testing.T, p *Partition) int64 {
	t.Helper()
	info, err := p.AppendAsLeader(batch(1), 0)
	if err != nil {
		t.Error(err)
		return 0
	}
	return info.LastOffset + 1
}

// purgFollowerFetch is follower 1's fetch at offset, as the Fetch handler reads it: it
// advances the high watermark.
func purgFollowerFetch(t *testing.T, p *Partition, offset int64) {
	t.Helper()
	res, _, err := p.ReadForFollowerHeld(FollowerFetch{ReplicaID: 1, FetchOffset: offset, CurrentLeaderEpoch: 1,
		LastFetchedEpoch: -1, MaxBytes: 1 << 20, LogStartOffset: 0}, time.Now())
	res.Held.Release()
	if err != nil {
		t.Error(err)
	}
}

// waitAcks parks an acks=all wait over parts with their end offsets; its outcomes
// arrive on the channel.
func waitAcks(pg *Purgatory, ctx context.Context, parts []*Partition, ends []int64, timeout time.Duration) chan []Outcome {
	writes := make([]AcksAllWrite, len(parts))
	for i, p := range parts {
		writes[i] = AcksAllWrite{Partition: p, End: ends[i], MinISR: 1}
	}
	ch := make(chan []Outcome, 2) // room for a wrong second answer
	pg.WaitAcksAll(ctx, writes, timeout, func(o []Outcome) { ch <- o })
	return ch
}

func receiveOutcomes(t *testing.T, ch chan []Outcome) []Outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return nil
	}
}

// The high watermark advance (on the follower fetch's goroutine) and the timeout race:
// the write is answered exactly once, committed only if the high watermark passed
// its records, and its waiter no longer answers afterwards.
func TestWaitAcksAllAnswersOnceWhenHighWatermarkAndTimeoutRace(t *testing.T) {
	pg := NewPurgatory(context.Background())
	p := purgPartition(t, 0)
	var successes, timeouts int
	for i := range 200 {
		end := purgAppend(t, p)
		timeout := time.Duration(i%4) * 250 * time.Microsecond
		start := time.Now()
		ch := waitAcks(pg, context.Background(), []*Partition{p}, []int64{end}, timeout)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); purgFollowerFetch(t, p, end) }()
		switch o := receiveOutcomes(t, ch)[0]; o {
		case OutcomeCommitted:
			successes++
			if hw := p.State().HighWatermark; hw < end {
				t.Fatalf("acknowledged at high watermark %d, before %d", hw, end)
			}
		case OutcomeTimedOut:
			timeouts++
		default:
			t.Fatalf("outcome %v", o)
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

// A write over two partitions is answered when the last of them commits, on the
// goroutine of that partition's follower fetch; one whose high watermark is already
// there at registration counts at once.
func TestWaitAcksAllAnswersWhenTheLastPartitionCommits(t *testing.T) {
	pg := NewPurgatory(context.Background())
	p0, p1 := purgPartition(t, 0), purgPartition(t, 1)
	e0, e1 := purgAppend(t, p0), purgAppend(t, p1)
	purgFollowerFetch(t, p0, e0) // p0 committed before the write waits
	ch := waitAcks(pg, context.Background(), []*Partition{p0, p1}, []int64{e0, e1}, time.Minute)
	select {
	case <-ch:
		t.Fatal("answered before partition 1 committed")
	default:
	}
	purgFollowerFetch(t, p1, e1)
	select { // sent by the follower fetch itself, before it returned
	case o := <-ch:
		for i, o := range o {
			if o != OutcomeCommitted {
				t.Fatalf("partition %d: %v", i, o)
			}
		}
	default:
		t.Fatal("the high watermark advance did not answer")
	}

	// Already committed everywhere: answered from WaitAcksAll.
	ch = waitAcks(pg, context.Background(), []*Partition{p0, p1}, []int64{e0, e1}, time.Minute)
	if len(ch) != 1 {
		t.Fatal("a committed write was not answered at once")
	}
	if n := pg.Parked(); n != 0 {
		t.Fatalf("%d parked after every answer", n)
	}
}

// Losing leadership answers OutcomeNotLeader and the connection closing
// OutcomeTimedOut, each once.
func TestWaitAcksAllLeadershipChangeAndConnectionClose(t *testing.T) {
	pg := NewPurgatory(context.Background())
	p := purgPartition(t, 0)
	end := purgAppend(t, p)
	ch := waitAcks(pg, context.Background(), []*Partition{p}, []int64{end}, time.Minute)
	if err := p.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	if o := receiveOutcomes(t, ch)[0]; o != OutcomeNotLeader {
		t.Fatalf("after losing leadership: %v", o)
	}

	p = purgPartition(t, 1)
	end = purgAppend(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	ch = waitAcks(pg, ctx, []*Partition{p}, []int64{end}, time.Minute)
	cancel()
	if o := receiveOutcomes(t, ch)[0]; o != OutcomeTimedOut {
		t.Fatalf("after the connection closed: %v", o)
	}
	purgFollowerFetch(t, p, end) // commits now: no second answer from the waiter
	if len(ch) != 0 {
		t.Fatal("answered twice")
	}
}

// testRead is a fetch read whose n bytes are what was appended since the fetch parked.
type testRead struct {
	changes uint64
	n       int
	// track, when set, counts the read's making and releases (readTrack).
	track    *readTrack
	released atomic.Bool
}

func (r *testRead) Changes() uint64 { return r.changes }

func (r *testRead) Release() {
	if r.track == nil {
		return
	}
	if r.released.Swap(true) {
		r.track.twice.Store(true)
		return
	}
	r.track.released.Add(1)
}

// readTrack checks that every read a parked fetch made is released once: by the
// purgatory when it is not the answer, by the answer's receiver when it is (as the
// broker's held record ranges must be).
type readTrack struct {
	made, released atomic.Int64
	twice          atomic.Bool
}

func (tr *readTrack) read(changes uint64, n int) *testRead {
	tr.made.Add(1)
	return &testRead{changes: changes, n: n, track: tr}
}

// parkTestFetch parks a fetch of p on pg whose read finds records once p's log end
// offset passes from (a stand-in for the broker's read: the answer's bytes are what
// was appended since). It returns the channel the answers arrive on (nil: abandoned),
// the read count and the parked fetch.
func parkTestFetch(ctx context.Context, pg *Purgatory, p *Partition, from int64, wait time.Duration, follower bool) (chan FetchRead, *atomic.Int32, *delayedFetch) {
	ch := make(chan FetchRead, 2) // room for a wrong second answer
	reads := &atomic.Int32{}
	df := pg.parkFetch(ctx, []*Partition{p}, wait, &testRead{changes: p.Changes()}, false, DelayedFetch{
		Read: func() (FetchRead, bool) {
			reads.Add(1)
			c := p.Changes()
			n := int(p.State().LogEndOffset - from)
			return &testRead{changes: c, n: n}, n >= 1 || p.State().Role != Leader
		},
		Reusable: func(r FetchRead) bool { return r.(*testRead).n == 0 },
		Answer:   func(r FetchRead) { ch <- r },
		Follower: follower,
		Stopping: func() FetchRead { return &testRead{} },
	})
	return ch, reads, df
}

// A parked follower fetch is answered by the append itself: on the appending goroutine,
// before the append returns (the produce handler's path), with no goroutine woken.
func TestDelayedFollowerFetchAnsweredByTheAppend(t *testing.T) {
	p := purgPartition(t, 0)
	ch, _, _ := parkTestFetch(context.Background(), NewPurgatory(context.Background()), p, p.State().LogEndOffset, time.Minute, true)
	if len(ch) != 0 {
		t.Fatal("answered before any append")
	}
	if _, err := p.AppendValidatedAsLeader(batch(1), 0); err != nil {
		t.Fatal(err)
	}
	if len(ch) != 1 {
		t.Fatal("the append returned without answering the parked fetch")
	}
	// Another append: the fetch was answered, its waiter is gone.
	purgAppend(t, p)
	if len(ch) != 1 {
		t.Fatal("answered twice")
	}
}

// The append, the timeout (max_wait_ms), the drain and the connection closing race:
// every parked fetch gets exactly one answer (an abandonment, nil, for the closed
// connection), and nothing after it.
func TestDelayedFollowerFetchAnswersOnceWhenAppendTimeoutAndStopRace(t *testing.T) {
	p := purgPartition(t, 0)
	var answered, expired, abandoned int
	for i := range 200 {
		from := p.State().LogEndOffset
		ctx, cancel := context.WithCancel(context.Background())
		drain, stop := context.WithCancel(context.Background())
		wait := time.Duration(i%4) * 200 * time.Microsecond
		ch, _, _ := parkTestFetch(ctx, NewPurgatory(drain), p, from, wait+time.Duration(i%2)*time.Minute, true)
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); purgAppend(t, p) }()
		go func() {
			defer wg.Done()
			if i%5 == 0 {
				cancel()
			}
		}()
		go func() {
			defer wg.Done()
			if i%7 == 0 {
				stop()
			}
		}()
		var r FetchRead
		select {
		case r = <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		wg.Wait()
		switch {
		case r == nil:
			abandoned++
		case p.State().LogEndOffset > from:
			answered++
		default:
			expired++
		}
		cancel()
		stop()
		select { // the timer has fired or been stopped by now, give it a moment
		case <-ch:
			t.Fatal("answered twice")
		case <-time.After(wait + time.Millisecond):
		}
	}
	t.Logf("%d answers, %d expiries, %d abandonments", answered, expired, abandoned)
}

// An append that lands while the fetch's read runs (after it found nothing) makes that
// read run again instead of being lost: the fetch is answered without waiting out
// max_wait_ms.
func TestDelayedFollowerFetchReadsAgainAfterAWakeUpDuringItsRead(t *testing.T) {
	p := purgPartition(t, 0)
	from := p.State().LogEndOffset
	ch := make(chan FetchRead, 2)
	var df *delayedFetch
	var ready sync.WaitGroup
	ready.Add(1)
	first := true
	df = NewPurgatory(context.Background()).parkFetch(context.Background(), []*Partition{p}, time.Minute, &testRead{changes: p.Changes()}, false, DelayedFetch{
		Read: func() (FetchRead, bool) {
			n := int(p.State().LogEndOffset - from)
			if first && n > 0 {
				// The first wake-up's read: pretend it read just before the append
				// landed, and let a second append wake the fetch while this read runs.
				first = false
				n = 0
				ready.Wait() // df is set
				go purgAppend(t, p)
				deadline := time.Now().Add(10 * time.Second)
				for df.state.Load() != delayedDirty && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond) // polling for the dirty mark, with a deadline
				}
			}
			return &testRead{n: n}, n >= 1
		},
		Reusable: func(FetchRead) bool { return false },
		Answer:   func(r FetchRead) { ch <- r },
		Follower: true,
	})
	ready.Done()
	go purgAppend(t, p)
	select {
	case r := <-ch:
		if r == nil {
			t.Fatal("abandoned")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wake-up during the read was lost")
	}
}

// A follower fetch parked for a minute is answered at once when this broker becomes a
// leader (the kick), and a second leadership within leaderKickGap still answers the
// fetch parked after the first: kicks are coalesced, never lost.
func TestLeadershipGainedAnswersParkedFollowerFetches(t *testing.T) {
	p := purgPartition(t, 0)
	pg := NewPurgatory(context.Background())
	never := p.State().LogEndOffset + 1<<40 // reads find nothing
	first, _, _ := parkTestFetch(context.Background(), pg, p, never, time.Minute, true)
	if len(first) != 0 {
		t.Fatal("answered before any kick")
	}
	pg.LeadershipGained()
	testwait.Until(t, 30*time.Second, "the parked fetch answered by the kick", func() bool { return len(first) == 1 })

	second, _, _ := parkTestFetch(context.Background(), pg, p, never, time.Minute, true)
	pg.LeadershipGained() // within the gap of the first: scheduled after it, not dropped
	testwait.Until(t, 30*time.Second, "the fetch parked after the first kick answered by the late one", func() bool { return len(second) == 1 })
	if len(first) != 1 {
		t.Fatal("the first fetch answered twice")
	}
}

// The drain answers a parked follower fetch at once with its Stopping answer, without
// reading the partitions again; a consumer's fetch parked meanwhile reads once more.
func TestDrainAnswersParkedFollowerFetchWithoutARead(t *testing.T) {
	p := purgPartition(t, 0)
	drain, stop := context.WithCancel(context.Background())
	pg := NewPurgatory(drain)
	ch, reads, _ := parkTestFetch(context.Background(), pg, p, p.State().LogEndOffset, time.Minute, true)
	consumer, _, _ := parkTestFetch(context.Background(), pg, p, p.State().LogEndOffset, time.Minute, false)
	before := reads.Load()
	stop()
	select {
	case r := <-ch:
		if r == nil {
			t.Fatal("abandoned instead of answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not answer the parked fetch")
	}
	if got := reads.Load(); got != before {
		t.Fatalf("the drain read the fetch again (%d reads, %d before)", got, before)
	}
	select {
	case r := <-consumer:
		if r == nil {
			t.Fatal("the consumer's fetch abandoned instead of answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not answer the parked consumer fetch")
	}
	purgAppend(t, p)
	if len(ch) != 0 || len(consumer) != 0 {
		t.Fatal("answered twice")
	}
}

// Parking, completion, timeouts, connections closing and a partition's removal race
// (run it with -race): acks=all waits and consumers' and followers' fetches over four
// partitions, parked from several goroutines while appends and follower fetches move
// the partitions on, are each answered exactly once, and none stays parked.
func TestPurgatoryConcurrentParkCompleteTimeoutRemove(t *testing.T) {
	pg := NewPurgatory(context.Background())
	parts := []*Partition{purgPartition(t, 0), purgPartition(t, 1), purgPartition(t, 2), purgPartition(t, 3)}
	var requests, answers atomic.Int64
	var twice atomic.Bool
	var reads readTrack
	answerOnce := func() func() {
		var once atomic.Bool
		return func() {
			if !once.CompareAndSwap(false, true) {
				twice.Store(true)
			}
			answers.Add(1)
		}
	}
	stop := make(chan struct{})
	tick := make(chan struct{}, 64) // an append per parked request, or so, meanwhile
	var movers sync.WaitGroup
	for _, p := range parts {
		movers.Add(1)
		go func() { // the producer and the follower: appends, high watermark advances
			defer movers.Done()
			for {
				select {
				case <-stop:
					return
				case <-tick:
				}
				info, err := p.AppendAsLeader(batch(1), 0)
				if err != nil {
					return // removed
				}
				res, _, _ := p.ReadForFollowerHeld(FollowerFetch{ReplicaID: 1, FetchOffset: info.LastOffset + 1, CurrentLeaderEpoch: 1,
					LastFetchedEpoch: -1, MaxBytes: 1 << 20, LogStartOffset: 0}, time.Now())
				res.Held.Release()
			}
		}()
	}
	timeouts := []time.Duration{0, 100 * time.Microsecond, time.Millisecond, time.Minute}
	var parkers sync.WaitGroup
	for w := range 4 {
		parkers.Add(1)
		go func() {
			defer parkers.Done()
			for i := range 150 {
				if w == 0 && i == 75 {
					parts[3].Stop(false) // a partition removed while requests wait on it
				}
				ps := []*Partition{parts[(w+i)%4], parts[(w+i+1)%4]}
				ctx, cancel := context.WithCancel(context.Background())
				timeout := timeouts[(w+i)%len(timeouts)]
				requests.Add(1)
				done := answerOnce()
				select {
				case tick <- struct{}{}:
				default:
				}
				switch i % 3 {
				case 0:
					ends := []int64{ps[0].State().LogEndOffset, ps[1].State().LogEndOffset}
					writes := []AcksAllWrite{{Partition: ps[0], End: ends[0], MinISR: 1}, {Partition: ps[1], End: ends[1], MinISR: 1}}
					pg.WaitAcksAll(ctx, writes, timeout, func([]Outcome) { done() })
				default:
					from := ps[0].State().LogEndOffset + 2 // a couple of appends on
					var c uint64
					for _, p := range ps {
						c += p.Changes()
					}
					pg.ParkFetch(ctx, ps, timeout, reads.read(c, 0), false, DelayedFetch{
						Read: func() (FetchRead, bool) {
							st := ps[0].State()
							return reads.read(0, int(st.LogEndOffset-from)), st.LogEndOffset >= from || st.Role != Leader
						},
						Reusable: func(r FetchRead) bool { return r.(*testRead).n <= 0 },
						Answer: func(r FetchRead) {
							if r != nil {
								r.Release() // sent: the answer's receiver lets it go
							}
							done()
						},
						Follower: i%3 == 2,
						Stopping: func() FetchRead { return reads.read(0, 0) },
					})
				}
				if i%5 == 0 {
					cancel() // the connection closes
				}
				defer cancel()
			}
		}()
	}
	parkers.Wait()
	close(stop)
	movers.Wait()
	for _, p := range parts {
		p.Stop(false) // every request still parked on a partition completes
	}
	testwait.Until(t, 30*time.Second, "every parked request answered", func() bool {
		return answers.Load() == requests.Load() && pg.Parked() == 0
	})
	if twice.Load() {
		t.Fatal("a request was answered twice")
	}
	if reads.twice.Load() {
		t.Fatal("a parked fetch's read was released twice")
	}
	if made, released := reads.made.Load(), reads.released.Load(); made != released {
		t.Fatalf("%d reads made, %d released: the purgatory leaked reads it did not answer with", made, released)
	}
}

// A consumer's parked fetch reads up to the high watermark: a leader append that
// leaves the high watermark where it was does not read it again (nothing it could
// read has changed, and the read would run on the produce handler's goroutine); the
// follower fetch that advances the high watermark over the records answers it.
func TestParkedConsumerFetchWakesOnTheHighWatermark(t *testing.T) {
	p := purgPartition(t, 0)
	from := p.State().HighWatermark
	ch := make(chan FetchRead, 2)
	var reads atomic.Int32
	NewPurgatory(context.Background()).ParkFetch(context.Background(), []*Partition{p}, time.Minute, &testRead{changes: p.Changes()}, false, DelayedFetch{
		Read: func() (FetchRead, bool) {
			reads.Add(1)
			n := int(p.State().HighWatermark - from)
			return &testRead{changes: p.Changes(), n: n}, n >= 1
		},
		Reusable: func(FetchRead) bool { return false },
		Answer:   func(r FetchRead) { ch <- r },
	})
	end := purgAppend(t, p) // follower 1 has not fetched it: the high watermark stays
	if n := reads.Load(); n != 0 || len(ch) != 0 {
		t.Fatalf("the append read the fetch %d times, %d answers", n, len(ch))
	}
	purgFollowerFetch(t, p, end) // answered on this goroutine, before it returns
	if len(ch) != 1 || reads.Load() != 1 {
		t.Fatalf("after the high watermark advance: %d answers, %d reads", len(ch), reads.Load())
	}
}

// ExpireAcksAllWhen's end (the whole cluster stopping) answers parked acks=all writes
// as their timeout would: none committed before the high watermark passed it, each
// answered once; until it ends they stay parked.
func TestWaitAcksAllExpiresWhenTheWholeClusterStops(t *testing.T) {
	pg := NewPurgatory(context.Background())
	end, stopping := context.WithCancel(context.Background())
	pg.ExpireAcksAllWhen(end)
	p0, p1 := purgPartition(t, 0), purgPartition(t, 1)
	e0, e1 := purgAppend(t, p0), purgAppend(t, p1)
	ch := waitAcks(pg, context.Background(), []*Partition{p0, p1}, []int64{e0, e1}, time.Hour)
	purgFollowerFetch(t, p0, e0-1) // the follower has not got the write yet
	select {
	case o := <-ch:
		t.Fatalf("answered before the stop: %v", o)
	default:
	}
	stopping()
	if o := receiveOutcomes(t, ch); o[0] != OutcomeTimedOut || o[1] != OutcomeTimedOut {
		t.Fatalf("outcomes %v, want both timed out (neither high watermark passed its write)", o)
	}
	purgFollowerFetch(t, p0, e0) // commits now: no second answer
	purgFollowerFetch(t, p1, e1)
	if len(ch) != 0 {
		t.Fatal("answered twice")
	}
	if n := pg.Parked(); n != 0 {
		t.Fatalf("%d parked after every answer", n)
	}
	// Once ended, a write parked later is answered at once by the same rule.
	e0 = purgAppend(t, p0)
	if o := receiveOutcomes(t, waitAcks(pg, context.Background(), []*Partition{p0}, []int64{e0}, time.Hour)); o[0] != OutcomeTimedOut {
		t.Fatalf("outcome %v after the stop, want timed out", o)
	}
}
