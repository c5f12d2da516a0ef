package tiered

import (
	"slices"
	"testing"
)

func expirySegment(start, end int64, state RemoteLogSegmentState, epochs ...EpochStart) *RemoteLogSegmentMetadata {
	return &RemoteLogSegmentMetadata{StartOffset: start, EndOffset: end, SegmentSizeInBytes: 100,
		MaxTimestampMs: end, State: state, SegmentLeaderEpochs: epochs}
}

// TestOnEpochLineage: a remote segment is on the leader's lineage when its epochs are
// the local cache's, within their local ranges; an epoch older than the cache counts as
// on it; a segment past the log end or with an epoch the cache ends earlier is not.
func TestOnEpochLineage(t *testing.T) {
	local := []EpochStart{{Epoch: 2, StartOffset: 10}, {Epoch: 4, StartOffset: 30}}
	for _, tc := range []struct {
		name string
		md   *RemoteLogSegmentMetadata
		want bool
	}{
		{"within epoch 2", expirySegment(10, 19, CopySegmentFinished, EpochStart{2, 10}), true},
		{"spanning 2 and 4", expirySegment(20, 39, CopySegmentFinished, EpochStart{2, 20}, EpochStart{4, 30}), true},
		{"older than the cache", expirySegment(0, 9, CopySegmentFinished, EpochStart{1, 0}), true},
		{"epoch 3 unknown locally", expirySegment(20, 39, CopySegmentFinished, EpochStart{3, 20}), false},
		{"epoch 2 ends locally at 29", expirySegment(20, 34, CopySegmentFinished, EpochStart{2, 20}), false},
		{"epoch 4 starts elsewhere", expirySegment(20, 39, CopySegmentFinished, EpochStart{2, 20}, EpochStart{4, 35}), false},
		{"past the log end", expirySegment(40, 60, CopySegmentFinished, EpochStart{4, 40}), false},
	} {
		if got := OnEpochLineage(tc.md, local, 50); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestExpire: only copied segments count; those on the lineage go by Kafka's rules
// (RemoteSegmentsToDelete), those off it only below the log start offset.
func TestExpire(t *testing.T) {
	local := []EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 30}}
	segs := []*RemoteLogSegmentMetadata{
		expirySegment(0, 9, CopySegmentFinished, EpochStart{0, 0}),
		expirySegment(5, 9, CopySegmentFinished, EpochStart{1, 5}), // an unclean election's, off the lineage
		expirySegment(10, 19, CopySegmentFinished, EpochStart{0, 10}),
		expirySegment(20, 29, CopySegmentStarted, EpochStart{0, 20}),
		expirySegment(20, 29, CopySegmentFinished, EpochStart{0, 20}),
	}
	// retention.ms 100 at now 115: segments ending at or before offset (timestamp) 15.
	exp := Expire(segs, local, 40, RemoteRetentionInput{RetentionMs: 100, RetentionBytes: -1, LogStartOffset: 0, NowMs: 115})
	if got := starts(exp.Delete); !slices.Equal(got, []int64{0}) || exp.LogStartOffset != 10 {
		t.Fatalf("by time: delete %v, log start %d", got, exp.LogStartOffset)
	}
	// DeleteRecords moved the log start to 12: [0,9] and the off-lineage [5,9] go.
	exp = Expire(segs, local, 40, RemoteRetentionInput{RetentionMs: -1, RetentionBytes: -1, LogStartOffset: 12, NowMs: 115})
	if got := starts(exp.Delete); !slices.Equal(got, []int64{0, 5}) || exp.LogStartOffset != 12 {
		t.Fatalf("by log start: delete %v, log start %d", got, exp.LogStartOffset)
	}
}

func starts(segs []*RemoteLogSegmentMetadata) []int64 {
	var out []int64
	for _, s := range segs {
		out = append(out, s.StartOffset)
	}
	return out
}
