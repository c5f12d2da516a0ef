package replication

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// ISRChange asks the controller to set a partition's ISR (AlterPartition). It carries the
// leader epoch and partition epoch the leader acted on; the controller refuses stale
// ones. Called without any partition lock held; it may block.
type ISRChange struct {
	Topic string
	// TopicID is the replica's topic id (Options.TopicID; zero when unknown): the change
	// is of that topic, not of another one re-created under its name since.
	TopicID        [16]byte
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	// BrokerEpochs holds, in ISR's order, the broker epoch of the latest fetch of each
	// member the change adds (KIP-903: the controller refuses one registered at another
	// epoch), -1 where unknown, for the members already in the committed ISR and for
	// the leader itself (the sender names its own). A member already in is not named:
	// a broker resumed after a clean stop keeps its ISRs under a new broker epoch, which
	// a leader that stayed up learns only from its next fetch.
	BrokerEpochs []int64
}

// followerState is what the leader knows of one follower, from its fetches.
type followerState struct {
	logEndOffset       int64     // the follower's fetch offset
	lastFetchTime      time.Time //
	lastFetchLeaderLEO int64     // the leader's LEO at that fetch
	lastCaughtUpTime   time.Time // last time the follower had everything the leader had
	logStartOffset     int64     // the follower's log start offset from its fetches; -1 unknown
	brokerEpoch        int64     // the broker epoch of its latest read (KIP-903); -1 unknown
	// clock, when set, is the follower's fetch session's clock (the time of its latest
	// fetch, Unix nanoseconds; fetch_session_watch.go): the follower's last read found
	// it at the log end, and the session reads the partition again only once it
	// changes, so every later fetch of the session is a fetch at the log end too (as
	// in Kafka, where a fetch marks the follower caught up for every partition of its
	// session). Settled into lastFetchTime and lastCaughtUpTime at the next change of
	// the partition (settleIdleFollowersLocked) or read of the follower.
	clock *atomic.Int64
}

// settleIdleLocked turns the session fetches st's clock stands for into the last of
// them: a fetch at the log end, at the leader log end offset of st's last read.
func (st *followerState) settleIdleLocked() {
	if st.clock == nil {
		return
	}
	if t := time.Unix(0, st.clock.Load()); t.After(st.lastFetchTime) {
		st.lastFetchTime, st.lastCaughtUpTime = t, t
	}
	st.clock = nil
}

// caughtUpAt is the last time the follower had everything the leader had, its
// session's idle fetches counted.
func (st *followerState) caughtUpAt() time.Time {
	if st.clock != nil {
		if t := time.Unix(0, st.clock.Load()); t.After(st.lastCaughtUpTime) {
			return t
		}
	}
	return st.lastCaughtUpTime
}

// settleIdleFollower settles follower replica's idle clock when it is clock: the
// partition left that session, whose later fetches do not count for it.
func (p *Partition) settleIdleFollower(replica int32, clock *atomic.Int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.followers[replica]; st != nil && st.clock == clock {
		st.settleIdleLocked()
	}
}

// settleIdleFollowersLocked settles every follower's idle clock: the partition changed
// (its log end may have moved), so the follower must fetch again to count as caught up.
func (p *Partition) settleIdleFollowersLocked() {
	for _, st := range p.followers {
		st.settleIdleLocked()
	}
}

// DivergingEpoch tells a follower where its log diverges from the leader's (KIP-320 /
// fetch-based truncation): truncate to EndOffset, which ends Epoch on the leader.
type DivergingEpoch struct {
	Epoch     int32
	EndOffset int64
}

// FollowerFetch is a follower's fetch as the leader sees it.
type FollowerFetch struct {
	ReplicaID          int32
	FetchOffset        int64
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32 // -1 skips the divergence check
	MaxBytes           int
	// LogStartOffset is the follower's own log start offset (the Fetch request's
	// log_start_offset; -1 when the follower does not say), which the low watermark of
	// DeleteRecords counts.
	LogStartOffset int64
	// BrokerEpoch is the fetching incarnation's broker epoch (Fetch v15+'s
	// ReplicaState, KIP-903; -1 when the follower does not say), which the leader names
	// for the follower in the ISR changes it asks for.
	BrokerEpoch int64
	// Clock, when set, is the follower's fetch session's clock: a read that finds the
	// follower at the log end leaves it counted caught up at every later fetch of the
	// session until the partition changes (followerState.clock).
	Clock *atomic.Int64
}

