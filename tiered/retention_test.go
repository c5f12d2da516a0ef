package tiered

import (
	"math/rand"
	"slices"
	"testing"
)

// segs builds contiguous remote segments of 10 offsets each from (size, max timestamp)
// pairs.
func segs(sizeAndTs ...int64) []RemoteSegment {
	var out []RemoteSegment
	for i := 0; i+1 < len(sizeAndTs); i += 2 {
		n := int64(len(out))
		out = append(out, RemoteSegment{StartOffset: 10 * n, EndOffset: 10*n + 9, SizeInBytes: sizeAndTs[i], MaxTimestampMs: sizeAndTs[i+1]})
	}
	return out
}

func TestRemoteSegmentsToDelete(t *testing.T) {
	four := segs(100, 1000, 100, 2000, 100, 3000, 100, 4000) // [0,9] [10,19] [20,29] [30,39]
	cases := []struct {
		name       string
		in         RemoteRetentionInput
		wantDelete []int
		wantStart  int64
	}{
		{"no limits", RemoteRetentionInput{Segments: four, RetentionMs: -1, RetentionBytes: -1, NowMs: 1 << 40}, nil, 0},
		{"by time", RemoteRetentionInput{Segments: four, RetentionMs: 1000, RetentionBytes: -1, NowMs: 3000}, []int{0, 1}, 20},
		{"by time, boundary inclusive", RemoteRetentionInput{Segments: four, RetentionMs: 1000, RetentionBytes: -1, NowMs: 2999}, []int{0}, 10},
		{"by time stops at the first young segment", RemoteRetentionInput{Segments: segs(100, 1000, 100, 9000, 100, 1000), RetentionMs: 1000, RetentionBytes: -1, NowMs: 5000}, []int{0}, 10},
		{"by size, remote only", RemoteRetentionInput{Segments: four, RetentionMs: -1, RetentionBytes: 250, NowMs: 0}, []int{0}, 10},
		{"by size counts the local segments not copied", RemoteRetentionInput{Segments: four, LocalSizeAboveCopied: 150, RetentionMs: -1, RetentionBytes: 250, NowMs: 0}, []int{0, 1, 2}, 30},
		{"by size never below retention.bytes", RemoteRetentionInput{Segments: four, RetentionMs: -1, RetentionBytes: 399, NowMs: 0}, nil, 0},
		{"retention.bytes 0 deletes every remote segment", RemoteRetentionInput{Segments: four, RetentionMs: -1, RetentionBytes: 0, NowMs: 0}, []int{0, 1, 2, 3}, 40},
		{"below the log start", RemoteRetentionInput{Segments: four, RetentionMs: -1, RetentionBytes: -1, LogStartOffset: 25}, []int{0, 1}, 25},
		{"below the log start, then by size", RemoteRetentionInput{Segments: four, RetentionMs: -1, RetentionBytes: 100, LogStartOffset: 15}, []int{0, 1, 2}, 30},
		{"segments below the log start do not count toward the size", RemoteRetentionInput{Segments: four, RetentionMs: -1, RetentionBytes: 200, LogStartOffset: 20}, []int{0, 1}, 20},
		{"time then size", RemoteRetentionInput{Segments: segs(100, 1000, 50, 9000, 50, 9000, 300, 9000), RetentionMs: 1000, RetentionBytes: 300, NowMs: 2000}, []int{0, 1, 2}, 30},
		{"log start above every segment", RemoteRetentionInput{Segments: four, RetentionMs: -1, RetentionBytes: -1, LogStartOffset: 100}, []int{0, 1, 2, 3}, 100},
		{"no segments", RemoteRetentionInput{RetentionMs: 1, RetentionBytes: 0, LogStartOffset: 7, NowMs: 1 << 40}, nil, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := RemoteSegmentsToDelete(c.in)
			if !slices.Equal(res.Delete, c.wantDelete) || res.LogStartOffset != c.wantStart {
				t.Fatalf("got %+v, want delete %v, log start %d", res, c.wantDelete, c.wantStart)
			}
			checkRemoteRetention(t, c.in, res)
		})
	}
}

