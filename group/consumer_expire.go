package group

// A consumer group's timers: the session timeout (consumer.session.timeout.ms) and the
// rebalance timeout within which a member must revoke what its target takes away.
// Kafka runs them as coordinator timers (GroupMetadataManager's session and rebalance
// timeouts); here the caller asks NextDeadline when to call Expire.

import (
	"time"
)

// Expire removes, at now, every member whose session timed out (no heartbeat within
// ConsumerConfig.SessionTimeout; a static member that left with epoch -2 included) and
// every member still in UNREVOKED_PARTITIONS at the epoch it entered it once its
// rebalance timeout passed, and every classic member that did not rejoin or sync in
// time (consumer_classic.go). Each removal bumps the group epoch; topics is the metadata
// image, for the subscription digest stored with the epoch. Members whose timers were
// never started (after Replay, before StartTimers) are left alone.
func (g *ConsumerGroup) Expire(now time.Time, topics ConsumerTopics) []ConsumerEvent {
	e := &emitter[ConsumerEvent]{apply: g.apply}
	for _, m := range g.sortedMembers() {
		if g.expired(m, now) {
			g.fence(e, m, topics)
		}
	}
	return e.events
}

func (g *ConsumerGroup) expired(m *consumerMember, now time.Time) bool {
	if !m.sessionDeadline.IsZero() && !now.Before(m.sessionDeadline) {
		return true
	}
	if !m.classicDeadline.IsZero() && !now.Before(m.classicDeadline) {
		return true
	}
	return !m.revocationDeadline.IsZero() && !now.Before(m.revocationDeadline) &&
		m.state == MemberUnrevokedPartitions && m.epoch == m.revocationEpoch
}

// NextDeadline is the earliest time at which Expire may remove a member; ok is false
// when no timer runs.
func (g *ConsumerGroup) NextDeadline() (at time.Time, ok bool) {
	consider := func(t time.Time) {
		if !t.IsZero() && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	for _, m := range g.members {
		consider(m.sessionDeadline)
		consider(m.classicDeadline)
		if m.state == MemberUnrevokedPartitions && m.epoch == m.revocationEpoch {
			consider(m.revocationDeadline)
		}
	}
	return at, ok
}

// StartTimers starts, at now, every member's session timer and the rebalance timer of
// every member with partitions to revoke: Kafka does so when a coordinator loads its
// partition, since timers are not persisted.
func (g *ConsumerGroup) StartTimers(now time.Time) {
	for _, m := range g.members {
		m.sessionDeadline = now.Add(m.sessionTimeout(g.cfg))
		m.revocationDeadline = time.Time{}
		if m.state == MemberUnrevokedPartitions {
			m.revocationDeadline = now.Add(time.Duration(m.meta.RebalanceTimeoutMs) * time.Millisecond)
			m.revocationEpoch = m.epoch
		}
	}
}
