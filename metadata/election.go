package metadata

import "slices"

// ElectLeader chooses a partition leader by Kafka's ONLINE rule: keep the current leader
// if it is in isr and acceptable; otherwise the first replica in assignment order that is
// in isr and acceptable. With unclean set and no such replica, the first acceptable
// replica outside the ISR (possible data loss). It returns -1 when nothing is eligible.
// acceptable reports whether a broker is registered and unfenced.
func ElectLeader(p *Partition, isr []int32, acceptable func(int32) bool, unclean bool) (leader int32, uncleanElection bool) {
	if p.Leader >= 0 && slices.Contains(isr, p.Leader) && acceptable(p.Leader) {
		return p.Leader, false
	}
	for _, r := range p.Replicas {
		if slices.Contains(isr, r) && acceptable(r) {
			return r, false
		}
	}
	if unclean {
		for _, r := range p.Replicas {
			if acceptable(r) {
				return r, true
			}
		}
	}
	return -1, false
}
