package group

// The bridge between a consumer group's typed events (consumer_events.go) and Kafka
// 4.2's KIP-848 records (records_consumer.go): which records each event is, in the
// order GroupMetadataManager writes them (through GroupCoordinatorRecordHelpers), and
// back, which change each record read at load time makes.

import (
	"fmt"
	"slices"
	"unicode/utf16"
)

// errRecordTooLong is a string a record cannot hold (Kafka's writers refuse strings of
// more than 32767 bytes).
type errRecordTooLong struct{ field string }

func (e errRecordTooLong) Error() string {
	return fmt.Sprintf("group: %s is longer than %d bytes and cannot be stored", e.field, maxRecordString)
}

// consumerEventRecords is the records of events of group groupID, in order:
//
//   - ConsumerMemberUpdated: the member metadata record (type 5), subscribed topic
//     names sorted as Java sorts strings (newConsumerGroupMemberSubscriptionRecord);
//   - ConsumerGroupEpochBumped: the group metadata record (type 3);
//   - ConsumerTargetAssignmentChanged: one target member record (type 7) per changed
//     member, then the target metadata record (type 6);
//   - ConsumerMemberAssignmentChanged: the current assignment record (type 8);
//   - ConsumerMemberRemoved: the tombstones of the current assignment, target member
//     and member metadata records, in that order (consumerGroupFenceMember);
//   - ConsumerRegularExpressionResolved: the regular expression record (type 16),
//     topics sorted as Java sorts strings; ConsumerRegularExpressionRemoved: its
//     tombstone.
//
// A string longer than a record holds is an error before anything is encoded.
func consumerEventRecords(groupID string, events []ConsumerEvent) ([]Record, error) {
	if !fitsRecord(groupID) {
		return nil, errRecordTooLong{"group id"}
	}
	var out []Record
	add := func(t int16, member string, v ConsumerGroupValue) {
		out = append(out, ConsumerGroupRecord{Key: ConsumerGroupKey{Type: t, GroupID: groupID, MemberID: member}, Value: v}.Encode())
	}
	for _, ev := range events {
		if err := checkEventStrings(ev); err != nil {
			return nil, err
		}
	}
	for _, ev := range events {
		switch e := ev.(type) {
		case ConsumerMemberUpdated:
			add(RecordTypeConsumerGroupMemberMetadata, e.MemberID, consumerMemberValue(e))
		case ConsumerGroupEpochBumped:
			add(RecordTypeConsumerGroupMetadata, "", &ConsumerGroupMetadataValue{Epoch: e.Epoch, MetadataHash: e.MetadataHash})
		case ConsumerTargetAssignmentChanged:
			for _, m := range e.Members {
				add(RecordTypeConsumerGroupTargetAssignmentMember, m.MemberID,
					&ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: recordPartitions(m.Partitions)})
			}
			add(RecordTypeConsumerGroupTargetAssignmentMetadata, "", &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: e.Epoch})
		case ConsumerMemberAssignmentChanged:
			add(RecordTypeConsumerGroupCurrentMemberAssignment, e.MemberID, &ConsumerGroupCurrentMemberAssignmentValue{
				MemberEpoch:                 e.MemberEpoch,
				PreviousMemberEpoch:         e.PreviousMemberEpoch,
				State:                       int8(e.State),
				AssignedPartitions:          recordPartitions(e.Assigned),
				PartitionsPendingRevocation: recordPartitions(e.PendingRevocation),
			})
		case ConsumerMemberRemoved:
			add(RecordTypeConsumerGroupCurrentMemberAssignment, e.MemberID, nil)
			add(RecordTypeConsumerGroupTargetAssignmentMember, e.MemberID, nil)
			add(RecordTypeConsumerGroupMemberMetadata, e.MemberID, nil)
		case ConsumerRegularExpressionResolved:
			out = append(out, regexRecord(groupID, e.Regex, regexValue(e)))
		case ConsumerRegularExpressionRemoved:
			out = append(out, regexRecord(groupID, e.Regex, nil))
		default:
			return nil, fmt.Errorf("group: unknown consumer event %T", ev)
		}
	}
	return out, nil
}

// checkEventStrings refuses an event with a string a record cannot hold.
func checkEventStrings(ev ConsumerEvent) error {
	check := func(field, s string) error {
		if !fitsRecord(s) {
			return errRecordTooLong{field}
		}
		return nil
	}
	switch e := ev.(type) {
	case ConsumerMemberUpdated:
		for _, f := range [][2]string{{"member id", e.MemberID}, {"instance id", e.InstanceID}, {"rack id", e.RackID},
			{"client id", e.ClientID}, {"client host", e.ClientHost}, {"subscribed topic regex", e.SubscribedTopicRegex},
			{"server assignor", e.ServerAssignor}} {
			if err := check(f[0], f[1]); err != nil {
				return err
			}
		}
		for _, n := range e.SubscribedTopicNames {
			if err := check("subscribed topic name", n); err != nil {
				return err
			}
		}
	case ConsumerTargetAssignmentChanged:
		for _, m := range e.Members {
			if err := check("member id", m.MemberID); err != nil {
				return err
			}
		}
	case ConsumerMemberAssignmentChanged:
		return check("member id", e.MemberID)
	case ConsumerMemberRemoved:
		return check("member id", e.MemberID)
	case ConsumerRegularExpressionResolved:
		return check("regular expression", e.Regex)
	case ConsumerRegularExpressionRemoved:
		return check("regular expression", e.Regex)
	}
	return nil
}

