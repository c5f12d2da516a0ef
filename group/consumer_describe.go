package group

// ConsumerGroupDescribe (key 69, v0-1) for the groups of one shard, as Kafka 4.2's
// GroupMetadataManager.consumerGroupDescribe and ConsumerGroup.asDescribedGroup: the
// group's epochs, state and preferred assignor, and each member's metadata, current
// assignment and target assignment. The records hold topic ids; the names come from
// the metadata image (TopicNamer), and a topic that no longer exists is left out, as
// Kafka leaves out an id its TopicsImage does not know.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicNamer names a topic by its id from the metadata image; ok is false when no
// topic has the id (any more). It is called on the shard's goroutine and must not
// block.
type TopicNamer func(id [16]byte) (name string, ok bool)

// ConsumerMemberTypeConsumer is ConsumerGroupDescribe v1's MemberType of a member of
// the consumer protocol (KIP-1099: 0 is a classic member of a consumer group, -1
// unknown).
const ConsumerMemberTypeConsumer int8 = 1

// ConsumerMemberTypeClassic is the MemberType of a classic member of a consumer group
// (consumer_classic.go).
const ConsumerMemberTypeClassic int8 = 0

// ConsumerGroupDescribe describes the consumer group groupID. A group id without a
// consumer group answers GROUP_ID_NOT_FOUND with Kafka's message: "Group g not found."
// when the shard has no group of the id, "Group g is not a consumer group." for a
// classic group (one holding only committed offsets included, as Kafka's simple
// group is a classic group). The caller answers an empty id (INVALID_GROUP_ID) and
// fills AuthorizedOperations.
func (s *Shard) ConsumerGroupDescribe(groupID string, names TopicNamer) kmsg.ConsumerGroupDescribeResponseGroup {
	if g := s.consumerGroups[groupID]; g != nil {
		return g.Describe(names)
	}
	out := kmsg.NewConsumerGroupDescribeResponseGroup()
	out.Group = groupID
	out.ErrorCode = kerr.GroupIDNotFound.Code
	msg := "Group " + groupID + " not found."
	if cg := s.groups[groupID]; (cg != nil && !cg.is(stateDead)) || s.shareGroups[groupID] != nil {
		msg = "Group " + groupID + " is not a consumer group."
	}
	out.ErrorMessage = kmsg.StringPtr(msg)
	return out
}

// Describe is the group as ConsumerGroupDescribe shows it. Members are in member id
// order, topics in name order, partitions ascending. AssignorName is the assignor
// most members ask for (ServerAssignor), else the group's default (the first of
// group.consumer.assignors).
func (g *ConsumerGroup) Describe(names TopicNamer) kmsg.ConsumerGroupDescribeResponseGroup {
	out := kmsg.NewConsumerGroupDescribeResponseGroup()
	out.Group = g.id
	out.State = g.State().String()
	out.Epoch = g.groupEpoch
	out.AssignmentEpoch = g.targetEpoch
	members := g.sortedMembers()
	metas := make([]ConsumerMemberUpdated, len(members))
	for i, m := range members {
		metas[i] = m.meta
	}
	out.AssignorName = g.preferredAssignor(metas).Name()
	for _, m := range members {
		out.Members = append(out.Members, describeConsumerMember(m, g.target[m.meta.MemberID], names))
	}
	return out
}

// describeConsumerMember is one member of ConsumerGroupDescribe (Kafka's
// ConsumerGroupMember.asConsumerGroupDescribeMember): its current assignment is the
// partitions it owns (not those pending revocation).
func describeConsumerMember(m *consumerMember, target AssignedPartitions, names TopicNamer) kmsg.ConsumerGroupDescribeResponseGroupMember {
	dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
	dm.MemberID = m.meta.MemberID
	dm.InstanceID = describedString(m.meta.InstanceID)
	dm.RackID = describedString(m.meta.RackID)
	dm.MemberEpoch = m.epoch
	dm.ClientID = m.meta.ClientID
	dm.ClientHost = m.meta.ClientHost
	dm.SubscribedTopics = append([]string{}, m.meta.SubscribedTopicNames...)
	dm.SubscribedTopicRegex = describedString(m.meta.SubscribedTopicRegex)
	dm.Assignment.TopicPartitions = describedPartitions(m.assigned, names)
	dm.TargetAssignment.TopicPartitions = describedPartitions(target, names)
	dm.MemberType = ConsumerMemberTypeConsumer
	if m.meta.Classic != nil {
		dm.MemberType = ConsumerMemberTypeClassic
	}
	return dm
}

// describedPartitions names a's topics, leaving out those the image does not know,
// sorted by name.
func describedPartitions(a AssignedPartitions, names TopicNamer) []kmsg.AssignmentTopicPartition {
	out := []kmsg.AssignmentTopicPartition{}
	for id, ps := range a {
		name, ok := names(id)
		if !ok || len(ps) == 0 {
			continue
		}
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic = id, name
		tp.Partitions = slices.Clone(ps)
		slices.Sort(tp.Partitions)
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b kmsg.AssignmentTopicPartition) int { return strings.Compare(a.Topic, b.Topic) })
	return out
}

// describedString is s as a nullable string: nil when empty.
func describedString(s string) *string {
	if s == "" {
		return nil
	}
	return kmsg.StringPtr(s)
}