// ReadForFollowerHeld serves a follower fetch: it checks the epochs, detects a
// diverging log (the answer then carries no records), reads up to the log end offset,
// returning the range in Held, uncopied (the caller must Release it), and records the
// follower's progress, which may advance the high watermark and ask for the follower
// to join the ISR.
func (p *Partition) ReadForFollowerHeld(f FollowerFetch, now time.Time) (FetchResult, *DivergingEpoch, error) {
	p.mu.Lock()
	// The acks=all produce requests this fetch completes (its offset advances the high
	// watermark) are answered on this goroutine once the lock is released, as Kafka's
	// purgatory completes a delayed produce on the thread that handled the fetch.
	p.collecting = true
	defer func() {
		after := p.takeCollectedLocked()
		p.mu.Unlock()
		runAfterUnlock(after)
	}()
	res := FetchResult{Records: []byte{}, HighWatermark: p.highWatermark, LogStartOffset: p.log.LogStartOffset(), LogEndOffset: p.log.LogEndOffset()}
	if err := p.checkLeaderLocked(f.CurrentLeaderEpoch); err != nil {
		return res, nil, err
	}
	if !slices.Contains(p.replicas, f.ReplicaID) {
		return res, nil, fmt.Errorf("%w: broker %d is not a replica", ErrUnknownLeaderEpoch, f.ReplicaID)
	}
	if f.LastFetchedEpoch >= 0 {
		epoch, end := p.log.LeaderEpochs().EndOffsetFor(f.LastFetchedEpoch, p.log.LogEndOffset())
		if epoch < f.LastFetchedEpoch || end < f.FetchOffset {
			if epoch < 0 {
				return res, nil, fmt.Errorf("%w: leader has no epoch at or below %d", ErrOffsetOutOfRange, f.LastFetchedEpoch)
			}
			return res, &DivergingEpoch{Epoch: epoch, EndOffset: end}, nil
		}
	}
	if err := p.checkRemoteTierLocked(f.FetchOffset); err != nil {
		// Kafka's follower path: the follower builds its state from remote storage
		// and fetches from the local log start (fetcher.buildFromRemote).
		return res, nil, err
	}
	r, err := p.log.Read(f.FetchOffset, f.MaxBytes, p.log.LogEndOffset())
	if err != nil {
		return res, nil, err
	}
	res.FallingBehind = r.FallingBehind
	if err := res.holdOrCopy(r); err != nil { // takes over the range's cache pin
		return res, nil, err
	}
	p.updateFollowerLocked(f.ReplicaID, f.FetchOffset, f.LogStartOffset, f.BrokerEpoch, now, f.Clock)
	res.HighWatermark = p.highWatermark
	res.Changes = p.changes.Load()
	return res, nil, nil
}

// updateFollowerLocked records a follower's fetch offset (its log end offset), log
// start offset and broker epoch, keeps its caught-up time by Kafka's rule, advances the
// high watermark and asks for the follower to join the ISR when it qualifies.
func (p *Partition) updateFollowerLocked(id int32, leo, logStart, brokerEpoch int64, now time.Time, clock *atomic.Int64) {
	leaderLEO := p.log.LogEndOffset()
	st := p.followers[id]
	if st == nil {
		st = &followerState{logStartOffset: -1, brokerEpoch: -1}
		if p.followers == nil {
			p.followers = map[int32]*followerState{}
		}
		p.followers[id] = st
	}
	logStartMoved := logStart != st.logStartOffset
	st.logStartOffset, st.brokerEpoch = logStart, brokerEpoch
	st.settleIdleLocked()
	switch {
	case leo >= leaderLEO:
		st.lastCaughtUpTime = now
	case leo >= st.lastFetchLeaderLEO && !st.lastFetchTime.IsZero():
		st.lastCaughtUpTime = st.lastFetchTime
	}
	st.logEndOffset, st.lastFetchTime, st.lastFetchLeaderLEO = leo, now, leaderLEO
	if clock != nil && leo >= leaderLEO {
		st.clock = clock
	}
	advanced := p.maybeAdvanceHighWatermarkLocked()
	p.maybeExpandISRLocked(id)
	if advanced || logStartMoved {
		// Only a HW or log start move wakes waiters (the latter for DeleteRecords' low
		// watermark): waking on every follower fetch would make two parked follower
		// fetches wake each other (each re-read records progress) and spin. Parked
		// follower fetches are not woken at all (NewAfterUnlockWaiter with followerFetch).
		p.notifyProgressLocked()
	}
}

// maybeExpandISRLocked asks for follower id to join the ISR once its log end offset has
// reached the high watermark and the start of the leader's current epoch, and the
// follower is eligible (Options.ReplicaEligible).
func (p *Partition) maybeExpandISRLocked(id int32) {
	if p.role != Leader || slices.Contains(p.isr, id) || p.pendingISR != nil {
		return
	}
	st := p.followers[id]
	epochStart := p.leaderEpochStartOffset
	if st == nil || st.logEndOffset < p.highWatermark || st.logEndOffset < epochStart {
		return
	}
	if p.opts.ReplicaEligible != nil && !p.opts.ReplicaEligible(id, st.brokerEpoch) {
		return
	}
	p.requestISRLocked(append(slices.Clone(p.isr), id))
}

