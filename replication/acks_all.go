package replication

// Outcome is where an acks=all write stands on its partition (AcksAllOutcome). The
// callers map it to their own Kafka codes: the broker's acksAllCode, the coordinator
// runtime's checkPending.
type Outcome uint8

const (
	// OutcomeWaiting: still the leader, the high watermark short of the write's end.
	OutcomeWaiting Outcome = iota
	// OutcomeCommitted: the high watermark passed the write's end with at least
	// min.insync.replicas in the maximal ISR.
	OutcomeCommitted
	// OutcomeNotEnoughReplicasAfterAppend: committed, but the maximal ISR fell below
	// min.insync.replicas while the write waited (Kafka's
	// NOT_ENOUGH_REPLICAS_AFTER_APPEND).
	OutcomeNotEnoughReplicasAfterAppend
	// OutcomeNotLeader: the replica no longer leads (a follower now, or stopped).
	OutcomeNotLeader
	// OutcomeTimedOut: the wait ended (its timeout, or the connection closing) with the
	// high watermark short of the write's end (Purgatory.WaitAcksAll; Kafka's
	// REQUEST_TIMED_OUT). AcksAllOutcome never returns it.
	OutcomeTimedOut
	// OutcomeStorageError: the replica's log failed (a write or fsync error) with the
	// high watermark short of the write's end, so the write can no longer commit here
	// (Kafka's KAFKA_STORAGE_ERROR for a log directory that failed under an append).
	OutcomeStorageError
)

// String names the outcome for logs and test failures.
func (o Outcome) String() string {
	switch o {
	case OutcomeWaiting:
		return "waiting"
	case OutcomeCommitted:
		return "committed"
	case OutcomeNotEnoughReplicasAfterAppend:
		return "not enough replicas after append"
	case OutcomeNotLeader:
		return "not leader"
	case OutcomeTimedOut:
		return "timed out"
	case OutcomeStorageError:
		return "storage error"
	}
	return "unknown"
}

// AcksAllOutcome is the acks=all rule, Kafka's DelayedProduce check: a replica whose
// log failed before the high watermark reached end fails the write with a storage
// error (an fsync behind the append failed: the records are not known to be on disk,
// and the failed log never counts them); a replica that no longer leads fails it; a leader whose high watermark has not reached end (the
// write's last offset + 1) keeps it waiting; once it has, the write is committed if
// the maximal ISR (WakeState.MaximalISRSize) still holds minISR members, else it
// failed with NOT_ENOUGH_REPLICAS_AFTER_APPEND (the records stay written). minISR is
// the effective min.insync.replicas of the append (EffectiveMinISR); 0 never fails.
// It is pure: the delayed produce, WriteTxnMarkers' wait and the coordinator runtime
// call it with the state they read under, or after, the partition lock.
func AcksAllOutcome(ws WakeState, end int64, minISR int) Outcome {
	switch {
	case ws.LogFailed && ws.HighWatermark < end:
		return OutcomeStorageError
	case ws.Role != Leader:
		return OutcomeNotLeader
	case ws.HighWatermark < end:
		return OutcomeWaiting
	case ws.MaximalISRSize < minISR:
		return OutcomeNotEnoughReplicasAfterAppend
	}
	return OutcomeCommitted
}

// EffectiveMinISR is the min.insync.replicas an acks=all append requires: the topic's
// setting, capped at the partition's replication factor (a topic whose setting exceeds
// its replica count can still be written with acks=all).
func EffectiveMinISR(minInsyncReplicas, replicationFactor int) int {
	return min(minInsyncReplicas, replicationFactor)
}

// WakeState is the part of the state an after-unlock waiter is told (and that
// AcksAllOutcome reads).
func (s State) WakeState() WakeState {
	return WakeState{Role: s.Role, HighWatermark: s.HighWatermark, MaximalISRSize: s.MaximalISRSize, LogFailed: s.LogFailed}
}
