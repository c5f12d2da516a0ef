package tiered

// RemoteSegment is one remote segment as remote retention sees it: its offsets (end
// inclusive), size and largest record timestamp.
type RemoteSegment struct {
	StartOffset, EndOffset int64
	SizeInBytes            int64
	MaxTimestampMs         int64
}

// RemoteRetentionInput is what remote retention decides from, all plain values.
type RemoteRetentionInput struct {
	// Segments are the partition's remote segments that finished copying
	// (COPY_SEGMENT_FINISHED) and lie on the current leader epoch lineage (Kafka's
	// isRemoteSegmentWithinLeaderEpochs, the caller's filter), ascending by offset.
	Segments []RemoteSegment
	// LocalSizeAboveCopied is the size of the local segments not yet copied (Kafka's
	// onlyLocalLogSegmentsSize: those at or above the highest copied offset).
	LocalSizeAboveCopied int64
	// RetentionMs and RetentionBytes are the topic's retention.ms and retention.bytes
	// (-1: no limit), which bound the whole log, both tiers.
	RetentionMs, RetentionBytes int64
	// LogStartOffset is the partition's log start offset (moved by DeleteRecords).
	LogStartOffset int64
	// NowMs is the current time in milliseconds.
	NowMs int64
}

// RemoteRetentionResult is what remote retention decided.
type RemoteRetentionResult struct {
	// Delete are the indexes in Segments of the segments to delete, ascending.
	Delete []int
	// LogStartOffset is the log start offset after the deletions: the input's, or one
	// past the last segment deleted by time or size when that is higher. The remote log
	// manager reports it through replication's SetRemoteLogState (as its remote log
	// start offset) once the deletions are recorded.
	LogStartOffset int64
}

// RemoteSegmentsToDelete applies Kafka's remote retention (RemoteLogManager's
// RLMExpirationTask): a segment wholly below the log start offset is deleted; then, oldest
// first and stopping at the first segment that qualifies for neither, a segment whose
// largest timestamp is at or before now - retention.ms, or one that still fits in the
// excess of the total size (the remote segments from the log start on plus the local
// segments not yet copied) over retention.bytes. Deleting by time or size moves the log
// start offset past the segment. Segments overlapping the log start offset count toward
// the size; those wholly below it do not.
func RemoteSegmentsToDelete(in RemoteRetentionInput) RemoteRetentionResult {
	res := RemoteRetentionResult{LogStartOffset: in.LogStartOffset}
	total := in.LocalSizeAboveCopied
	for _, s := range in.Segments {
		if s.EndOffset >= in.LogStartOffset {
			total += s.SizeInBytes
		}
	}
	var breached int64 // bytes over retention.bytes still to delete
	if in.RetentionBytes >= 0 && total > in.RetentionBytes {
		breached = total - in.RetentionBytes
	}
	for i, s := range in.Segments {
		if s.EndOffset < in.LogStartOffset {
			res.Delete = append(res.Delete, i)
			continue
		}
		byTime := in.RetentionMs >= 0 && s.MaxTimestampMs <= in.NowMs-in.RetentionMs
		bySize := !byTime && breached > 0 && breached-s.SizeInBytes >= 0
		if !byTime && !bySize {
			break
		}
		breached = max(breached-s.SizeInBytes, 0)
		res.Delete = append(res.Delete, i)
		res.LogStartOffset = max(res.LogStartOffset, s.EndOffset+1)
	}
	return res
}
