package broker

// Continuous replica verification (docs/verify.md): every
// petrel.replica.verification.interval.ms a follower walks the partitions it follows,
// each from its log start offset to its own high watermark (at most the leader's), asks
// the leader for the digests of a range (ReplicaDigests, 10001_replica_digests.go),
// digests its own copy of the same range and compares them
// (replication.CompareDigests). The reads of both sides are paced to
// petrel.replica.verification.bytes.per.second. A leader change while a range is
// compared discards the comparison (the range is compared again next pass); compacted
// logs, and logs ever cleaned, are skipped (each replica's cleaner rewrites its own
// log). A differing chunk is narrowed to its first differing batch and reported only
// when that per-batch comparison confirms it; a committed batch that cannot be read
// (here, or on the leader: CORRUPT_MESSAGE) is reported too. A report is counted
// (petrel_replica_divergence_total), logged once at ERROR and listed by /readyz while
// it lasts, which stays 200: a divergent replica still serves, and /readyz is what load
// balancers route by.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
)

// verifyRequestBytes is the most one verification request asks the leader to read.
const verifyRequestBytes = 4 << 20

// verifyRequestTimeout bounds one verification request.
const verifyRequestTimeout = 30 * time.Second

// divergence is a partition found divergent, as /readyz lists it.
type divergence struct {
	from, to         int64
	leader, follower int32
	cause            string // why, when not a digest mismatch (a batch that cannot be read)
}

// replicaVerifier is the follower side of replica verification.
type replicaVerifier struct {
	b        *Broker
	interval time.Duration
	rate     int64 // bytes a second
	mu       sync.Mutex
	// divergent are the partitions whose last comparison diverged; guarded by mu.
	divergent map[segment.TopicPartition]divergence
	// verified is where each partition's comparisons ended, and caughtUp when the last
	// catchUp began (the pass's goroutine only).
	verified map[segment.TopicPartition]verifiedEnd
	caughtUp time.Time
}

func newReplicaVerifier(b *Broker) *replicaVerifier {
	v := &replicaVerifier{b: b, interval: b.cfg.durationMs("petrel.replica.verification.interval.ms"),
		rate: b.cfg.int64Value("petrel.replica.verification.bytes.per.second"), divergent: map[segment.TopicPartition]divergence{},
		verified: map[segment.TopicPartition]verifiedEnd{}}
	b.metrics.SetReadyDetails(v.readyDetails)
	return v
}

// run is the verification loop: a pass, then the interval, until the broker stops.
func (v *replicaVerifier) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-v.b.stop
		cancel()
	}()
	t := time.NewTimer(v.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v.pass(ctx)
		t.Reset(v.interval)
	}
}

// pass compares, one leader at a time, first what each followed partition committed
// since the last pass (from where that pass's comparisons ended, in the same leader
// epoch), so that new data is compared within about one interval, then every followed
// partition from its log start to its high watermark again, which catches a batch
// damaged after it was compared. A rescan longer than the interval stops every
// interval to compare the new data again (catchUp).
func (v *replicaVerifier) pass(ctx context.Context) {
	byLeader := map[int32][]*localPartition{}
	followed := map[segment.TopicPartition]bool{}
	for _, lp := range v.b.partitions.allSorted() {
		if pos, ok := lp.FollowerPosition(); ok {
			byLeader[pos.Leader] = append(byLeader[pos.Leader], lp)
			followed[segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}] = true
		}
	}
	v.forgetUnfollowed(followed)
	maps.DeleteFunc(v.verified, func(tp segment.TopicPartition, _ verifiedEnd) bool { return !followed[tp] })
	if !v.catchUp(ctx, byLeader) {
		return
	}
	for _, leader := range slices.Sorted(maps.Keys(byLeader)) {
		if !v.walk(ctx, byLeader, leader, true) {
			return
		}
	}
}

// catchUp compares what every partition of byLeader committed since its comparisons
// last ended; it reports false once ctx ends.
func (v *replicaVerifier) catchUp(ctx context.Context, byLeader map[int32][]*localPartition) bool {
	v.caughtUp = time.Now()
	for _, leader := range slices.Sorted(maps.Keys(byLeader)) {
		if !v.walk(ctx, byLeader, leader, false) {
			return false
		}
	}
	return true
}

