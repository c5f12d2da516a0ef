package group

// The bridge between a share group's events (share_group.go) and Kafka 4.2's share
// group records (records_share.go), in the order GroupMetadataManager writes them
// through GroupCoordinatorRecordHelpers, and back at load time.

import (
	"maps"
	"slices"
)

// shareEventRecords is the records of events of group groupID, in order:
//
//   - ShareMemberUpdated: the member metadata record (type 10), subscribed topic names
//     sorted as Java sorts strings;
//   - ShareGroupEpochBumped: the group metadata record (type 11);
//   - ShareTargetAssignmentChanged: one target member record (13) per changed member,
//     then the target metadata record (12);
//   - ShareMemberAssignmentChanged: the current assignment record (14), state stable;
//   - ShareMemberRemoved: the tombstones of the current assignment, target member and
//     member metadata records (shareGroupFenceMember);
//   - ShareStatePartitionsChanged: the state partition metadata record (15).
//
// A string longer than a record holds is an error before anything is encoded.
func shareEventRecords(groupID string, events []ShareEvent) ([]Record, error) {
	strs := []string{groupID}
	for _, ev := range events {
		switch e := ev.(type) {
		case ShareMemberUpdated:
			strs = append(append(strs, e.MemberID, e.RackID, e.ClientID, e.ClientHost), e.SubscribedTopicNames...)
		case ShareMemberRemoved:
			strs = append(strs, e.MemberID)
		case ShareTargetAssignmentChanged:
			for _, m := range e.Members {
				strs = append(strs, m.MemberID)
			}
		case ShareStatePartitionsChanged:
			for _, t := range append(slices.Clone(e.Initializing), e.Initialized...) {
				strs = append(strs, t.TopicName)
			}
			for _, t := range e.Deleting {
				strs = append(strs, t.TopicName)
			}
		}
	}
	if slices.ContainsFunc(strs, func(s string) bool { return !fitsRecord(s) }) {
		return nil, errRecordTooLong{"share group string"}
	}
	b := &shareRecords{groupID: groupID}
	for _, ev := range events {
		ev.appendRecords(b.add)
	}
	return b.out, nil
}

// shareRecords accumulates the encoded records of one share group.
type shareRecords struct {
	groupID string
	out     []Record
}

func (b *shareRecords) add(t int16, member string, v ShareGroupValue) {
	b.out = append(b.out, ShareGroupRecord{Key: ShareGroupKey{Type: t, GroupID: b.groupID, MemberID: member}, Value: v}.Encode())
}

// shareRecordAdder adds a record of a share group: its type, member id and value.
type shareRecordAdder func(recordType int16, memberID string, v ShareGroupValue)

func (e ShareMemberUpdated) appendRecords(add shareRecordAdder) {
	names := slices.Clone(e.SubscribedTopicNames)
	slices.SortFunc(names, javaCompareStrings)
	v := &ShareGroupMemberMetadataValue{RackID: optionalString(e.RackID), ClientID: e.ClientID, ClientHost: e.ClientHost,
		SubscribedTopicNames: names}
	add(RecordTypeShareGroupMemberMetadata, e.MemberID, v)
}

func (e ShareGroupEpochBumped) appendRecords(add shareRecordAdder) {
	add(RecordTypeShareGroupMetadata, "", &ShareGroupMetadataValue{Epoch: e.Epoch, MetadataHash: e.MetadataHash})
}

func (e ShareTargetAssignmentChanged) appendRecords(add shareRecordAdder) {
	for _, m := range e.Members {
		add(RecordTypeShareGroupTargetAssignmentMember, m.MemberID,
			&ShareGroupTargetAssignmentMemberValue{TopicPartitions: recordPartitions(m.Partitions)})
	}
	add(RecordTypeShareGroupTargetAssignmentMetadata, "", &ShareGroupTargetAssignmentMetadataValue{AssignmentEpoch: e.Epoch})
}

func (e ShareMemberAssignmentChanged) appendRecords(add shareRecordAdder) {
	v := &ShareGroupCurrentMemberAssignmentValue{MemberEpoch: e.MemberEpoch, PreviousMemberEpoch: e.PreviousMemberEpoch,
		State: MemberStateStable, AssignedPartitions: recordPartitions(e.Assigned)}
	add(RecordTypeShareGroupCurrentMemberAssignment, e.MemberID, v)
}

