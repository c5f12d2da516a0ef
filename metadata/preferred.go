package metadata

import (
	"fmt"
	"slices"
)

// PreferredLeaderChange moves partition p of topic t to its preferred leader, the first
// replica in assignment order, if that replica is in the ISR and acceptable (registered,
// unfenced). ErrElectionNotNeeded: it leads already; ErrPreferredLeaderNotAvailable: it
// cannot lead now.
func PreferredLeaderChange(im *Image, t *Topic, p *Partition) (PartitionChangeRecord, error) {
	preferred := p.Replicas[0]
	switch {
	case p.Leader == preferred:
		return PartitionChangeRecord{}, fmt.Errorf("%w: broker %d already leads %s-%d", ErrElectionNotNeeded, preferred, t.Name, p.ID)
	case !slices.Contains(p.ISR, preferred) || !im.Acceptable(preferred):
		return PartitionChangeRecord{}, fmt.Errorf("%w: preferred replica %d of %s-%d is not in the ISR %v or not live", ErrPreferredLeaderNotAvailable, preferred, t.Name, p.ID, p.ISR)
	}
	return PartitionChangeRecord{TopicID: t.ID, PartitionID: p.ID, Leader: &preferred}, nil
}

// UncleanLeaderChange elects a leader for a leaderless partition: the first acceptable
// ISR member, else the first acceptable replica in assignment order (an unclean
// election: the ISR becomes that replica alone). ErrElectionNotNeeded: it has a leader;
// ErrEligibleLeadersNotAvailable: no replica is live.
func UncleanLeaderChange(im *Image, t *Topic, p *Partition) (PartitionChangeRecord, error) {
	if p.Leader >= 0 {
		return PartitionChangeRecord{}, fmt.Errorf("%w: %s-%d has leader %d", ErrElectionNotNeeded, t.Name, p.ID, p.Leader)
	}
	leader, unclean := ElectLeader(p, p.ISR, func(id int32) bool { return im.Acceptable(id) }, true)
	if leader < 0 {
		return PartitionChangeRecord{}, fmt.Errorf("%w: no live replica of %s-%d among %v", ErrEligibleLeadersNotAvailable, t.Name, p.ID, p.Replicas)
	}
	change := PartitionChangeRecord{TopicID: t.ID, PartitionID: p.ID, Leader: &leader}
	if unclean {
		change.ISR, change.Unclean = []int32{leader}, true
	}
	return change, nil
}

// TopicPartitionID names a partition by topic name and id.
type TopicPartitionID struct {
	Topic     string
	Partition int32
}

// ImbalancedPartitions returns, for automatic leader rebalancing, the partitions to move
// back to their preferred leader: for each acceptable broker whose imbalance ratio — the
// partitions it prefers (first replica) but does not lead, over the partitions it
// prefers — exceeds percentage/100, those of its partitions whose preferred leader is in
// the ISR. Brokers in id order, partitions in topic and id order.
func ImbalancedPartitions(im *Image, percentage int) []TopicPartitionID {
	type tally struct {
		preferred  int                // partitions whose first replica it is
		notLed     int                // of those, led by another broker or none
		candidates []TopicPartitionID // of those, with it in the ISR
	}
	per := map[int32]*tally{}
	for _, name := range im.TopicNames() {
		for _, p := range im.Topics[name].Partitions {
			pref := p.Replicas[0]
			tl := per[pref]
			if tl == nil {
				tl = &tally{}
				per[pref] = tl
			}
			tl.preferred++
			if p.Leader != pref {
				tl.notLed++
				if slices.Contains(p.ISR, pref) {
					tl.candidates = append(tl.candidates, TopicPartitionID{name, p.ID})
				}
			}
		}
	}
	var out []TopicPartitionID
	for _, id := range im.BrokerIDs() {
		tl := per[id]
		if tl == nil || len(tl.candidates) == 0 || !im.Acceptable(id) {
			continue
		}
		if tl.notLed*100 > percentage*tl.preferred {
			out = append(out, tl.candidates...)
		}
	}
	return out
}
