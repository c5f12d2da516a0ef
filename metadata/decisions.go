package metadata

import "slices"

// Acceptable reports whether broker id may lead or join an ISR: registered, unfenced and
// not excluded (a broker being fenced or shutting down).
func (im *Image) Acceptable(id int32, excluded ...int32) bool {
	b, ok := im.Brokers[id]
	return ok && !b.Fenced && !slices.Contains(excluded, id)
}

// FenceBrokerRecords fences broker id and takes it out of every partition, as one atomic
// batch: a FenceBrokerRecord, then for each partition it is in the ISR of, a
// PartitionChangeRecord with the ISR without it (the last member is kept: the ISR never
// becomes empty) and, where it led, a new leader elected from the remaining ISR in
// assignment order, or -1. unclean(topic) allows an unclean election for that topic.
func FenceBrokerRecords(im *Image, id int32, unclean func(topic string) bool) []Record {
	b, ok := im.Brokers[id]
	if !ok {
		return nil
	}
	records := []Record{FenceBrokerRecord{BrokerID: id, BrokerEpoch: b.Epoch}}
	return append(records, RemoveFromPartitionsRecords(im, id, unclean)...)
}

// RemoveFromPartitionsRecords takes broker id out of every ISR and leadership (used by
// fencing and by controlled shutdown).
func RemoveFromPartitionsRecords(im *Image, id int32, unclean func(topic string) bool) []Record {
	var records []Record
	acceptable := func(r int32) bool { return im.Acceptable(r, id) }
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		for _, p := range t.Partitions {
			if change, ok := removeReplicaChange(t, p, id, acceptable, unclean); ok {
				records = append(records, change)
			}
		}
	}
	return records
}

// UnfenceBrokerRecords unfences broker id and elects a leader for every leaderless
// partition whose ISR holds an acceptable replica (id now among them); where
// unclean(topic) allows it and no ISR member is acceptable, the first acceptable replica
// in assignment order leads with an ISR of itself (an unclean election).
func UnfenceBrokerRecords(im *Image, id int32, unclean func(topic string) bool) []Record {
	b, ok := im.Brokers[id]
	if !ok {
		return nil
	}
	records := []Record{UnfenceBrokerRecord{BrokerID: id, BrokerEpoch: b.Epoch}}
	return append(records, ElectLeaderlessWith(im, id, unclean)...)
}

// ElectLeaderlessWith elects leaders for the leaderless partitions as the entry that
// unfences broker id does (UnfenceBrokerRecords, or a registration that resumes it
// unfenced): id counts as acceptable with the brokers already so.
func ElectLeaderlessWith(im *Image, id int32, unclean func(topic string) bool) []Record {
	return electLeaderless(im, func(r int32) bool { return r == id || im.Acceptable(r) }, unclean)
}

// ElectLeaderlessRecords elects leaders for partitions that have none, from their ISR
// or, where unclean(topic) allows it, from any acceptable replica (an unclean election).
func ElectLeaderlessRecords(im *Image, acceptable func(int32) bool, unclean func(topic string) bool) []Record {
	return electLeaderless(im, acceptable, unclean)
}

// electLeaderless elects leaders for partitions that have none.
func electLeaderless(im *Image, acceptable func(int32) bool, unclean func(topic string) bool) []Record {
	var records []Record
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		for _, p := range t.Partitions {
			if p.Leader >= 0 {
				continue
			}
			leader, wasUnclean := ElectLeader(p, p.ISR, acceptable, unclean != nil && unclean(name))
			if leader < 0 {
				continue
			}
			change := PartitionChangeRecord{TopicID: t.ID, PartitionID: p.ID, Leader: &leader}
			if wasUnclean {
				change.ISR, change.Unclean = []int32{leader}, true
			}
			records = append(records, change)
		}
	}
	return records
}

// LeaderCount returns how many partitions broker id leads.
func (im *Image) LeaderCount(id int32) int {
	n := 0
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if p.Leader == id {
				n++
			}
		}
	}
	return n
}

// removeReplicaChange is the PartitionChangeRecord that takes broker id out of p's ISR
// and leadership (fencing, controlled shutdown, an offline replica): the ISR without id,
// its last member kept (the partition goes offline rather than lose its last in-sync
// replica), and where id led a leader elected from the rest in assignment order among
// acceptable brokers, or -1 (unclean(topic): from outside the ISR too, asked only
// then). ok is false when id is
// neither in the ISR nor the leader, or nothing changes.
func removeReplicaChange(t *Topic, p *Partition, id int32, acceptable func(int32) bool, unclean func(topic string) bool) (change PartitionChangeRecord, ok bool) {
	if !slices.Contains(p.ISR, id) && p.Leader != id {
		return change, false
	}
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
	if len(isr) == 0 {
		isr = slices.Clone(p.ISR) // the last member stays
	}
	change = PartitionChangeRecord{TopicID: t.ID, PartitionID: p.ID}
	if !slices.Equal(isr, p.ISR) {
		change.ISR = isr
	}
	if p.Leader == id {
		leader, wasUnclean := ElectLeader(p, isr, acceptable, unclean != nil && unclean(t.Name))
		if wasUnclean {
			change.ISR = []int32{leader}
			change.Unclean = true
		}
		change.Leader = &leader
	}
	return change, change.ISR != nil || change.Leader != nil
}

// MaxRecordsPerShutdownEntry bounds an entry of a controlled shutdown (Kafka's
// controller writes a non-atomic result in batches of at most 10,000 records).
const MaxRecordsPerShutdownEntry = 10_000

// ControlledShutdownRecords plans the next entry of broker id's controlled shutdown: the
// changes that move every leadership it holds to another ISR member (taking it out of
// those ISRs) come first, all in this entry so that it can stop once the entry is
// committed; then changes that take it out of the ISRs of partitions it follows, as many
// as fit in max records in all. more reports that ISR changes are left for a later entry.
func ControlledShutdownRecords(im *Image, id int32, max int) (records []Record, more bool) {
	acceptable := func(r int32) bool { return im.Acceptable(r, id) }
	names := im.TopicNames()
	for _, name := range names {
		t := im.Topics[name]
		for _, p := range t.Partitions {
			if p.Leader != id {
				continue
			}
			if change, ok := removeReplicaChange(t, p, id, acceptable, nil); ok {
				records = append(records, change)
			}
		}
	}
	for _, name := range names {
		t := im.Topics[name]
		for _, p := range t.Partitions {
			if p.Leader == id || !slices.Contains(p.ISR, id) || len(p.ISR) == 1 {
				continue
			}
			if len(records) >= max {
				return records, true
			}
			if change, ok := removeReplicaChange(t, p, id, acceptable, nil); ok {
				records = append(records, change)
			}
		}
	}
	return records, false
}