// appendRecords of a removal: the tombstones, in shareGroupFenceMember's order.
func (e ShareMemberRemoved) appendRecords(add shareRecordAdder) {
	for _, t := range []int16{RecordTypeShareGroupCurrentMemberAssignment, RecordTypeShareGroupTargetAssignmentMember,
		RecordTypeShareGroupMemberMetadata} {
		add(t, e.MemberID, nil)
	}
}

func (e ShareStatePartitionsChanged) appendRecords(add shareRecordAdder) {
	add(RecordTypeShareGroupStatePartitionMetadata, "", &ShareGroupStatePartitionMetadataValue{
		InitializingTopics: sharePartitionsInfo(e.Initializing), InitializedTopics: sharePartitionsInfo(e.Initialized),
		DeletingTopics: slices.Clone(e.Deleting)})
}

func sharePartitionsInfo(ts []ShareTopicPartitions) []ShareTopicPartitionsInfo {
	out := make([]ShareTopicPartitionsInfo, len(ts))
	for i, t := range ts {
		out[i] = ShareTopicPartitionsInfo(t)
	}
	return out
}

func shareTopicPartitions(ts []ShareTopicPartitionsInfo) []ShareTopicPartitions {
	out := make([]ShareTopicPartitions, len(ts))
	for i, t := range ts {
		out[i] = ShareTopicPartitions(t)
	}
	return out
}

// shareGroupFullRecords is the records stating the whole of group g: every member's
// metadata, the group epoch, every target member and the target epoch, every member's
// current assignment, the share state partitions. Replayed over any earlier records of
// the group, after the tombstones of every member removed since (gone, or back under the
// same id: shareResyncRecords), they give g.
func shareGroupFullRecords(g *ShareGroup) ([]Record, error) {
	var evs []ShareEvent
	ids := g.MemberIDs()
	for _, id := range ids {
		evs = append(evs, g.members[id].meta)
	}
	evs = append(evs, ShareGroupEpochBumped{Epoch: g.groupEpoch, MetadataHash: g.metadataHash})
	target := ShareTargetAssignmentChanged{Epoch: g.targetEpoch}
	for _, id := range slices.Sorted(maps.Keys(g.target)) {
		target.Members = append(target.Members, ConsumerTargetMember{MemberID: id, Partitions: g.target[id]})
	}
	evs = append(evs, target)
	for _, id := range ids {
		m := g.members[id]
		evs = append(evs, ShareMemberAssignmentChanged{MemberID: id, MemberEpoch: m.epoch, PreviousMemberEpoch: m.previousEpoch, Assigned: m.assigned})
	}
	init, initializing, deleting := g.SharePartitions()
	evs = append(evs, ShareStatePartitionsChanged{Initializing: initializing, Initialized: init, Deleting: deleting})
	return shareEventRecords(g.id, evs)
}

// shareResyncRecords restates group g after failed writes: the tombstones of the
// members among removed, then shareGroupFullRecords. A member that joined again under
// its id since is tombstoned too: the full records name a target only for members
// that have one, so the removed member's target record would otherwise outlive it.
func shareResyncRecords(g *ShareGroup, removed []string) ([]Record, error) {
	gone := slices.Compact(slices.Sorted(slices.Values(removed)))
	evs := make([]ShareEvent, 0, len(gone))
	for _, id := range gone {
		evs = append(evs, ShareMemberRemoved{MemberID: id})
	}
	records, err := shareEventRecords(g.id, evs)
	if err != nil {
		return nil, err
	}
	full, err := shareGroupFullRecords(g)
	return append(records, full...), err
}

