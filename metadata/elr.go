package metadata

// Eligible leader replicas (KIP-966), as Kafka 4.2's controller keeps them, behind the
// eligible.leader.replicas.version feature:
//
//   - a replica that leaves the ISR while the resulting ISR is below
//     min.insync.replicas joins the ELR: it held every acknowledged record when it left
//     (acks=all needs min.insync.replicas members), so it may lead without loss;
//   - with the ELR on, the last ISR member leaves the ISR too when it is fenced (the ISR
//     may be empty; it joins the ELR instead of being kept as a leaderless ISR);
//   - a broker that registers after an unclean shutdown (its PreviousBrokerEpoch is not
//     its registered epoch) leaves every ELR: its log may have lost unflushed records;
//     fenced members stay (being offline is why the ELR exists);
//   - once the ISR reaches min.insync.replicas the ELR is cleared;
//   - LastKnownELR holds the partition's last known leader (elr_last_known.go): set
//     when the ISR empties, cleared once the partition has a leader again;
//   - an election takes the current leader if it still may lead, else the first replica
//     in assignment order that is in the ISR, or, with the ISR empty, in the ELR, and
//     acceptable (one from the ELR then leads with an ISR of itself and leaves the ELR);
//     else, with the ISR and ELR both empty, the last known leader once it is acceptable
//     again (Kafka's balanced recovery, an unclean election); only then, where
//     unclean.leader.election.enable allows it, the first acceptable replica. An unclean
//     election (the last two) leads with an ISR of the new leader alone and clears the
//     ELR.
//
// The controller plans its changes with the rules of election.go and decisions.go and
// then passes each entry through WithELR, which rewrites the partition changes by
// these rules; with the feature off it returns the entry untouched.

import (
	"fmt"
	"slices"
)

// ELREnabled reports whether eligible leader replicas are on (the finalized
// eligible.leader.replicas.version is at least 1).
func ELREnabled(im *Image) bool {
	return im.FeatureLevel(FeatureEligibleLeaderReplicasVersion) >= 1
}

// ELRInputs are what WithELR needs beyond the image.
type ELRInputs struct {
	// MinISR returns a topic's min.insync.replicas.
	MinISR func(topic string) int
	// Unclean returns a topic's unclean.leader.election.enable (nil: never).
	Unclean func(topic string) bool
	// UncleanShutdown are brokers that registered in this entry after an unclean
	// shutdown: they leave every ELR.
	UncleanShutdown []int32
}

// WithELR returns records (one entry planned against im) with every
// PartitionChangeRecord rewritten by KIP-966's rules, and, when the entry unfences a
// broker (or registers one unfenced) or reports an unclean shutdown, the changes that
// elect an ELR member of a leaderless partition or take the broker out of the ELRs it
// is in. Pure.
func WithELR(im *Image, records []Record, in ELRInputs) []Record {
	s := elrState{im: im, fenced: map[int32]bool{}, parts: map[TopicPartitionKey]*Partition{}, in: in}
	out := make([]Record, 0, len(records))
	rescan := len(in.UncleanShutdown) > 0
	for _, r := range records {
		switch r := r.(type) {
		case PartitionChangeRecord:
			out = append(out, s.change(r))
			continue
		case FenceBrokerRecord:
			s.fenced[r.BrokerID] = true
		case UnfenceBrokerRecord:
			s.fenced[r.BrokerID] = false
			rescan = true
		case RegisterBrokerRecord:
			s.fenced[r.BrokerID] = r.Fenced
			rescan = rescan || !r.Fenced // registered unfenced: as an unfence
		}
		out = append(out, r)
	}
	if rescan {
		out = append(out, s.rescan()...)
	}
	return out
}

// TopicPartitionKey names a partition by topic id.
type TopicPartitionKey struct {
	TopicID   Uuid
	Partition int32
}

// elrState follows one entry: broker fences and partitions as the entry's records so
// far leave them.
type elrState struct {
	im     *Image
	fenced map[int32]bool
	parts  map[TopicPartitionKey]*Partition
	in     ELRInputs
}

