package replication

import "time"

// A partition the leader answers with an error (NOT_LEADER_OR_FOLLOWER before the
// leader has learnt its leadership, UNKNOWN_TOPIC_OR_PARTITION, a fenced or unknown
// leader epoch, ...) is delayed for replica.fetch.backoff.ms, as Kafka's fetcher
// delays its partitionsWithError: it leaves the fetch (the session forgets it) and
// joins again once the delay is over, or at once when its leader epoch moves (the
// metadata that clears such an error), while the other partitions keep fetching. A
// leader answers an error at once, so without the delay every fetch of the session
// would come back at once, and the fetcher would spin.

// delay leaves the partition out of the fetch until now+backoff, or until its leader
// epoch moves from epoch.
func (st *fetchState) delay(now time.Time, backoff time.Duration, epoch int32) {
	st.delayedUntil, st.delayedEpoch = now.Add(backoff), epoch
}

// delayed reports whether a partition at pos is still left out of the fetch by an
// error's delay, and ends the delay when it is over.
func (st *fetchState) delayed(pos FollowerPosition, now time.Time) bool {
	if st.delayedUntil.IsZero() {
		return false
	}
	if pos.LeaderEpoch == st.delayedEpoch && now.Before(st.delayedUntil) {
		return true
	}
	st.delayedUntil = time.Time{}
	return false
}
