package group

// What the broker's metrics read of a shard: its groups' types, states and member
// counts (Summaries, read at scrape time), and each rebalance as it happens
// (Config.OnRebalance): Kafka's GroupCoordinatorMetrics counts a classic group's
// completed rebalances (group-completed-rebalance) and a consumer group's epoch bumps
// (consumer-group-rebalance); the time from a rebalance's start to the group being
// Stable again is Petrel's own.

import "time"

// The group types, as ListGroups (v5+) and ConsumerGroupDescribe name them.
const (
	GroupTypeClassic  = "classic"
	GroupTypeConsumer = "consumer"
)

// Rebalance is one step of a group's rebalance, told to Config.OnRebalance.
type Rebalance struct {
	// GroupType is GroupTypeClassic or GroupTypeConsumer.
	GroupType string
	// Completed is set when the group is Stable again; Took is then the time since the
	// rebalance began: a classic group's move to PreparingRebalance, a consumer group's
	// first epoch bump since it was last Stable. Otherwise a consumer group's epoch
	// was bumped: a rebalance began, or went on with a new target.
	Completed bool
	Took      time.Duration
}

// GroupSummary is one group of a shard as the metrics count it.
type GroupSummary struct {
	Group string
	// Type is GroupTypeClassic, GroupTypeConsumer or GroupTypeShare.
	Type string
	// State is the group's state as ListGroups names it.
	State   string
	Members int
}

// Summaries returns the shard's groups: the classic groups ListGroups lists (a simple
// consumer's offsets holder included), then the consumer groups, then the share groups.
func (s *Shard) Summaries() []GroupSummary {
	out := make([]GroupSummary, 0, len(s.groups)+len(s.consumerGroups))
	for id, g := range s.groups {
		if _, consumer := s.consumerGroups[id]; consumer || g.is(stateDead) {
			continue
		}
		out = append(out, GroupSummary{Group: id, Type: GroupTypeClassic, State: g.state.String(), Members: len(g.members)})
	}
	for id, g := range s.consumerGroups {
		out = append(out, GroupSummary{Group: id, Type: GroupTypeConsumer, State: g.State().String(), Members: g.NumMembers()})
	}
	for id, g := range s.shareGroups {
		out = append(out, GroupSummary{Group: id, Type: GroupTypeShare, State: g.State().String(), Members: g.NumMembers()})
	}
	return out
}

// rebalanceBegan notes that group id began rebalancing at now; fresh (a rebalance from
// Empty) restarts the clock, otherwise the earliest start since the group was last
// Stable is kept.
func (s *Shard) rebalanceBegan(id string, now time.Time, fresh bool) {
	if s.rebalanceStarts == nil {
		s.rebalanceStarts = map[string]time.Time{}
	}
	if _, ok := s.rebalanceStarts[id]; fresh || !ok {
		s.rebalanceStarts[id] = now
	}
}

// rebalanceCompleted tells Config.OnRebalance that group id, of groupType, is Stable at
// now, if it was rebalancing.
func (s *Shard) rebalanceCompleted(id, groupType string, now time.Time) {
	start, ok := s.rebalanceStarts[id]
	if !ok {
		return
	}
	delete(s.rebalanceStarts, id)
	if s.cfg.OnRebalance != nil {
		s.cfg.OnRebalance(Rebalance{GroupType: groupType, Completed: true, Took: now.Sub(start)})
	}
}

// consumerRebalanced notes, after events changed consumer group g at now, a bumped
// epoch (a rebalance step) and the group being Stable (the rebalance's end); an Empty
// group's rebalance ends without completing.
func (s *Shard) consumerRebalanced(g *ConsumerGroup, events []ConsumerEvent, now time.Time) {
	if bumpsEpoch(events) {
		s.rebalanceBegan(g.id, now, false)
		if s.cfg.OnRebalance != nil {
			s.cfg.OnRebalance(Rebalance{GroupType: GroupTypeConsumer})
		}
	}
	switch g.State() {
	case ConsumerGroupStable:
		s.rebalanceCompleted(g.id, GroupTypeConsumer, now)
	case ConsumerGroupEmpty:
		delete(s.rebalanceStarts, g.id)
	}
}
