package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
)

// batch builds a minimal valid v2 batch of n records with empty keys and values.
func batch(n int) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		body := []byte{0}                                  // attributes
		body = binary.AppendVarint(body, 0)                // timestamp delta
		body = binary.AppendVarint(body, int64(i))         // offset delta
		body = binary.AppendVarint(body, -1)               // null key
		body = binary.AppendVarint(body, 1)                // value length
		body = append(body, 'v')                           //
		body = binary.AppendVarint(body, 0)                // headers
		recs = binary.AppendVarint(recs, int64(len(body))) // length
		recs = append(recs, body...)
	}
	b := make([]byte, segment.BatchHeaderSize, segment.BatchHeaderSize+len(recs))
	binary.BigEndian.PutUint32(b[8:], uint32(segment.BatchHeaderSize-12+len(recs)))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(time.Now().UnixMilli()))
	binary.BigEndian.PutUint64(b[35:], uint64(time.Now().UnixMilli()))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// followerRead is a follower's fetch as the Fetch handler serves it
// (ReadForFollowerHeld), with the records copied out of the held range for the test to
// look at.
func followerRead(p *Partition, f FollowerFetch, now time.Time) (FetchResult, *DivergingEpoch, error) {
	res, diverging, err := p.ReadForFollowerHeld(f, now)
	if res.Held != nil {
		b, herr := res.Held.Bytes()
		res.Held.Release()
		res.Held = nil
		if err == nil {
			err = herr
		}
		res.Records = b
	}
	return res, diverging, err
}

func newPartition(t *testing.T, sync bool) (*Partition, string) {
	t.Helper()
	dir := t.TempDir()
	log, _, err := segment.Open(dir, segment.DefaultConfig(), segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartition("t", 0, log, 0, Options{BrokerID: 0, SyncEveryAppend: sync})
	t.Cleanup(func() { p.Stop(false) })
	return p, dir
}

func TestLeaderHighWatermark(t *testing.T) {
	for _, sync := range []bool{false, true} {
		p, _ := newPartition(t, sync)
		if _, err := p.AppendAsLeader(batch(1), 0); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("append as follower: %v", err)
		}
		if err := p.BecomeLeaderOf(3, 0, []int32{0}, []int32{0}); err != nil {
			t.Fatal(err)
		}
		info, err := p.AppendAsLeader(batch(5), 1)
		if err != nil || info.FirstOffset != 0 || info.LastOffset != 4 {
			t.Fatalf("append: %+v %v", info, err)
		}
		st := p.State()
		if st.HighWatermark != 5 || st.LogEndOffset != 5 || st.LeaderEpoch != 3 {
			t.Fatalf("sync=%v state %+v", sync, st)
		}
		if sync && st.RecoveryPoint != 5 {
			t.Fatalf("synced append not flushed: recovery point %d", st.RecoveryPoint)
		}
		if e := p.log.LeaderEpochs().Entries(); len(e) != 1 || e[0] != (segment.EpochEntry{Epoch: 3, StartOffset: 0}) {
			t.Fatalf("epochs %v", e)
		}
	}
}

// With a follower in the ISR whose log end offset is unknown, the high watermark holds:
// consumers see nothing new, followers read to the log end.
func TestHighWatermarkWaitsForTheISR(t *testing.T) {
	p, _ := newPartition(t, false)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
		t.Fatal(err)
	}
	if hw := p.State().HighWatermark; hw != 0 {
		t.Fatalf("HW %d with a silent follower", hw)
	}
	res, err := p.Read(0, 1<<20, -1, LeaderOnly)
	if err != nil || len(res.Records) != 0 || res.HighWatermark != 0 {
		t.Fatalf("consumer read above the HW: %d bytes, %v", len(res.Records), err)
	}
	res, _, err = followerRead(p, FollowerFetch{ReplicaID: 1, FetchOffset: 0, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}, time.Now())
	if err != nil || len(res.Records) == 0 || res.LogEndOffset != 3 || res.HighWatermark != 0 {
		t.Fatalf("follower read: %d bytes, %v", len(res.Records), err)
	}
	// min.insync.replicas above the ISR size writes nothing.
	if _, err := p.AppendAsLeader(batch(1), 3); !errors.Is(err, ErrNotEnoughReplicas) || p.State().LogEndOffset != 3 {
		t.Fatalf("min.insync: %v, LEO %d", err, p.State().LogEndOffset)
	}
	// The ISR shrinks to the leader: the HW catches up and never goes back.
	p.UpdateISROf(0, []int32{0})
	if hw := p.State().HighWatermark; hw != 3 {
		t.Fatalf("HW %d after the ISR shrank", hw)
	}
	p.UpdateISROf(0, []int32{0, 1})
	if hw := p.State().HighWatermark; hw != 3 {
		t.Fatalf("HW moved back to %d", hw)
	}
}