func (s *elrState) acceptable(id int32) bool {
	if slices.Contains(s.in.UncleanShutdown, id) {
		return false // Kafka: the broker with an unclean shutdown is no acceptable leader
	}
	if f, ok := s.fenced[id]; ok {
		_, registered := s.im.Brokers[id]
		return registered && !f
	}
	return s.im.Acceptable(id)
}

func (s *elrState) partition(t *Topic, id int32) *Partition {
	if p, ok := s.parts[TopicPartitionKey{t.ID, id}]; ok {
		return p
	}
	return t.Partitions[id]
}

// change rewrites one partition change by the ELR rules. A planned LastKnownELR is
// not taken: it follows the leader (LastKnownLeader).
func (s *elrState) change(pc PartitionChangeRecord) PartitionChangeRecord {
	t := s.im.TopicByID(pc.TopicID)
	if t == nil || pc.PartitionID < 0 || int(pc.PartitionID) >= len(t.Partitions) {
		return pc // the image refuses it
	}
	p := s.partition(t, pc.PartitionID)
	next := *p
	if pc.Replicas != nil {
		next.Replicas = pc.Replicas
	}
	if pc.ISR != nil {
		next.ISR = pc.ISR
	}
	if pc.EmptyISR {
		next.ISR = nil
	}
	if pc.ELR != nil {
		next.ELR = *pc.ELR
	}
	if pc.Unclean {
		// Planned without the ELR: decide again below, ELR first.
		next.ISR, next.Leader = p.ISR, -1
	} else if pc.Leader != nil {
		next.Leader = *pc.Leader
	}
	// A member that cannot lead does not stay in the ISR as its last member.
	next.ISR = slices.DeleteFunc(slices.Clone(next.ISR), func(r int32) bool { return !s.acceptable(r) })
	if !slices.Contains(next.ISR, next.Leader) {
		next.Leader = -1
	}
	// Replicas no longer assigned leave the ELR.
	next.ELR = slices.DeleteFunc(slices.Clone(next.ELR), func(r int32) bool { return !slices.Contains(next.Replicas, r) })
	next.ELR = TargetELR(p.ISR, next.ISR, next.ELR, s.in.MinISR(t.Name), s.in.UncleanShutdown)
	unclean := false
	if next.Leader == -1 || !s.acceptable(next.Leader) {
		// A planned unclean election was allowed by its planner (the topic's config, or
		// an ElectLeaders UNCLEAN request, which Kafka honours whatever the config).
		uncleanAllowed := pc.Unclean || (s.in.Unclean != nil && s.in.Unclean(t.Name))
		next.Leader, unclean = s.elect(p, &next, uncleanAllowed)
	}
	next.LastKnownELR = LastKnownLeader(p, next.ISR, next.Leader)
	out := PartitionChangeRecord{TopicID: pc.TopicID, PartitionID: pc.PartitionID, Replicas: pc.Replicas,
		Adding: pc.Adding, Removing: pc.Removing, ClearReassignment: pc.ClearReassignment, Unclean: unclean}
	if pc.Leader != nil || next.Leader != p.Leader {
		leader := next.Leader
		out.Leader = &leader
	}
	switch {
	case len(next.ISR) == 0 && len(p.ISR) > 0:
		out.EmptyISR = true
	case !slices.Equal(next.ISR, p.ISR):
		out.ISR = slices.Clone(next.ISR)
	}
	if !slices.Equal(next.ELR, p.ELR) {
		elr := slices.Clone(next.ELR)
		if elr == nil {
			elr = []int32{}
		}
		out.ELR = &elr
	}
	if !slices.Equal(next.LastKnownELR, p.LastKnownELR) {
		lke := slices.Clone(next.LastKnownELR)
		if lke == nil {
			lke = []int32{}
		}
		out.LastKnownELR = &lke
	}
	s.parts[TopicPartitionKey{t.ID, p.ID}] = &next
	return out
}