// walk compares the partitions of byLeader led by leader up to their high watermarks
// now: from their log starts when full, else from where the last comparisons ended (a
// partition with none in its current leader epoch waits for the full walk). A full
// walk stops every interval for a catchUp of all of byLeader. It reports false once
// ctx ends.
func (v *replicaVerifier) walk(ctx context.Context, byLeader map[int32][]*localPartition, leader int32, full bool) bool {
	parts := byLeader[leader]
	ps := make([]verifyProgress, len(parts))
	for i, lp := range parts {
		st := lp.State()
		ps[i].end, ps[i].full = st.HighWatermark, full // this walk ends where the HW is now
		if !full {
			e, ok := v.verified[segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}]
			ps[i].start, ps[i].done = e.offset, !ok || e.epoch != st.LeaderEpoch
		}
	}
	for {
		more := false
		for i := 0; i < len(parts); i += replicaDigestsMaxPartitions {
			j := min(i+replicaDigestsMaxPartitions, len(parts))
			if v.round(ctx, leader, parts[i:j], ps[i:j]) {
				more = true
			}
			if ctx.Err() != nil {
				return false
			}
			if full && time.Since(v.caughtUp) >= v.interval && !v.catchUp(ctx, byLeader) {
				return false
			}
		}
		if !more {
			return true
		}
	}
}

// verifiedEnd is where a partition's comparisons last ended, in a leader epoch.
type verifiedEnd struct {
	epoch  int32
	offset int64
}

// noteVerified records that tp's comparisons in epoch reached offset.
func (v *replicaVerifier) noteVerified(tp segment.TopicPartition, epoch int32, offset int64) {
	if e, ok := v.verified[tp]; !ok || e.epoch != epoch || e.offset < offset {
		v.verified[tp] = verifiedEnd{epoch: epoch, offset: offset}
	}
}

// verifyProgress is a partition's place in a walk.
type verifyProgress struct {
	start, end int64
	done       bool
	full       bool // a walk from the log start: agreeing to its end clears a divergence
}

// round sends leader one request for the partitions not done, compares the answers
// with this replica's digests and moves each partition's start; it reports whether any
// partition has more to compare.
func (v *replicaVerifier) round(ctx context.Context, leader int32, parts []*localPartition, ps []verifyProgress) bool {
	req := &ReplicaDigestsRequest{ChunkBytes: ReplicaDigestsChunkBytes, MaxBytes: verifyRequestBytes}
	type asked struct {
		i     int
		epoch int32
		end   int64
	}
	var order []asked
	for i, lp := range parts {
		if ps[i].done {
			continue
		}
		st := lp.State()
		end := min(ps[i].end, st.HighWatermark)
		if st.Role != replication.Follower || ps[i].start >= end {
			ps[i].done = true
			continue
		}
		order = append(order, asked{i, st.LeaderEpoch, end})
		req.Topics = append(req.Topics, ReplicaDigestsRequestTopic{Topic: lp.Topic,
			Partitions: []ReplicaDigestsRequestPartition{{Partition: lp.ID, Start: ps[i].start, End: end}}})
	}
	if len(order) == 0 {
		return false
	}
	resp, err := v.ask(ctx, leader, req)
	if err != nil || len(resp.Topics) != len(order) {
		v.b.logger.Debug("replica verification request failed; next pass", "leader", leader, "error", err)
		for _, a := range order {
			ps[a.i].done = true
		}
		return false
	}
	var scanned int64
	more, retry := false, false
	for k, a := range order {
		lp := parts[a.i]
		t := resp.Topics[k]
		if len(t.Partitions) == 1 && t.Partitions[0].ErrorCode == kerr.CorruptMessage.Code {
			// The leader's own committed batches cannot be read (it logged which).
			v.diverged(segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}, divergence{from: ps[a.i].start,
				to: a.end - 1, leader: leader, follower: v.b.cfg.NodeID, cause: fmt.Sprintf("unreadable on broker %d", leader)})
			ps[a.i].done = true
			continue
		}
		if len(t.Partitions) != 1 || t.Partitions[0].ErrorCode != 0 {
			ps[a.i].done = true // not the leader any more, or unknown: next pass
			continue
		}
		ans := t.Partitions[0]
		if len(ans.Chunks) == 0 && ans.NextOffset == ps[a.i].start && ans.LogStartOffset <= ps[a.i].start &&
			ans.HighWatermark > ps[a.i].start && !ans.Compacted {
			retry = true // the request's byte budget ran out before this partition: again
			continue
		}
		n, progressed := v.compare(ctx, leader, lp, ps[a.i].start, a.end, a.epoch, ans, ps[a.i].full)
		scanned += n
		if progressed > ps[a.i].start {
			v.noteVerified(segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}, a.epoch, progressed)
			ps[a.i].start = progressed
			more = true
		} else {
			ps[a.i].done = true
		}
	}
	v.b.metrics.ReplicaVerified(scanned)
	v.pace(ctx, scanned)
	return more || (retry && scanned > 0)
}