func TestLeaderEpochFencing(t *testing.T) {
	p, _ := newPartition(t, false)
	if err := p.CheckLeaderEpoch(-1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("follower: %v", err)
	}
	if err := p.BecomeLeaderOf(5, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	for epoch, want := range map[int32]error{-1: nil, 5: nil, 4: ErrFencedLeaderEpoch, 6: ErrUnknownLeaderEpoch} {
		if err := p.CheckLeaderEpoch(epoch); !errors.Is(err, want) {
			t.Errorf("epoch %d: %v, want %v", epoch, err, want)
		}
		if _, err := p.Read(0, 1, epoch, LeaderOnly); !errors.Is(err, want) {
			t.Errorf("read at epoch %d: %v, want %v", epoch, err, want)
		}
	}
}

// Concurrent appends with fsync-before-visible share fsyncs; every acknowledged append is
// durable and below the high watermark when its call returns.
func TestGroupCommitConcurrentAppends(t *testing.T) {
	p, _ := newPartition(t, true)
	if err := p.BecomeLeaderOf(0, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	w := NewWaiter()
	p.Watch(w)
	defer p.Unwatch(w)
	var wg sync.WaitGroup
	errs := make(chan error, 8*50)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				info, err := p.AppendAsLeader(batch(2), 1)
				if err == nil {
					if st := p.State(); st.HighWatermark <= info.LastOffset || st.RecoveryPoint <= info.LastOffset {
						err = errors.New("append returned before it was durable and visible")
					}
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := p.State(); st.HighWatermark != 800 || st.LogEndOffset != 800 {
		t.Fatalf("state %+v", st)
	}
	select {
	case <-w.C:
	default:
		t.Fatal("waiter was not woken")
	}
}

func TestStopAndDelete(t *testing.T) {
	p, dir := newPartition(t, false)
	if err := p.BecomeLeaderOf(0, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(true); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(1), 0); !errors.Is(err, ErrPartitionStopped) {
		t.Fatalf("append after stop: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory remains: %v", err)
	}
	if err := p.Stop(true); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

func TestBecomeFollowerStopsLeading(t *testing.T) {
	p, _ := newPartition(t, false)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := p.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(1), 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append as follower: %v", err)
	}
	if err := p.CheckLeaderEpoch(1); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
	if err := p.CheckLeaderEpoch(2); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("current epoch on a follower: %v", err)
	}
}

// A follower answers consumers (KIP-392) up to its own high watermark, min(leader's HW,
// own LEO), and fences their epochs like a leader; leader-only requests get NOT_LEADER.
func TestFollowerServesReadsUpToItsHighWatermark(t *testing.T) {
	p, _ := newPartition(t, false)
	if err := p.BecomeFollower(4, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendAsFollower(batch(5), 4, 3, 0); err != nil {
		t.Fatal(err)
	}
	if st := p.State(); st.LogEndOffset != 5 || st.HighWatermark != 3 {
		t.Fatalf("follower state %+v", st)
	}
	if _, err := p.Read(0, 1<<20, -1, LeaderOnly); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("leader-only read from a follower: %v", err)
	}
	res, err := p.Read(0, 1<<20, 4, AnyReplica)
	if err != nil || res.HighWatermark != 3 || len(res.Records) != 0 {
		// batch(5) is one batch of five records ending at 4, above the HW 3: a
		// consumer gets nothing until the whole batch is committed.
		t.Fatalf("read below the HW: %d bytes, HW %d, %v", len(res.Records), res.HighWatermark, err)
	}
	if err := p.AppendAsFollower(nil, 4, 5, 0); err != nil {
		t.Fatal(err)
	}
	res, err = p.Read(0, 1<<20, 4, AnyReplica)
	if err != nil || res.HighWatermark != 5 || len(res.Records) == 0 {
		t.Fatalf("read once committed: %d bytes, HW %d, %v", len(res.Records), res.HighWatermark, err)
	}
	for epoch, want := range map[int32]error{3: ErrFencedLeaderEpoch, 5: ErrUnknownLeaderEpoch} {
		if err := p.CheckEpoch(epoch, AnyReplica); !errors.Is(err, want) {
			t.Errorf("epoch %d at a follower: %v, want %v", epoch, err, want)
		}
	}
}

// Waiters wake on new data and on high watermark (and follower log start) moves, not on
// every follower fetch: a parked follower fetch re-reads (and so records its progress
// again) when woken, and if that woke the other parked fetches the followers would spin
// waking each other.
func TestFollowerFetchWakesWaitersOnlyWhenTheHighWatermarkMoves(t *testing.T) {
	p, _ := newPartition(t, false)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1, 2}, []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	w := NewWaiter()
	p.Watch(w)
	defer p.Unwatch(w)
	woken := func() bool {
		select {
		case <-w.C:
			return true
		default:
			return false
		}
	}
	woken() // drain anything from before
	fetch := func(id int32, offset int64) {
		t.Helper()
		if _, _, err := followerRead(p, FollowerFetch{ReplicaID: id, FetchOffset: offset, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	fetch(1, 0) // each follower's first fetch reports its log start offset (that wakes)
	fetch(2, 0)
	woken()
	if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
		t.Fatal(err)
	}
	if !woken() {
		t.Fatal("an append did not wake the waiter (parked follower fetches wait for it)")
	}
	fetch(1, 3) // HW still 0: follower 2 has not fetched
	if woken() {
		t.Fatal("a follower fetch that did not move the HW woke the waiter")
	}
	fetch(1, 3) // the same again, as a woken parked fetch re-reads
	if woken() {
		t.Fatal("a repeated follower fetch woke the waiter")
	}
	fetch(2, 3) // now every ISR member has offset 3: the HW moves
	if !woken() || p.State().HighWatermark != 3 {
		t.Fatalf("HW move to %d did not wake the waiter", p.State().HighWatermark)
	}
}

// An fsync overtaken by a truncation proves nothing about the offsets it covered: the
// leader appends up to 5 and fsyncs; while the fsync runs (lock released) it becomes a
// follower and truncates to 2. The old fsync's target (5) must not become the durable
// end, or a later follower append up to 5 would be reported durable without an fsync.
func TestTruncationDuringFsyncDoesNotCountAsDurable(t *testing.T) {
	p, _ := newPartition(t, true)
	if err := p.BecomeLeaderOf(1, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(2), 0); err != nil {
		t.Fatal(err)
	}
	once := false
	testHookAfterFsync = func(q *Partition) {
		if q != p || once {
			return
		}
		once = true
		if err := p.BecomeFollower(2, 1); err != nil {
			t.Error(err)
		}
		if _, err := p.TruncateTo(2); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { testHookAfterFsync = nil })
	if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
		t.Fatal(err)
	}
	if !once {
		t.Fatal("the hook did not run")
	}
	p.mu.Lock()
	durable, leo := p.durableEnd, p.log.LogEndOffset()
	p.mu.Unlock()
	if leo != 2 || durable > leo {
		t.Fatalf("after the truncation: LEO %d, durable end %d (an fsync of truncated data counted)", leo, durable)
	}
}

// The outcome of an ISR addition decides when it stops holding the HW back. RF 2, ISR
// {0}; follower 1 catches up (pending ISR {0,1}) and then stops fetching; the leader
// appends more, so the HW waits at 3 for follower 1. Then (Kafka, KIP-841):
//   - not attempted (INELIGIBLE_REPLICA): the pending ISR is dropped at once, the HW
//     reaches the leader's LEO and waiters are woken;
//   - rejected (stale leader view): the HW stays held until newer metadata arrives;
//   - no answer: the controller may have applied it, so it is retried; the HW stays.
func TestISRAdditionOutcomes(t *testing.T) {
	setup := func(t *testing.T, answers chan error) *Partition {
		dir := t.TempDir()
		log, _, err := segment.Open(dir, segment.DefaultConfig(), segment.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := NewPartition("t", 0, log, 0, Options{BrokerID: 0, AlterISR: func(ISRChange) error { return <-answers }})
		t.Cleanup(func() { close(answers); p.Stop(false) })
		if err := p.BecomeLeaderOf(1, 0, []int32{0}, []int32{0, 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := followerRead(p, FollowerFetch{ReplicaID: 1, FetchOffset: 3, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if st := p.State(); st.MaximalISRSize != 2 {
			t.Fatalf("follower 1 caught up but no ISR addition is pending: %+v", st)
		}
		if _, err := p.AppendAsLeader(batch(2), 0); err != nil {
			t.Fatal(err)
		}
		if hw := p.State().HighWatermark; hw != 3 {
			t.Fatalf("HW %d, want 3 while the addition of 1 is pending", hw)
		}
		return p
	}
	waitWoken := func(t *testing.T, w *Waiter) {
		t.Helper()
		select {
		case <-w.C:
		case <-time.After(10 * time.Second):
			t.Fatal("no wake-up")
		}
	}

	t.Run("not attempted", func(t *testing.T) {
		answers := make(chan error)
		p := setup(t, answers)
		w := NewWaiter()
		p.Watch(w)
		defer p.Unwatch(w)
		answers <- fmt.Errorf("%w: INELIGIBLE_REPLICA", ErrISRChangeNotAttempted)
		waitWoken(t, w)
		if st := p.State(); st.HighWatermark != 5 || st.MaximalISRSize != 1 {
			t.Fatalf("after a change that was not attempted: %+v, want HW 5 and no pending ISR", st)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		answers := make(chan error)
		p := setup(t, answers)
		answers <- fmt.Errorf("%w: INVALID_UPDATE_VERSION", ErrISRChangeRejected)
		select { // a rejected change is not asked again
		case answers <- nil:
			t.Fatal("a rejected ISR change was sent again")
		case <-time.After(300 * time.Millisecond): // longer than the first retry backoff
		}
		if st := p.State(); st.HighWatermark != 3 || st.MaximalISRSize != 2 {
			t.Fatalf("after a rejected change: %+v, want HW 3 held by the pending ISR", st)
		}
		p.UpdateISROf(1, []int32{0}) // newer metadata without follower 1
		if st := p.State(); st.HighWatermark != 5 || st.MaximalISRSize != 1 {
			t.Fatalf("after newer metadata: %+v, want HW 5 and no pending ISR", st)
		}
	})
	t.Run("no answer", func(t *testing.T) {
		answers := make(chan error)
		p := setup(t, answers)
		answers <- errors.New("i/o timeout")
		answers <- errors.New("i/o timeout") // the retry asks again
		if st := p.State(); st.HighWatermark != 3 || st.MaximalISRSize != 2 {
			t.Fatalf("after unanswered requests: %+v, want HW 3 held by the pending ISR", st)
		}
		answers <- nil // applied; the metadata follows
		p.UpdateISROf(1, []int32{0, 1})
		if st := p.State(); st.HighWatermark != 3 || st.MaximalISRSize != 2 {
			t.Fatalf("after the ISR {0,1} committed: %+v, want HW 3 (follower 1 is at 3)", st)
		}
	})
}

// With fsync per append, the leader ships a batch to followers while its own fsync
// runs, but the high watermark never counts offsets the leader has not made durable:
// the leader's fsync is held (the hook blocks it), the follower reads the records and
// reports them in its next fetch, and still the HW stays at 0 and the append (an
// acks=all produce's first half) does not return until the fsync does.
func TestHighWatermarkWaitsForTheLeadersFsync(t *testing.T) {
	p, _ := newPartition(t, true)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	inFsync, release := make(chan struct{}), make(chan struct{})
	testHookAfterFsync = func(q *Partition) {
		if q == p {
			close(inFsync)
			<-release
		}
	}
	t.Cleanup(func() { testHookAfterFsync = nil })
	appended := make(chan error, 1)
	go func() {
		_, err := p.AppendAsLeader(batch(4), 2)
		appended <- err
	}()
	select {
	case <-inFsync:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader's fsync did not start")
	}
	follower := func(offset int64) FetchResult {
		t.Helper()
		res, _, err := followerRead(p, FollowerFetch{ReplicaID: 1, FetchOffset: offset, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := follower(0); len(res.Records) == 0 || res.LogEndOffset != 4 {
		t.Fatalf("the follower did not get the records during the leader's fsync: %d bytes, LEO %d", len(res.Records), res.LogEndOffset)
	}
	if res := follower(4); res.HighWatermark != 0 {
		t.Fatalf("HW %d before the leader's fsync returned", res.HighWatermark)
	}
	if hw := p.LeaderHighWatermark(); hw != 0 {
		t.Fatalf("published HW %d before the leader's fsync returned", hw)
	}
	select {
	case err := <-appended:
		t.Fatalf("the append returned (%v) before its fsync", err)
	default:
	}
	close(release)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if hw := p.State().HighWatermark; hw != 4 {
		t.Fatalf("HW %d after the fsync", hw)
	}
}

// The leader names, for each member an ISR change adds, the broker epoch of that
// member's latest fetch (KIP-903), and -1 for itself (the broker adds its own), for a
// member whose fetches named none (below Fetch v15) and for the members already in the
// committed ISR, whatever their fetches named: those of a new leadership's ISR too.
func TestISRChangeNamesTheFetchersBrokerEpochs(t *testing.T) {
	log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan ISRChange, 2)
	p := NewPartition("t", 0, log, 0, Options{BrokerID: 0, AlterISR: func(ch ISRChange) error { asked <- ch; return nil }})
	t.Cleanup(func() { p.Stop(false) })
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 3}, []int32{0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
		t.Fatal(err)
	}
	read := func(id int32, brokerEpoch int64) {
		t.Helper()
		if _, _, err := followerRead(p, FollowerFetch{ReplicaID: id, FetchOffset: 3, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1,
			MaxBytes: 1 << 20, LogStartOffset: 0, BrokerEpoch: brokerEpoch}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(isr []int32, epochs []int64) {
		t.Helper()
		select {
		case ch := <-asked:
			if !slices.Equal(ch.ISR, isr) || !slices.Equal(ch.BrokerEpochs, epochs) {
				t.Fatalf("asked for ISR %v with broker epochs %v, want %v and %v", ch.ISR, ch.BrokerEpochs, isr, epochs)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no ISR change %v asked for", isr)
		}
	}
	read(2, -1) // below v15: no epoch; member 3 has not fetched from this leader
	expect([]int32{0, 3, 2}, []int64{-1, -1, -1})
	// The first change is settled by metadata (UpdateISROf); until then no other goes.
	p.UpdateISROf(1, []int32{0, 3, 2})
	read(3, 9) // a member already in: not named
	read(1, 7)
	expect([]int32{0, 3, 2, 1}, []int64{-1, -1, -1, 7})
}

// The leader asks for no ISR change adding a follower Options.ReplicaEligible refuses
// (Kafka's isReplicaIsrEligible: fenced, or registered at another broker epoch than its
// fetch named), and RecheckISR asks for it once it is eligible, from its latest fetch,
// without another read. The leader decides as it reads: an ISR change asked for is
// pending (the maximal ISR counts it) before the read returns.
func TestLeaderAddsOnlyEligibleFollowersAndRechecks(t *testing.T) {
	log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan ISRChange, 2)
	var eligible atomic.Bool
	type check struct {
		replica int32
		epoch   int64
	}
	var checks []check // under p's lock
	p := NewPartition("t", 0, log, 0, Options{BrokerID: 0,
		AlterISR: func(ch ISRChange) error { asked <- ch; return nil },
		ReplicaEligible: func(replica int32, brokerEpoch int64) bool {
			checks = append(checks, check{replica, brokerEpoch})
			return eligible.Load()
		}})
	t.Cleanup(func() { p.Stop(false) })
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := followerRead(p, FollowerFetch{ReplicaID: 2, FetchOffset: 3, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1,
		MaxBytes: 1 << 20, LogStartOffset: 0, BrokerEpoch: 12}, time.Now()); err != nil {
		t.Fatal(err)
	}
	pending := func() int { return p.State().MaximalISRSize - 2 }
	if n := pending(); n != 0 {
		t.Fatalf("an ISR addition is pending after a read by an ineligible follower (maximal ISR +%d)", n)
	}
	p.RecheckISR() // still ineligible
	if n := pending(); n != 0 {
		t.Fatalf("an ISR addition is pending after RecheckISR of an ineligible follower (maximal ISR +%d)", n)
	}
	p.mu.Lock()
	got := slices.Clone(checks)
	p.mu.Unlock()
	if want := []check{{2, 12}, {2, 12}}; !slices.Equal(got, want) {
		t.Fatalf("eligibility asked for %+v, want %+v", got, want)
	}
	eligible.Store(true)
	p.RecheckISR()
	if n := pending(); n != 1 {
		t.Fatalf("RecheckISR of an eligible follower left %d additions pending, want 1", n)
	}
	select {
	case ch := <-asked:
		if !slices.Equal(ch.ISR, []int32{0, 1, 2}) || !slices.Equal(ch.BrokerEpochs, []int64{-1, -1, 12}) {
			t.Fatalf("asked for ISR %v with broker epochs %v, want [0 1 2] and [-1 -1 12]", ch.ISR, ch.BrokerEpochs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RecheckISR asked for no ISR change once the follower was eligible")
	}
}
