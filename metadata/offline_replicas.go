package metadata

// ReplicaRef names one partition of a topic by id.
type ReplicaRef struct {
	TopicID   Uuid
	Partition int32
}

// OfflineReplicaRecords takes broker id's replicas of the given partitions out of their
// ISR and leadership: the broker reported that it cannot open or write them (Kafka's
// offline log directory, per replica). Each partition where id is in the ISR or leads
// gets one PartitionChangeRecord: the ISR without id (its last member is kept, as when a
// broker is fenced: the partition goes offline rather than lose its last in-sync
// replica) and, where id led, a leader elected from the remaining ISR in assignment
// order (id excluded), or -1; unclean(topic) allows an unclean election. Unknown
// partitions and partitions id is not in are skipped: the report is idempotent.
func OfflineReplicaRecords(im *Image, id int32, replicas []ReplicaRef, unclean func(topic string) bool) []Record {
	var records []Record
	acceptable := func(r int32) bool { return im.Acceptable(r, id) }
	seen := map[ReplicaRef]bool{}
	for _, ref := range replicas {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		t := im.TopicByID(ref.TopicID)
		if t == nil || ref.Partition < 0 || int(ref.Partition) >= len(t.Partitions) {
			continue
		}
		p := t.Partitions[ref.Partition]
		if change, ok := removeReplicaChange(t, p, id, acceptable, unclean); ok {
			records = append(records, change)
		}
	}
	return records
}