// RecheckISR asks again for each follower out of the ISR that qualifies, from its latest
// fetch, as its next read would: the owner calls it when a follower
// Options.ReplicaEligible refused may have become eligible (unfenced). The broker epoch
// of that fetch is current: a follower session whose fetches name a new epoch reads
// every partition again (fetch_session_watch.go).
func (p *Partition) RecheckISR() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != Leader || len(p.isr) >= len(p.replicas) {
		return
	}
	for _, id := range p.replicas {
		p.maybeExpandISRLocked(id)
	}
}

// MaybeShrinkISR drops from the ISR every follower whose log end offset differs from the
// leader's and that has not caught up for lagMax (replica.lag.time.max.ms). The owner
// calls it every lagMax/2.
func (p *Partition) MaybeShrinkISR(now time.Time, lagMax time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != Leader || p.pendingISR != nil {
		return
	}
	leaderLEO := p.log.LogEndOffset()
	keep := []int32{}
	for _, r := range p.isr {
		st := p.followers[r]
		lagging := r != p.opts.BrokerID && (st == nil || st.logEndOffset != leaderLEO) &&
			(st == nil || now.Sub(st.caughtUpAt()) > lagMax)
		if !lagging {
			keep = append(keep, r)
		}
	}
	if len(keep) < len(p.isr) {
		p.opts.Logger.Info("shrinking the ISR", "isr", p.isr, "new_isr", keep, "leader_end_offset", leaderLEO)
		p.requestISRLocked(keep)
	}
}

// requestISRLocked sends one AlterPartition (at most one in flight). Until the
// controller answers and the metadata arrives, the high watermark counts the maximal
// ISR: the committed ISR plus pending additions. The outcome follows Kafka (KIP-841):
// a change the controller did not attempt is dropped at once, which may release the
// HW; a rejected one stays pending until newer metadata (UpdateISROf with a newer
// partition epoch) settles it; an unclear failure (no answer) is retried with backoff,
// since the controller may have applied it.
func (p *Partition) requestISRLocked(isr []int32) {
	if p.opts.AlterISR == nil {
		return
	}
	p.pendingISR, p.pendingISRBase = isr, p.partitionEpoch
	change := ISRChange{Topic: p.Topic, TopicID: p.opts.TopicID, Partition: p.ID, LeaderEpoch: p.leaderEpoch, PartitionEpoch: p.partitionEpoch, ISR: slices.Clone(isr)}
	change.BrokerEpochs = make([]int64, len(isr))
	for i, id := range isr {
		change.BrokerEpochs[i] = -1
		if st := p.followers[id]; st != nil && id != p.opts.BrokerID && !slices.Contains(p.isr, id) {
			change.BrokerEpochs[i] = st.brokerEpoch
		}
	}
	go p.settleISRChange(change)
}

// settleISRChange sends change until the controller answers and applies the outcome
// (see requestISRLocked). It gives up once the change is no longer this leader's
// pending one.
func (p *Partition) settleISRChange(change ISRChange) {
	pending := func() bool {
		return p.role == Leader && p.leaderEpoch == change.LeaderEpoch && slices.Equal(p.pendingISR, change.ISR)
	}
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		err := p.opts.AlterISR(change)
		p.mu.Lock()
		switch {
		case !pending() || err == nil:
			// Settled by metadata: UpdateISROf or a role change clears the pending ISR.
		case errors.Is(err, ErrISRChangeRejected):
			p.opts.Logger.Debug("ISR change rejected; waiting for newer metadata", "isr", change.ISR, "error", err)
		case errors.Is(err, ErrISRChangeNotAttempted):
			p.opts.Logger.Debug("ISR change not attempted", "isr", change.ISR, "error", err)
			p.pendingISR = nil
			// A dropped addition no longer holds the HW back (the maximal ISR shrank).
			if p.maybeAdvanceHighWatermarkLocked() {
				p.notifyLocked()
			} else {
				// The followers' sessions read the partition at their next fetch, which
				// asks again for a follower that qualifies (they skip unchanged
				// partitions: fetch_session_watch.go); no parked fetch wakes for it.
				p.notifyProgressLocked()
			}
		default: // no answer: the controller may have applied it; ask again
			p.mu.Unlock()
			p.opts.Logger.Debug("ISR change failed; retrying", "isr", change.ISR, "error", err, "backoff", backoff)
			<-time.After(backoff)
			p.mu.Lock()
			stillPending := pending()
			p.mu.Unlock()
			if !stillPending {
				return
			}
			continue
		}
		p.mu.Unlock()
		return
	}
}

// maximalISRLocked is the committed ISR plus any member a pending change adds. Without
// a pending change it is p.isr itself, not a copy (it runs at every high watermark
// advance): callers only read it, under mu.
func (p *Partition) maximalISRLocked() []int32 {
	if len(p.pendingISR) == 0 {
		return p.isr
	}
	out := slices.Clone(p.isr)
	for _, r := range p.pendingISR {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