// ask sends leader req on verification's own connections, bounded by
// verifyRequestTimeout, with no lock held.
func (v *replicaVerifier) ask(ctx context.Context, leader int32, req *ReplicaDigestsRequest) (*ReplicaDigestsResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, verifyRequestTimeout)
	defer cancel()
	kresp, err := v.b.verifyPeers.do(ctx, leader, req)
	if err != nil {
		return nil, err
	}
	resp, ok := kresp.(*ReplicaDigestsResponse)
	if !ok {
		return nil, fmt.Errorf("ReplicaDigests answered with %T", kresp)
	}
	return resp, nil
}

// compare compares one partition's answer with this replica's digests of the same
// range; it returns the bytes read and where the partition's next range starts.
func (v *replicaVerifier) compare(ctx context.Context, leader int32, lp *localPartition, start, end int64, epoch int32, ans ReplicaDigestsResponsePartition, full bool) (int64, int64) {
	theirs := ans.Digests()
	if !theirs.IsLeader || theirs.LeaderEpoch != epoch {
		return 0, start // a leader change meanwhile: compared again next pass
	}
	tp := segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}
	chunk, budget := replicaDigestLimits(ReplicaDigestsChunkBytes, replicaDigestsMaxBytes)
	ours, err := lp.Digests(start, min(end, theirs.Next), chunk, budget, replicaDigestsMaxChunks)
	if errors.Is(err, replication.ErrDigestCorrupt) {
		// This replica's committed batches cannot be read: it cannot hold the leader's.
		v.diverged(tp, divergence{from: start, to: max(theirs.Next-1, start), leader: leader, follower: v.b.cfg.NodeID,
			cause: fmt.Sprintf("unreadable on broker %d: %v", v.b.cfg.NodeID, err)})
		return theirs.Scanned, start
	}
	if err != nil || ours.LeaderEpoch != epoch {
		return 0, start
	}
	scanned := ours.Scanned + theirs.Scanned
	c := replication.CompareDigests(start, theirs, ours)
	switch {
	case c.Skipped != "":
		return scanned, c.Resume
	case c.Diverged:
		d, n, confirmed := v.narrow(ctx, leader, lp, c.From, c.To, epoch)
		scanned += n
		if confirmed {
			v.diverged(tp, d)
		} else {
			// The per-batch comparison found the replicas alike (a leader change, a
			// retention meanwhile, a failed request): transient, looked at next pass.
			v.b.logger.Debug("replica digests differed but not batch by batch; next pass", "topic", tp.Topic,
				"partition", tp.Partition, "from_offset", c.From, "to_offset", c.To, "leader", leader)
		}
		return scanned, start // the next pass looks again from the same start
	}
	if full && c.Resume >= end {
		v.agreed(tp) // the whole log agreed: a divergence found before is gone
	}
	return scanned, c.Resume
}

