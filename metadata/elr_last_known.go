package metadata

// The last known leader (KIP-966's balanced recovery, as Kafka 4.2's controller runs
// it: PartitionChangeBuilder with useLastKnownLeaderInBalancedRecovery, always on).
//
// When a partition's last ISR member leaves the ISR (it was fenced, or it shut down),
// it joins the ELR and the partition's LastKnownELR becomes its leader at that moment,
// one broker. If that broker comes back after an unclean shutdown (kill -9, a crash)
// its registration takes it out of the ELR, which may leave the ISR and the ELR both
// empty: nobody is safely electable. Rather than keep the partition offline for ever,
// the controller then elects the last known leader as soon as it is acceptable again
// (registered and unfenced): it held every record acknowledged before the failure,
// but what it had not flushed may be gone, so the election is unclean (its ISR is
// itself alone). A replica other than the last known leader that returns first is not
// elected (it is in neither the ISR nor the ELR), unless
// unclean.leader.election.enable allows an unclean election, which Kafka tries only
// after the last known leader: the last known leader, once back, is preferred to it.
// LastKnownELR is cleared as soon as the partition has a leader again.

import "slices"

// LastKnownLeader returns a partition's LastKnownELR after a change takes it from p to
// an ISR of nextISR with leader nextLeader (Kafka's
// PartitionChangeBuilder.maybeUpdateLastKnownLeader): when the ISR empties, p's leader
// (unless LastKnownELR already names exactly it; a partition that had no leader keeps
// what it had); once the partition has a leader, nothing; otherwise p's LastKnownELR.
func LastKnownLeader(p *Partition, nextISR []int32, nextLeader int32) []int32 {
	switch {
	case len(nextISR) == 0 && len(p.ISR) > 0 && p.Leader >= 0:
		return []int32{p.Leader}
	case nextLeader >= 0:
		return nil
	default:
		return p.LastKnownELR
	}
}

// electableLastKnownLeader returns the last known leader of p if next (what p is
// becoming) may elect it (Kafka's PartitionChangeBuilder.canElectLastKnownLeader, with
// KAFKA-19522's fix of Kafka 4.1: never a fenced one): the ISR and the ELR are both
// empty, p's LastKnownELR is exactly one broker, still a replica, and acceptable.
// Otherwise -1.
func electableLastKnownLeader(p, next *Partition, acceptable func(int32) bool) int32 {
	if len(next.ISR) > 0 || len(next.ELR) > 0 || len(p.LastKnownELR) != 1 {
		return -1
	}
	r := p.LastKnownELR[0]
	if !slices.Contains(next.Replicas, r) || !acceptable(r) {
		return -1
	}
	return r
}

// noChange reports whether a partition change rewritten by WithELR changes nothing.
func (pc PartitionChangeRecord) noChange() bool {
	return pc.Leader == nil && pc.ISR == nil && !pc.EmptyISR && pc.ELR == nil && pc.LastKnownELR == nil &&
		pc.Replicas == nil && pc.Adding == nil && pc.Removing == nil && !pc.ClearReassignment
}
