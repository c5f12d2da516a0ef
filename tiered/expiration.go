package tiered

// Expiration is what Kafka's RLMExpirationTask decides for one partition, before any
// deletion: the remote segments to delete and the log start offset after them.
type Expiration struct {
	// Delete are the segments to delete, ascending start offset.
	Delete []*RemoteLogSegmentMetadata
	// LogStartOffset is RemoteRetentionResult.LogStartOffset: the log start offset once
	// they are deleted.
	LogStartOffset int64
}

// Expire applies remote retention (RemoteSegmentsToDelete) to segs, a partition's
// remote segments in every state (ascending start offset), as its leader sees them:
// local are its leader-epoch cache's entries (ascending) and logEnd its log end offset.
// The copied segments on the leader's epoch lineage (OnEpochLineage) are in.Segments;
// the copied ones off it (an unclean election's) are deleted only once wholly below the
// log start offset. Segments in another state are the copier's to abandon.
func Expire(segs []*RemoteLogSegmentMetadata, local []EpochStart, logEnd int64, in RemoteRetentionInput) Expiration {
	var lineage []*RemoteLogSegmentMetadata
	in.Segments = nil
	var off []*RemoteLogSegmentMetadata
	for _, md := range segs {
		if md.State != CopySegmentFinished {
			continue
		}
		if !OnEpochLineage(md, local, logEnd) {
			if md.EndOffset < in.LogStartOffset {
				off = append(off, md)
			}
			continue
		}
		lineage = append(lineage, md)
		in.Segments = append(in.Segments, RemoteSegment{StartOffset: md.StartOffset, EndOffset: md.EndOffset,
			SizeInBytes: int64(md.SegmentSizeInBytes), MaxTimestampMs: md.MaxTimestampMs})
	}
	res := RemoteSegmentsToDelete(in)
	out := Expiration{LogStartOffset: res.LogStartOffset}
	for _, i := range res.Delete {
		out.Delete = append(out.Delete, lineage[i])
	}
	out.Delete = append(out.Delete, off...)
	return out
}

// OnEpochLineage is Kafka's RemoteLogManager.isRemoteSegmentWithinLeaderEpochs: md
// ends below logEnd and each of its leader epochs is in the local cache (local,
// ascending), ending no later than the cache says, and, past its first, starting where
// the cache says. Epochs older than the cache's first (the cache is trimmed with the
// log) are taken as on the lineage.
func OnEpochLineage(md *RemoteLogSegmentMetadata, local []EpochStart, logEnd int64) bool {
	if md.EndOffset >= logEnd {
		return false
	}
	if len(local) == 0 {
		return true
	}
	ok, first := true, true
	md.epochEnds(func(epoch int32, start, end int64) {
		defer func() { first = false }()
		if !ok || epoch < local[0].Epoch {
			return
		}
		i := -1
		for j, e := range local {
			if e.Epoch == epoch {
				i = j
				break
			}
		}
		if i < 0 {
			ok = false
			return
		}
		localEnd := logEnd - 1
		if i+1 < len(local) {
			localEnd = local[i+1].StartOffset - 1
		}
		// The cache's first entry may start later than the epoch did (trimmed with the
		// log start); a later one starts where the epoch did.
		startsRight := first || local[i].StartOffset == start || i == 0 && local[i].StartOffset > start
		ok = end <= localEnd && startsRight
	})
	return ok
}
