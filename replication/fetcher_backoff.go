package replication

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

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

// leaderBehindFirstBackoff is the first delay of a partition whose leader answered as
// a broker behind the follower's metadata: NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION or UNKNOWN_TOPIC_ID (it has not opened the replica or
// applied the topic yet), INCONSISTENT_TOPIC_ID (its replica is of the topic's previous
// incarnation), UNKNOWN_LEADER_EPOCH (it has not applied the new epoch). The follower's own
// epoch does not move when the leader catches up, so the full replica.fetch.backoff.ms
// would hold every acks=all write to the partition for a second right after a topic is
// created or a replica added; instead the delay starts here and doubles at each error
// in a row up to replica.fetch.backoff.ms, so that a leader that stays behind is still
// asked at most once per backoff after a few tries.
const leaderBehindFirstBackoff = 25 * time.Millisecond

// backoff is the delay of a partition after the leader answered it err, the
// errorStreak-th error in a row: replica.fetch.backoff.ms (max), or for an error of a
// leader behind the follower, leaderBehindFirstBackoff doubled per error in a row up
// to it.
func (st *fetchState) backoff(err error, max time.Duration) time.Duration {
	st.errorStreak++
	switch {
	case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.UnknownTopicOrPartition),
		errors.Is(err, kerr.UnknownTopicID), errors.Is(err, kerr.InconsistentTopicID),
		errors.Is(err, kerr.UnknownLeaderEpoch):
	default:
		return max
	}
	d := leaderBehindFirstBackoff
	for i := 1; i < st.errorStreak && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
