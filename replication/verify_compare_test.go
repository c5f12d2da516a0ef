package replication

import "testing"

func TestCompareDigests(t *testing.T) {
	c := func(base, last int64, hash uint64, cut bool) ChunkDigest {
		return ChunkDigest{BaseOffset: base, LastOffset: last, Batches: int32(last - base + 1), Hash: hash, Cut: cut}
	}
	d := func(logStart int64, chunks ...ChunkDigest) ReplicaDigests {
		return ReplicaDigests{LogStartOffset: logStart, Chunks: chunks}
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
		if got := CompareDigests(tc.start, tc.leader, tc.follower); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
