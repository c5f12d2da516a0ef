package replication

import (
	"strings"
	"testing"
)

func TestCompareDigests(t *testing.T) {
	c := func(base, last int64, hash uint64, cut bool) ChunkDigest {
		return ChunkDigest{BaseOffset: base, LastOffset: last, Batches: int32(last - base + 1), Hash: hash, Cut: cut}
	}
	// d: a digest whose high watermark is below any leader's Next (not whole).
	d := func(logStart int64, chunks ...ChunkDigest) ReplicaDigests {
		return ReplicaDigests{HighWatermark: -1, LogStartOffset: logStart, Chunks: chunks}
	}
	// dn: a digest ending at next, whose high watermark is above it: as a follower's,
	// it covers every leader's range here (CoversLeader), so the comparison is whole.
	dn := func(next, logStart int64, chunks ...ChunkDigest) ReplicaDigests {
		r := d(logStart, chunks...)
		r.Next, r.HighWatermark = next, 1<<40
		return r
	}
	for _, tc := range []struct {
		name             string
		start            int64
		leader, follower ReplicaDigests
		want             Comparison
	}{
		{"equal", 0, d(0, c(0, 9, 1, false), c(10, 12, 2, true)), d(0, c(0, 9, 1, false), c(10, 12, 2, true)),
			Comparison{Agreed: 13, Resume: 13}},
		{"a chunk differs", 0, d(0, c(0, 9, 1, false), c(10, 19, 2, false)), d(0, c(0, 9, 1, false), c(10, 19, 3, false)),
			Comparison{Agreed: 10, Resume: 10, Diverged: true, From: 10, To: 19}},
		{"cut at different ends", 0, d(0, c(0, 9, 1, false), c(10, 12, 2, true)), d(0, c(0, 9, 1, false), c(10, 15, 2, true)),
			Comparison{Agreed: 10, Resume: 10}},
		// The follower holds every batch below the leader's Next: its chunk cut before
		// the leader's end is a batch split or merged there, not a range to resume.
		{"whole: a batch merged at a chunk's end", 0, dn(500, 0, c(0, 499, 1, false)), dn(490, 0, c(0, 489, 2, true)),
			Comparison{Agreed: 0, Resume: 0, Diverged: true, From: 0, To: 499}},
		{"whole: idle, last chunks cut alike but differ", 0, dn(13, 0, c(0, 9, 1, false), c(10, 12, 2, true)),
			dn(13, 0, c(0, 9, 1, false), c(10, 12, 3, true)), Comparison{Agreed: 10, Resume: 10, Diverged: true, From: 10, To: 12}},
		{"whole: different batch counts, both cut", 0, dn(13, 0, c(0, 12, 1, true)),
			dn(13, 0, ChunkDigest{BaseOffset: 0, LastOffset: 12, Batches: 2, Hash: 1, Cut: true}), Comparison{Diverged: true, From: 0, To: 12}},
		{"whole: the follower lacks a chunk", 0, dn(20, 0, c(0, 9, 1, false), c(10, 19, 2, true)), dn(10, 0, c(0, 9, 1, false)),
			Comparison{Agreed: 10, Resume: 10, Diverged: true, From: 10, To: 19}},
		{"whole: equal", 0, dn(13, 0, c(0, 9, 1, false), c(10, 12, 2, true)), dn(13, 0, c(0, 9, 1, false), c(10, 12, 2, true)),
			Comparison{Agreed: 13, Resume: 13}},
		{"different batches, both whole", 0, d(0, c(0, 9, 1, false)), d(0, c(0, 11, 1, false)),
			Comparison{Diverged: true, From: 0, To: 11}},
		{"a log start above the range", 0, d(20, c(20, 29, 1, false)), d(0, c(0, 9, 1, false)),
			Comparison{Agreed: 20, Resume: 20, Skipped: "below the log start offset"}},
		{"both from the later log start", 0, d(20, c(20, 29, 1, false)), d(0, c(20, 29, 1, false)),
			Comparison{Agreed: 30, Resume: 30}},
		{"compacted", 0, ReplicaDigests{Compacted: true}, d(0, c(0, 9, 1, false)),
			Comparison{Skipped: "compacted"}},
		{"nothing on one side", 5, d(0), d(0, c(5, 9, 1, false)), Comparison{Agreed: 5, Resume: 5}},
	} {
		if whole := CoversLeader(tc.leader, tc.follower); whole != strings.HasPrefix(tc.name, "whole") {
			t.Errorf("%s: CoversLeader %v", tc.name, whole)
		}
		if got := CompareDigests(tc.start, tc.leader, tc.follower); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
