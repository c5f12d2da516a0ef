package group

// RangeAssignor is KIP-848's server-side range assignor, Kafka's
// org.apache.kafka.coordinator.group.assignor.RangeAssignor: topic by topic, the
// partitions are split into ranges across the members subscribed to that topic, in
// member id order. With n subscribers and P partitions each gets P/n, and the first
// P%n that still need one get one more, so per topic the counts differ by at most one.
//
// Co-partitioning: topics with the same partition count and the same subscribers are
// assigned identically (member i gets the same partition numbers of each), which
// joins of co-partitioned topics rely on; a fresh assignment gives each member one
// contiguous range.
//
// Stickiness: a member keeps its current partitions of the topic, lowest first, up to
// the per-topic quota (the extra partitions go first to members already holding more
// than P/n); the rest are handed out in ascending order to the members still below
// their quota. Racks are not considered (neither does Kafka's server-side range).
type RangeAssignor struct{}

// Name is "range".
func (RangeAssignor) Name() string { return RangeAssignorName }

// Assign computes the target assignment; see RangeAssignor.
func (RangeAssignor) Assign(members []AssignorMember, topics []AssignorTopic) (map[string]AssignedPartitions, error) {
	in, err := prepareAssign(members, topics)
	if err != nil {
		return nil, err
	}
	assigned := make([][]assignedTP, len(in.members))
	subscribers := make([][]int, len(in.topics))
	// ownedFrom[i] is how far member i's owned list (sorted by topic) has been walked.
	ownedFrom := make([]int, len(in.members))
	for i, m := range in.members {
		for _, t := range m.subs {
			subscribers[t] = append(subscribers[t], i)
		}
	}
	for t := range in.topics {
		subs := subscribers[t]
		if len(subs) == 0 {
			continue
		}
		count := int(in.topics[t].Partitions)
		minQuota, extra := count/len(subs), count%len(subs)
		kept := make([]bool, count)
		remaining := make([]int, len(subs))
		for k, i := range subs {
			owned := in.members[i].owned[ownedFrom[i]:]
			n := 0
			for n < len(owned) && owned[n].t == int32(t) {
				n++
			}
			ownedFrom[i] += n
			keep := min(n, minQuota)
			if n > minQuota && extra > 0 {
				keep++
				extra--
			}
			for _, tp := range owned[:keep] {
				kept[tp.p] = true
				assigned[i] = append(assigned[i], tp)
			}
			remaining[k] = minQuota - keep
		}
		next := 0
		for k, i := range subs {
			want := remaining[k]
			if want >= 0 && extra > 0 {
				want++
				extra--
			}
			for ; want > 0; want-- {
				for kept[next] {
					next++
				}
				assigned[i] = append(assigned[i], assignedTP{int32(t), int32(next)})
				next++
			}
		}
	}
	return in.result(assigned), nil
}