// consumerGroupTombstones is the records deleting group g (Kafka's
// ConsumerGroup.createGroupTombstoneRecords): the current assignment tombstones of
// every member, the target member tombstones, the target metadata tombstone, the
// member metadata tombstones, the regular expression tombstones, the deprecated
// subscription metadata tombstone when the group still has such a record
// (legacyPartitionMetadata), and last the group metadata tombstone, whose replay
// removes the group.
func consumerGroupTombstones(g *ConsumerGroup, legacyPartitionMetadata bool) []Record {
	tomb := func(t int16, member string) Record {
		return ConsumerGroupRecord{Key: ConsumerGroupKey{Type: t, GroupID: g.id, MemberID: member}}.Encode()
	}
	members := g.MemberIDs()
	targets := make([]string, 0, len(g.target))
	for id := range g.target {
		targets = append(targets, id)
	}
	slices.Sort(targets)
	out := memberTombstones(members, targets, tomb, RecordTypeConsumerGroupCurrentMemberAssignment,
		RecordTypeConsumerGroupTargetAssignmentMember, RecordTypeConsumerGroupTargetAssignmentMetadata,
		RecordTypeConsumerGroupMemberMetadata)
	for _, regex := range g.RegularExpressions() {
		out = append(out, regexRecord(g.id, regex, nil))
	}
	if legacyPartitionMetadata {
		out = append(out, tomb(RecordTypeConsumerGroupPartitionMetadata, ""))
	}
	return append(out, tomb(RecordTypeConsumerGroupMetadata, ""))
}

// memberTombstones is the tombstones of a KIP-848 or KIP-932 group's members in the
// order of Kafka's createGroupTombstoneRecords: every member's current assignment, every
// target member, the target metadata, every member's metadata (the record types in
// that order).
func memberTombstones(members, targets []string, tomb func(recordType int16, member string) Record, current, target, targetMeta, meta int16) []Record {
	out := make([]Record, 0, 2*len(members)+len(targets)+1)
	for _, id := range members {
		out = append(out, tomb(current, id))
	}
	for _, id := range targets {
		out = append(out, tomb(target, id))
	}
	out = append(out, tomb(targetMeta, ""))
	for _, id := range members {
		out = append(out, tomb(meta, id))
	}
	return out
}

// consumerGroupFullRecords is the records stating the whole of group g: every member's
// metadata, every regular expression's resolution, the group epoch, every target
// member and the target epoch, every member's current assignment. Replayed over any
// earlier records of the group, after the tombstones of every member removed since
// (gone, or back under the same id: a member without a target is named by none of these
// records), they give g.
func consumerGroupFullRecords(g *ConsumerGroup) ([]Record, error) {
	var evs []ConsumerEvent
	members := g.sortedMembers()
	for _, m := range members {
		evs = append(evs, m.meta)
	}
	evs = append(evs, g.regexResolutions()...)
	evs = append(evs, ConsumerGroupEpochBumped{Epoch: g.groupEpoch, MetadataHash: g.metadataHash})
	target := ConsumerTargetAssignmentChanged{Epoch: g.targetEpoch}
	ids := make([]string, 0, len(g.target))
	for id := range g.target {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		target.Members = append(target.Members, ConsumerTargetMember{MemberID: id, Partitions: g.target[id]})
	}
	evs = append(evs, target)
	for _, m := range members {
		evs = append(evs, ConsumerMemberAssignmentChanged{MemberID: m.meta.MemberID, MemberEpoch: m.epoch,
			PreviousMemberEpoch: m.previousEpoch, State: m.state, Assigned: m.assigned, PendingRevocation: m.pending})
	}
	return consumerEventRecords(g.id, evs)
}

func consumerMemberValue(e ConsumerMemberUpdated) *ConsumerGroupMemberMetadataValue {
	names := slices.Clone(e.SubscribedTopicNames)
	slices.SortFunc(names, javaCompareStrings)
	return &ConsumerGroupMemberMetadataValue{
		InstanceID:            optionalString(e.InstanceID),
		RackID:                optionalString(e.RackID),
		ClientID:              e.ClientID,
		ClientHost:            e.ClientHost,
		SubscribedTopicNames:  names,
		SubscribedTopicRegex:  optionalString(e.SubscribedTopicRegex),
		RebalanceTimeoutMs:    e.RebalanceTimeoutMs,
		ServerAssignor:        optionalString(e.ServerAssignor),
		ClassicMemberMetadata: e.Classic,
	}
}