// checkRemoteRetention checks the properties every answer has.
func checkRemoteRetention(t *testing.T, in RemoteRetentionInput, res RemoteRetentionResult) {
	t.Helper()
	// A prefix of the segments is deleted, including every one below the log start.
	for i, d := range res.Delete {
		if d != i {
			t.Fatalf("deleted %v: not a prefix", res.Delete)
		}
	}
	k := len(res.Delete)
	for i, s := range in.Segments {
		if s.EndOffset < in.LogStartOffset && i >= k {
			t.Fatalf("segment %d ends below the log start %d and is kept", i, in.LogStartOffset)
		}
	}
	// The log start moves only forward, exactly past the last segment deleted by rule.
	want := in.LogStartOffset
	for _, s := range in.Segments[:k] {
		if s.EndOffset >= in.LogStartOffset {
			want = max(want, s.EndOffset+1)
		}
	}
	if res.LogStartOffset != want {
		t.Fatalf("log start %d, want %d", res.LogStartOffset, want)
	}
	remaining := in.LocalSizeAboveCopied
	for _, s := range in.Segments[k:] {
		remaining += s.SizeInBytes
	}
	expired := func(s RemoteSegment) bool { return in.RetentionMs >= 0 && s.MaxTimestampMs <= in.NowMs-in.RetentionMs }
	// Deleting by size alone never takes the log below retention.bytes.
	bySize, byTime := false, false
	for _, s := range in.Segments[:k] {
		bySize = bySize || s.EndOffset >= in.LogStartOffset && !expired(s)
		byTime = byTime || s.EndOffset >= in.LogStartOffset && expired(s)
	}
	if bySize && !byTime && remaining < in.RetentionBytes {
		t.Fatalf("%d bytes remain, below retention.bytes %d", remaining, in.RetentionBytes)
	}
	// The first segment kept qualifies for no rule.
	if k < len(in.Segments) {
		s := in.Segments[k]
		tooBig := in.RetentionBytes >= 0 && remaining > in.RetentionBytes && remaining-s.SizeInBytes >= in.RetentionBytes
		if expired(s) || tooBig {
			t.Fatalf("segment %d %+v kept: expired %v, too big %v (remaining %d)", k, s, expired(s), tooBig, remaining)
		}
	}
}

// randomRetentionInput draws an input from r: contiguous segments, sizes and
// timestamps in small ranges so that every rule fires often.
func randomRetentionInput(r *rand.Rand) RemoteRetentionInput {
	in := RemoteRetentionInput{RetentionMs: int64(r.Intn(40)) - 1, RetentionBytes: int64(r.Intn(2000)) - 1,
		LocalSizeAboveCopied: int64(r.Intn(500)), NowMs: int64(r.Intn(100)), LogStartOffset: int64(r.Intn(200))}
	next := int64(r.Intn(20))
	for n := r.Intn(12); n > 0; n-- {
		length := int64(1 + r.Intn(30))
		in.Segments = append(in.Segments, RemoteSegment{StartOffset: next, EndOffset: next + length - 1,
			SizeInBytes: int64(r.Intn(300)), MaxTimestampMs: int64(r.Intn(100))})
		next += length
	}
	return in
}

// TestRemoteSegmentsToDeleteProperties checks the properties on random inputs.
func TestRemoteSegmentsToDeleteProperties(t *testing.T) {
	r := rand.New(rand.NewSource(405))
	for i := 0; i < 20000; i++ {
		in := randomRetentionInput(r)
		checkRemoteRetention(t, in, RemoteSegmentsToDelete(in))
	}
}

func FuzzRemoteSegmentsToDelete(f *testing.F) {
	f.Add(int64(1), int64(405))
	f.Add(int64(-7), int64(0))
	f.Fuzz(func(t *testing.T, seed, salt int64) {
		in := randomRetentionInput(rand.New(rand.NewSource(seed ^ salt<<17)))
		checkRemoteRetention(t, in, RemoteSegmentsToDelete(in))
	})
}