// shareGroupTombstones is the records deleting group g (Kafka's
// ShareGroup.createGroupTombstoneRecords): the current assignment tombstones of every
// member, the target member tombstones, the target metadata tombstone, the member
// metadata tombstones, the state partition metadata tombstone, and last the group
// metadata tombstone, whose replay removes the group. extra are members failed writes
// removed, whose records may still be in the log.
func shareGroupTombstones(g *ShareGroup, extra []string) []Record {
	tomb := func(t int16, member string) Record {
		return ShareGroupRecord{Key: ShareGroupKey{Type: t, GroupID: g.id, MemberID: member}}.Encode()
	}
	members := slices.Sorted(slices.Values(append(g.MemberIDs(), extra...)))
	members = slices.Compact(members)
	targets := slices.Sorted(slices.Values(append(slices.Collect(maps.Keys(g.target)), extra...)))
	targets = slices.Compact(targets)
	out := memberTombstones(members, targets, tomb, RecordTypeShareGroupCurrentMemberAssignment,
		RecordTypeShareGroupTargetAssignmentMember, RecordTypeShareGroupTargetAssignmentMetadata,
		RecordTypeShareGroupMemberMetadata)
	out = append(out, tomb(RecordTypeShareGroupStatePartitionMetadata, ""))
	return append(out, tomb(RecordTypeShareGroupMetadata, ""))
}

// replayShareRecord applies one share group record to g (Kafka's
// GroupMetadataManager.replay for ShareGroup*Key/Value). The group metadata tombstone
// is the caller's: it removes the group.
func replayShareRecord(g *ShareGroup, rec ShareGroupRecord) {
	if rec.Value != nil {
		g.apply(shareValueEvent(rec.Key.MemberID, rec.Value, g.targetEpoch))
		return
	}
	id := rec.Key.MemberID
	switch rec.Key.Type {
	case RecordTypeShareGroupCurrentMemberAssignment:
		// Kafka leaves the member at epoch -1 with nothing assigned until its metadata
		// tombstone removes it.
		if _, ok := g.members[id]; ok {
			g.apply(ShareMemberAssignmentChanged{MemberID: id, MemberEpoch: LeaveMemberEpoch, PreviousMemberEpoch: LeaveMemberEpoch})
		}
	case RecordTypeShareGroupTargetAssignmentMember:
		delete(g.target, id)
	case RecordTypeShareGroupMemberMetadata:
		g.apply(ShareMemberRemoved{MemberID: id})
	case RecordTypeShareGroupTargetAssignmentMetadata:
		g.targetEpoch = 0
	case RecordTypeShareGroupStatePartitionMetadata:
		g.apply(ShareStatePartitionsChanged{})
	}
}

// shareValueEvent is the change a share group record's value makes to member id's
// group, whose target epoch is targetEpoch (a target member record keeps it).
func shareValueEvent(id string, value ShareGroupValue, targetEpoch int32) ShareEvent {
	switch v := value.(type) {
	case *ShareGroupMetadataValue:
		return ShareGroupEpochBumped{Epoch: v.Epoch, MetadataHash: v.MetadataHash}
	case *ShareGroupMemberMetadataValue:
		names := slices.Compact(slices.Sorted(slices.Values(v.SubscribedTopicNames)))
		return ShareMemberUpdated{MemberID: id, RackID: optionalValue(v.RackID), ClientID: v.ClientID, ClientHost: v.ClientHost,
			SubscribedTopicNames: names}
	case *ShareGroupTargetAssignmentMetadataValue:
		return ShareTargetAssignmentChanged{Epoch: v.AssignmentEpoch}
	case *ShareGroupTargetAssignmentMemberValue:
		member := ConsumerTargetMember{MemberID: id, Partitions: assignedPartitions(v.TopicPartitions)}
		return ShareTargetAssignmentChanged{Epoch: targetEpoch, Members: []ConsumerTargetMember{member}}
	case *ShareGroupCurrentMemberAssignmentValue:
		return ShareMemberAssignmentChanged{MemberID: id, MemberEpoch: v.MemberEpoch, PreviousMemberEpoch: v.PreviousMemberEpoch,
			Assigned: assignedPartitions(v.AssignedPartitions)}
	case *ShareGroupStatePartitionMetadataValue:
		return ShareStatePartitionsChanged{Initializing: shareTopicPartitions(v.InitializingTopics),
			Initialized: shareTopicPartitions(v.InitializedTopics), Deleting: v.DeletingTopics}
	}
	return nil
}