// optionalString is "" as null, as Kafka's records hold an unset optional string.
func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// javaCompareStrings orders strings as Java's String.compareTo: by UTF-16 code unit,
// which differs from Go's byte order for characters past U+FFFF against U+E000-U+FFFF.
func javaCompareStrings(a, b string) int {
	x, y := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(x, y)
}

// recordPartitions is a as a record holds it, topics in id order.
func recordPartitions(a AssignedPartitions) []ConsumerGroupTopicPartitions {
	out := make([]ConsumerGroupTopicPartitions, 0, len(a))
	for _, t := range sortedTopics(a) {
		out = append(out, ConsumerGroupTopicPartitions{TopicID: t, Partitions: slices.Clone(a[t])})
	}
	return out
}

// assignedPartitions is the inverse of recordPartitions.
func assignedPartitions(tps []ConsumerGroupTopicPartitions) AssignedPartitions {
	out := make(AssignedPartitions, len(tps))
	for _, tp := range tps {
		out[tp.TopicID] = append(out[tp.TopicID], tp.Partitions...)
	}
	return normalizeAssignment(out)
}

// replayConsumerRecord applies one KIP-848 record to g (Kafka's
// GroupMetadataManager.replay for ConsumerGroup*Key/Value). The group metadata
// tombstone is the caller's: it removes the group. The deprecated subscription
// metadata (type 4) changes nothing here.
func replayConsumerRecord(g *ConsumerGroup, rec ConsumerGroupRecord) {
	id := rec.Key.MemberID
	switch v := rec.Value.(type) {
	case *ConsumerGroupMetadataValue:
		g.apply(ConsumerGroupEpochBumped{Epoch: v.Epoch, MetadataHash: v.MetadataHash})
	case *ConsumerGroupMemberMetadataValue:
		names := slices.Clone(v.SubscribedTopicNames)
		slices.Sort(names)
		g.apply(ConsumerMemberUpdated{
			MemberID:             id,
			InstanceID:           optionalValue(v.InstanceID),
			RackID:               optionalValue(v.RackID),
			ClientID:             v.ClientID,
			ClientHost:           v.ClientHost,
			SubscribedTopicNames: slices.Compact(names),
			SubscribedTopicRegex: optionalValue(v.SubscribedTopicRegex),
			ServerAssignor:       optionalValue(v.ServerAssignor),
			RebalanceTimeoutMs:   v.RebalanceTimeoutMs,
			Classic:              v.ClassicMemberMetadata,
		})
	case *ConsumerGroupTargetAssignmentMetadataValue:
		g.apply(ConsumerTargetAssignmentChanged{Epoch: v.AssignmentEpoch})
	case *ConsumerGroupTargetAssignmentMemberValue:
		g.apply(ConsumerTargetAssignmentChanged{Epoch: g.targetEpoch,
			Members: []ConsumerTargetMember{{MemberID: id, Partitions: assignedPartitions(v.TopicPartitions)}}})
	case *ConsumerGroupCurrentMemberAssignmentValue:
		g.apply(ConsumerMemberAssignmentChanged{
			MemberID: id, MemberEpoch: v.MemberEpoch, PreviousMemberEpoch: v.PreviousMemberEpoch,
			State: ConsumerMemberState(v.State), Assigned: assignedPartitions(v.AssignedPartitions),
			PendingRevocation: assignedPartitions(v.PartitionsPendingRevocation),
		})
	case *ConsumerGroupRegularExpressionValue:
		g.apply(ConsumerRegularExpressionResolved{Regex: rec.Key.RegularExpression, Topics: v.Topics,
			Version: v.Version, Timestamp: v.Timestamp})
	case nil: // a tombstone
		switch rec.Key.Type {
		case RecordTypeConsumerGroupCurrentMemberAssignment:
			// Kafka leaves the member at epoch -1 with nothing assigned until its
			// metadata tombstone removes it.
			if _, ok := g.members[id]; ok {
				g.apply(ConsumerMemberAssignmentChanged{MemberID: id, MemberEpoch: LeaveMemberEpoch,
					PreviousMemberEpoch: LeaveMemberEpoch, Assigned: AssignedPartitions{}, PendingRevocation: AssignedPartitions{}})
			}
		case RecordTypeConsumerGroupTargetAssignmentMember:
			delete(g.target, id)
		case RecordTypeConsumerGroupMemberMetadata:
			if _, ok := g.members[id]; ok {
				g.apply(ConsumerMemberRemoved{MemberID: id})
			}
		case RecordTypeConsumerGroupTargetAssignmentMetadata:
			g.targetEpoch = 0
		case RecordTypeConsumerGroupRegularExpression:
			g.apply(ConsumerRegularExpressionRemoved{Regex: rec.Key.RegularExpression})
		}
	}
}

// optionalValue is *s, "" for nil.
func optionalValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
