package segment

import (
	"math"
	"testing"
)

// Cleanable: the range ends at the active segment, the last stable offset or the first
// segment younger than min.compaction.lag.ms; the checkpoint moves its start; an old
// dirty segment past max.compaction.lag.ms makes the log due.
func TestCleanableRange(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 4096
	l, _ := openTestLog(t, cfg, OpenOptions{})
	appendN(t, l, 60, batchSpec{records: 5, valueSize: 100, baseTimestamp: 1_000_000}, 0)
	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	active := segs[len(segs)-1].BaseOffset
	var sealed int64
	for _, s := range segs[:len(segs)-1] {
		sealed += s.Size
	}
	noLags := CleanLags{MaxMs: math.MaxInt64}
	now := int64(2_000_000)
	r := l.Cleanable(0, false, l.LogEndOffset(), noLags, now)
	if r.FirstDirty != 0 || r.UpTo != active || r.Dirty != sealed || r.Clean != 0 || r.Ratio() != 1 || r.Due {
		t.Fatalf("no lags: %+v (active at %d, %d sealed bytes)", r, active, sealed)
	}
	if r := l.Cleanable(0, false, segs[1].BaseOffset, noLags, now); r.UpTo != segs[1].BaseOffset || r.Dirty != segs[0].Size {
		t.Fatalf("stable at the second segment: %+v", r)
	}
	if r := l.Cleanable(segs[1].BaseOffset, true, l.LogEndOffset(), noLags, now); r.FirstDirty != segs[1].BaseOffset || r.Clean != segs[0].Size || r.Dirty != sealed-segs[0].Size {
		t.Fatalf("checkpoint at the second segment: %+v", r)
	}
	if r := l.Cleanable(l.LogEndOffset()+1, true, l.LogEndOffset(), noLags, now); r.FirstDirty != 0 {
		t.Fatalf("a checkpoint past the log end is ignored: %+v", r)
	}
	if r := l.Cleanable(0, false, l.LogEndOffset(), CleanLags{MinMs: 10 * now, MaxMs: math.MaxInt64}, now); r.UpTo != 0 || r.Dirty != 0 {
		t.Fatalf("every segment younger than min.compaction.lag.ms: %+v", r)
	}
	if r := l.Cleanable(0, false, l.LogEndOffset(), CleanLags{MaxMs: 1}, now); !r.Due {
		t.Fatalf("dirty segments older than max.compaction.lag.ms are not due: %+v", r)
	}
}