// elect chooses a leader for next (the partition p is becoming): the current leader if
// it may still lead, else the first replica in assignment order that may (an ISR
// member, or with the ISR empty an ELR member, acceptable; one from the ELR then leads
// with an ISR of itself and leaves the ELR), else the last known leader
// (elr_last_known.go), else where an unclean election is allowed (the topic's
// unclean.leader.election.enable, or a planned unclean election) the first acceptable
// replica, else -1. The last two are unclean: the leader's ISR is itself alone and the
// ELR is cleared (Kafka's PartitionChangeBuilder.electAnyLeader and
// maybeUpdateRecordElr).
func (s *elrState) elect(p, next *Partition, uncleanAllowed bool) (leader int32, unclean bool) {
	valid := func(r int32) bool {
		inISR := slices.Contains(next.ISR, r)
		return (inISR || (len(next.ISR) == 0 && slices.Contains(next.ELR, r))) && s.acceptable(r)
	}
	leader = -1
	if p.Leader >= 0 && valid(p.Leader) {
		leader = p.Leader
	} else if i := slices.IndexFunc(next.Replicas, valid); i >= 0 {
		leader = next.Replicas[i]
	}
	if leader >= 0 {
		if !slices.Contains(next.ISR, leader) {
			next.ISR = []int32{leader}
			next.ELR = slices.DeleteFunc(slices.Clone(next.ELR), func(r int32) bool { return r == leader })
		}
		return leader, false
	}
	if leader = electableLastKnownLeader(p, next, s.acceptable); leader < 0 && uncleanAllowed {
		if i := slices.IndexFunc(next.Replicas, s.acceptable); i >= 0 {
			leader = next.Replicas[i]
		}
	}
	if leader < 0 {
		return -1, false
	}
	next.ISR, next.ELR = []int32{leader}, nil
	return leader, true
}

// rescan adds the changes the entry's unfences and unclean shutdowns call for in
// partitions it did not change: a leaderless partition with an acceptable ELR member,
// or an electable last known leader, elects it; a partition whose ELR holds an
// unclean-shutdown broker drops it.
func (s *elrState) rescan() []Record {
	var out []Record
	for _, name := range s.im.TopicNames() {
		t := s.im.Topics[name]
		for _, p := range t.Partitions {
			if _, changed := s.parts[TopicPartitionKey{t.ID, p.ID}]; changed {
				continue
			}
			lost := slices.ContainsFunc(p.ELR, func(r int32) bool { return slices.Contains(s.in.UncleanShutdown, r) })
			electable := p.Leader == -1 &&
				(slices.ContainsFunc(p.ELR, s.acceptable) || electableLastKnownLeader(p, p, s.acceptable) >= 0)
			if !lost && !electable {
				continue
			}
			if pc := s.change(PartitionChangeRecord{TopicID: t.ID, PartitionID: p.ID}); !pc.noChange() {
				out = append(out, pc)
			}
		}
	}
	return out
}

// TargetELR returns a partition's ELR after its ISR goes from isr to targetISR
// (KIP-966, Kafka's PartitionChangeBuilder.maybePopulateTargetElr): empty once
// targetISR reaches minISR; otherwise elr plus the members isr lost, less targetISR
// and the brokers in uncleanShutdown.
func TargetELR(isr, targetISR, elr []int32, minISR int, uncleanShutdown []int32) []int32 {
	if len(targetISR) >= minISR {
		return nil
	}
	var next []int32
	for _, r := range slices.Concat(elr, isr) {
		if !slices.Contains(next, r) && !slices.Contains(targetISR, r) && !slices.Contains(uncleanShutdown, r) {
			next = append(next, r)
		}
	}
	return next
}

// applyELRChange applies a PartitionChangeRecord's KIP-966 fields to p.
func applyELRChange(p *Partition, r PartitionChangeRecord) {
	if r.EmptyISR {
		p.ISR = []int32{}
	}
	if r.ELR != nil {
		p.ELR = nilIfEmpty(slices.Clone(*r.ELR))
	}
	if r.LastKnownELR != nil {
		p.LastKnownELR = nilIfEmpty(slices.Clone(*r.LastKnownELR))
	}
}

func nilIfEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return s
}

// checkELR checks that p's ELR is a set of its replicas outside its ISR.
func checkELR(p *Partition) error {
	for i, r := range p.ELR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR, r) || slices.Contains(p.ELR[:i], r) {
			return fmt.Errorf("%w: elr %v with replicas %v and isr %v", ErrInvalidReplicaAssignment, p.ELR, p.Replicas, p.ISR)
		}
	}
	return nil
}
