package replication

// Comparison is the outcome of comparing two replicas' digests of the same range.
type Comparison struct {
	// Agreed is the offset below which both replicas were found to hold the same
	// batches in this comparison (from its start); the next comparison starts at Resume.
	Agreed int64
	Resume int64
	// Diverged is set when the replicas hold different batches in [From, To].
	Diverged bool
	From, To int64
	// Skipped names why nothing was compared ("" when something was).
	Skipped string
}

// CoversLeader reports whether follower's digest holds every batch below leader.Next:
// the follower's high watermark is at or above it (it was asked no further) and its
// digest did not stop short for retention or a stop (Short, never on the wire). Two
// agreeing replicas then cut the same chunks to the same end.
func CoversLeader(leader, follower ReplicaDigests) bool {
	return !follower.Short && follower.HighWatermark >= leader.Next
}

// CompareDigests compares leader's and follower's digests of the range that starts at
// start. Chunks are compared in order while both replicas cut them alike; the first
// chunk that differs is a divergence. A range either replica no longer holds (below
// its log start offset) or has cut short (its end or byte budget) is resumed, not
// judged, unless the follower's digest is whole (CoversLeader): then any difference in
// chunks, their cuts or Next is a divergence (a batch split or merged at a chunk's end
// would otherwise be resumed from forever).
func CompareDigests(start int64, leader, follower ReplicaDigests) Comparison {
	whole := CoversLeader(leader, follower)
	c := Comparison{Agreed: start, Resume: start}
	if leader.Compacted || follower.Compacted {
		c.Skipped = "compacted"
		return c
	}
	logStart := max(leader.LogStartOffset, follower.LogStartOffset)
	if logStart > start {
		// One replica's log starts later (retention, DeleteRecords, tiered storage):
		// the range below it cannot be compared; start again from it.
		c.Agreed, c.Resume = logStart, logStart
		if len(leader.Chunks) == 0 || len(follower.Chunks) == 0 ||
			leader.Chunks[0].BaseOffset != follower.Chunks[0].BaseOffset {
			c.Skipped = "below the log start offset"
			return c
		}
	}
	n := min(len(leader.Chunks), len(follower.Chunks))
	for i := range n {
		l, f := leader.Chunks[i], follower.Chunks[i]
		switch {
		case l.BaseOffset != f.BaseOffset:
			return diverged(c, min(l.BaseOffset, f.BaseOffset), max(l.LastOffset, f.LastOffset))
		case l.LastOffset == f.LastOffset && l.Batches == f.Batches:
			if l.Hash != f.Hash {
				return diverged(c, l.BaseOffset, l.LastOffset)
			}
			c.Agreed, c.Resume = l.LastOffset+1, l.LastOffset+1
		case (l.Cut || f.Cut) && !whole:
			return c // one cut the chunk short: the next comparison starts at it
		default:
			return diverged(c, l.BaseOffset, max(l.LastOffset, f.LastOffset))
		}
	}
	if whole && (len(leader.Chunks) != len(follower.Chunks) || leader.Next != follower.Next) {
		// One replica holds batches the other does not have, or ends them elsewhere.
		return diverged(c, c.Agreed, max(leader.Next, follower.Next, c.Agreed+1)-1)
	}
	return c
}

func diverged(c Comparison, from, to int64) Comparison {
	c.Diverged, c.From, c.To = true, from, to
	return c
}
