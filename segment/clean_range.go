package segment

import "math"

// CleanLags are a compacted topic's lag settings, in milliseconds:
// min.compaction.lag.ms and max.compaction.lag.ms (math.MaxInt64: none).
type CleanLags struct {
	MinMs, MaxMs int64
}

// CleanableRange is what a compacted log offers the cleaner now (Kafka's
// LogCleanerManager.cleanableOffsets).
type CleanableRange struct {
	// FirstDirty is where the dirty section starts: the cleaner checkpoint when it lies
	// within the log, the log start offset otherwise.
	FirstDirty int64
	// UpTo is the first uncleanable offset: the last stable offset, the active
	// segment's base offset, or the first segment younger than min.compaction.lag.ms,
	// whichever is lowest.
	UpTo int64
	// Dirty and Clean are the sizes of the sealed segments below UpTo from FirstDirty
	// on, and of those wholly below FirstDirty.
	Dirty, Clean int64
	// Due is set when the oldest dirty segment is older than max.compaction.lag.ms:
	// the log is cleaned whatever its dirty ratio.
	Due bool
}

// Ratio is the dirty ratio min.cleanable.dirty.ratio is compared with.
func (r CleanableRange) Ratio() float64 {
	if r.Clean+r.Dirty == 0 {
		return 0
	}
	return float64(r.Dirty) / float64(r.Clean+r.Dirty)
}

// Cleanable measures the log's cleanable range at nowMs: checkpoint is the cleaner's
// first dirty offset for it (when has), stable the partition's last stable offset (at
// most its high watermark).
func (l *Log) Cleanable(checkpoint int64, has bool, stable int64, lags CleanLags, nowMs int64) CleanableRange {
	segs := l.segments
	r := CleanableRange{FirstDirty: l.LocalLogStartOffset()}
	if has && checkpoint >= r.FirstDirty && checkpoint <= l.LogEndOffset() {
		r.FirstDirty = checkpoint
	}
	r.UpTo = min(stable, l.active().baseOffset)
	for _, sg := range segs[:len(segs)-1] {
		if lags.MinMs > 0 && sg.maxTimestamp > nowMs-lags.MinMs {
			r.UpTo = min(r.UpTo, sg.baseOffset)
		}
		switch {
		case sg.nextOffset <= r.FirstDirty:
			r.Clean += sg.size
		case sg.nextOffset <= r.UpTo:
			r.Dirty += sg.size
			if r.Dirty == sg.size && lags.MaxMs < math.MaxInt64 && sg.maxTimestamp >= 0 && nowMs-sg.maxTimestamp > lags.MaxMs {
				r.Due = true
			}
		}
	}
	return r
}