// narrow asks the digest of every batch of [from, to] on both replicas, in as many
// requests as the leader's limits need, and returns the divergence at the first
// differing batch, the bytes read and whether the per-batch comparison confirmed it.
func (v *replicaVerifier) narrow(ctx context.Context, leader int32, lp *localPartition, from, to int64, epoch int32) (divergence, int64, bool) {
	d := divergence{from: from, to: to, leader: leader, follower: v.b.cfg.NodeID}
	var scanned int64
	for start := from; start <= to && ctx.Err() == nil; {
		req := &ReplicaDigestsRequest{ChunkBytes: 1, MaxBytes: verifyRequestBytes, Topics: []ReplicaDigestsRequestTopic{{Topic: lp.Topic,
			Partitions: []ReplicaDigestsRequestPartition{{Partition: lp.ID, Start: start, End: to + 1}}}}}
		resp, err := v.ask(ctx, leader, req)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return d, scanned, false
		}
		theirs := resp.Topics[0].Partitions[0].Digests()
		ours, err := lp.Digests(start, min(to+1, theirs.Next), 1, verifyRequestBytes, replicaDigestsMaxChunks)
		n := theirs.Scanned + ours.Scanned
		scanned += n // paced by the round with the rest
		if errors.Is(err, replication.ErrDigestCorrupt) {
			d.cause = fmt.Sprintf("unreadable on broker %d: %v", v.b.cfg.NodeID, err)
			return d, scanned, true
		}
		if err != nil || !theirs.IsLeader || theirs.LeaderEpoch != epoch || ours.LeaderEpoch != epoch {
			return d, scanned, false
		}
		c := replication.CompareDigests(start, theirs, ours)
		if c.Diverged {
			d.from, d.to = c.From, c.To
			return d, scanned, true
		}
		if c.Skipped != "" || c.Resume <= start {
			return d, scanned, false
		}
		start = c.Resume
	}
	return d, scanned, false
}

// diverged records a divergence: counted and logged when the partition was not
// divergent already.
func (v *replicaVerifier) diverged(tp segment.TopicPartition, d divergence) {
	v.mu.Lock()
	_, known := v.divergent[tp]
	v.divergent[tp] = d
	n := len(v.divergent)
	v.mu.Unlock()
	v.b.metrics.SetDivergentPartitions(n)
	if known {
		return
	}
	v.b.metrics.ReplicaDivergence(tp.Topic)
	args := []any{"topic", tp.Topic, "partition", tp.Partition,
		"from_offset", d.from, "to_offset", d.to, "leader", d.leader, "follower", d.follower}
	if d.cause != "" {
		args = append(args, "cause", d.cause)
	}
	v.b.logger.Error("replica diverges from its leader", args...)
}

// agreed clears a partition's divergence once a pass compared it to its end without
// finding one (a divergence stops a partition's pass where it is).
func (v *replicaVerifier) agreed(tp segment.TopicPartition) {
	v.mu.Lock()
	_, known := v.divergent[tp]
	delete(v.divergent, tp)
	n := len(v.divergent)
	v.mu.Unlock()
	if known {
		v.b.metrics.SetDivergentPartitions(n)
		v.b.logger.Info("replica agrees with its leader again", "topic", tp.Topic, "partition", tp.Partition)
	}
}

// forgetUnfollowed drops the divergences of partitions this broker no longer follows
// (reassigned, deleted, or led here now): nothing compares them any more.
func (v *replicaVerifier) forgetUnfollowed(followed map[segment.TopicPartition]bool) {
	v.mu.Lock()
	n := len(v.divergent)
	maps.DeleteFunc(v.divergent, func(tp segment.TopicPartition, _ divergence) bool { return !followed[tp] })
	changed, left := n != len(v.divergent), len(v.divergent)
	v.mu.Unlock()
	if changed {
		v.b.metrics.SetDivergentPartitions(left)
	}
}

// readyDetails are /readyz's lines for the divergent partitions.
func (v *replicaVerifier) readyDetails() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for tp, d := range v.divergent {
		line := fmt.Sprintf("replica divergence: topic %s partition %d offsets %d-%d leader %d follower %d",
			tp.Topic, tp.Partition, d.from, d.to, d.leader, d.follower)
		if d.cause != "" {
			line += " (" + d.cause + ")"
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// pace waits as long as reading n bytes takes at the configured rate.
func (v *replicaVerifier) pace(ctx context.Context, n int64) {
	if n <= 0 {
		return
	}
	t := time.NewTimer(time.Duration(float64(n) / float64(v.rate) * float64(time.Second)))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
