package segment

import "fmt"

// The local half of tiered storage (KIP-405, Kafka's UnifiedLog with remote storage).
// With Config.RemoteStorageEnable the log keeps two start offsets: LogStartOffset, the
// earliest offset in either tier (checkpointed, moved by DeleteRecords, by the leader's
// log start on a follower and by remote retention through SetRemoteLogState), and
// LocalLogStartOffset, the first offset of the local segments. Between them the records
// are only in remote storage. A local segment is deleted only when it is wholly at or
// below the highest offset confirmed copied (SetRemoteLogState) or wholly below the log
// start offset (never copied then), and then by the local
// limits (local.retention.*, -2 meaning retention.*) or because it lies below the local
// log start. Without remote storage both start offsets are one and nothing here applies.

// SetRemoteLogState records what remote storage holds, as the remote log manager
// confirms it: highestCopiedOffset is the highest offset wholly copied (-1: none), the
// bound of local deletion; it is taken as given, so that a smaller value (another
// leader's metadata) makes local deletion wait rather than run ahead of the copies.
// remoteLogStartOffset is the first offset of the remote segments (-1: none); when it
// is above the log start offset (remote retention deleted segments), the log start
// moves up to it, and the local log start with it when it passes that, never beyond
// upTo (the high watermark). It must come from settled metadata: the log start never
// moves back. It does nothing to the start offsets without remote storage, and deletes
// nothing itself but the local segments wholly below a raised local log start that are
// copied.
func (l *Log) SetRemoteLogState(highestCopiedOffset, remoteLogStartOffset, upTo int64) error {
	l.highestCopiedOffset = max(highestCopiedOffset, -1)
	if !l.cfg.RemoteStorageEnable || remoteLogStartOffset <= l.logStartOffset {
		return nil
	}
	return l.AdvanceLogStartOffset(min(remoteLogStartOffset, upTo, l.LogEndOffset()))
}

// HighestCopiedOffset is the highest offset confirmed copied to remote storage, -1 when
// none (SetRemoteLogState).
func (l *Log) HighestCopiedOffset() int64 { return l.highestCopiedOffset }

// InRemoteTier reports whether offset lies in remote storage only: remote storage is
// enabled and offset is at or above the log start offset and below the local log start
// offset (a fetch there is Kafka's OFFSET_MOVED_TO_TIERED_STORAGE).
func (l *Log) InRemoteTier(offset int64) bool {
	return l.cfg.RemoteStorageEnable && offset >= l.logStartOffset && offset < l.localLogStartOffset
}

// StartAtFromRemote empties the log and starts it at localStart with the log start
// offset logStart (at most localStart) and the leader epochs epochs, the state a
// follower builds from remote storage when the leader's local log starts past its own
// (Kafka's ReplicaFetcherTierStateMachine.buildRemoteLogAuxState). The epochs come
// from the remote segment that ends just below localStart; entries past localStart are
// dropped.
func (l *Log) StartAtFromRemote(localStart, logStart int64, epochs []EpochEntry) error {
	if logStart < 0 || logStart > localStart {
		return fmt.Errorf("%w: log start %d with local log start %d", ErrOffsetOutOfRange, logStart, localStart)
	}
	if err := l.TruncateFullyAndStartAt(localStart); err != nil {
		return err
	}
	if l.cfg.RemoteStorageEnable {
		l.logStartOffset = logStart
	}
	for _, e := range epochs {
		if e.StartOffset >= localStart {
			break
		}
		if err := l.epochs.Assign(e.Epoch, max(e.StartOffset, l.logStartOffset)); err != nil {
			return l.fail("leader epoch checkpoint", err)
		}
	}
	return nil
}

// copiedBelow reports whether the records below offset may be deleted locally: always
// without remote storage or with its copies disabled (remote.log.copy.disable, as
// Kafka), else when they are all at or below the highest copied offset or all below
// the log start offset (DeleteRecords or remote retention deleted them: Kafka deletes
// such segments without copying them, and the copier skips them).
func (l *Log) copiedBelow(offset int64) bool {
	return !l.cfg.RemoteStorageEnable || l.cfg.RemoteCopyDisable || offset-1 <= l.highestCopiedOffset || offset <= l.logStartOffset
}

// localRetention returns the retention.ms and retention.bytes local deletion applies:
// the topic's own without remote storage, else local.retention.* (-2 meaning the
// topic's), bounded by the topic's when those are finite (Kafka refuses a local value
// above them; a segment past the topic's retention goes either way).
func (c Config) localRetention() (ms, bytes int64) {
	if !c.RemoteStorageEnable || c.RemoteCopyDisable {
		return c.RetentionMs, c.RetentionBytes
	}
	local := func(local, overall int64) int64 {
		if local == -2 || overall >= 0 && (local < 0 || local > overall) {
			return overall
		}
		return local
	}
	return local(c.LocalRetentionMs, c.RetentionMs), local(c.LocalRetentionBytes, c.RetentionBytes)
}
