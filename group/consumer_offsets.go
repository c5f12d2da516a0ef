package group

// Committed offsets of KIP-848 consumer groups, as Kafka 4.2's ConsumerGroup and
// OffsetMetadataManager treat them. The offsets stay where every group's offsets are
// (the offsets of the group id's simple group in Shard.groups, its "holder"); what
// differs is who may commit and fetch them, and when they expire:
//
//   - OffsetCommit and TxnOffsetCommit name a member and its member epoch
//     (ConsumerGroup.validateOffsetCommit): member epoch -1 commits only while the group
//     is empty (an admin's or a standalone consumer's commit); a TxnOffsetCommit naming
//     no member, epoch or instance is accepted as for a classic group; otherwise an
//     unknown member is UNKNOWN_MEMBER_ID, an OffsetCommit below v9 from a member is
//     UNSUPPORTED_VERSION, and an epoch other than the member's is STALE_MEMBER_EPOCH
//     (ILLEGAL_GENERATION to TxnOffsetCommit).
//   - OffsetFetch v9+ naming a member is checked the same way (validateOffsetFetch);
//     without one (member id null, epoch -1) it is accepted.
//   - The offsets of a topic a member subscribes to never expire; the others expire
//     offsets.retention.minutes after their commit, and an empty consumer group whose
//     offsets all expired (or that has none) is deleted (cleanupGroupMetadata).

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// validateConsumerOffsetCommit is Kafka's ConsumerGroup.validateOffsetCommit for an
// OffsetCommit (transactional false, req.Version its version) or a TxnOffsetCommit
// (true) against the consumer group g, with OffsetMetadataManager's translation of
// STALE_MEMBER_EPOCH to ILLEGAL_GENERATION for TxnOffsetCommit.
func validateConsumerOffsetCommit(g *ConsumerGroup, req *kmsg.OffsetCommitRequest, transactional bool) int16 {
	epoch := req.Generation
	if req.Version == 0 {
		epoch = -1
	}
	if epoch < 0 && g.NumMembers() == 0 {
		return 0
	}
	if transactional && epoch == -1 && req.MemberID == "" && req.InstanceID == nil {
		return 0
	}
	m, ok := g.members[req.MemberID]
	if !ok {
		return errUnknownMemberID
	}
	// A classic member (consumer_classic.go) commits with its generation, at any
	// version: ILLEGAL_GENERATION or FENCED_INSTANCE_ID, as Kafka checks it.
	if classic, code := g.classicOffsetCommitCode(req.MemberID, req.InstanceID, epoch); classic {
		return code
	}
	if !transactional && req.Version < 9 {
		return errUnsupportedVersion
	}
	if epoch != m.epoch {
		if transactional {
			return errIllegalGeneration
		}
		return errStaleMemberEpoch
	}
	return 0
}

// validateConsumerOffsetFetch is Kafka's ConsumerGroup.validateOffsetFetch: a request
// without a member (memberID nil and a negative epoch: an admin, or a version before
// 9) is accepted; otherwise the member must exist and be at memberEpoch.
func validateConsumerOffsetFetch(g *ConsumerGroup, memberID *string, memberEpoch int32) int16 {
	if memberID == nil && memberEpoch < 0 {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m, ok := g.members[id]
	switch {
	case !ok:
		return errUnknownMemberID
	case m.epoch != memberEpoch:
		return errStaleMemberEpoch
	}
	return 0
}

// OffsetFetchMember answers one group of an OffsetFetch v9+ request, which names the
// member asking (memberID, memberEpoch; nil and -1 for none). For a consumer group
// the member is checked first (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH as the group's
// error, with no offsets); otherwise it is OffsetFetch.
func (s *Shard) OffsetFetchMember(groupID string, memberID *string, memberEpoch int32, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	if cg := s.consumerGroups[groupID]; cg != nil {
		if code := validateConsumerOffsetFetch(cg, memberID, memberEpoch); code != 0 {
			out := kmsg.NewOffsetFetchResponseGroup()
			out.Group, out.ErrorCode = groupID, code
			return out
		}
	}
	return s.offsetFetch(groupID, topics, requireStable)
}

// dropEmptyHolder forgets the simple group holding the offsets of the consumer group
// id once the group is deleted and no offset is left, as the live deletion does
// (deleteConsumerGroup): a load then has no group of the id either.
func (s *Shard) dropEmptyHolder(id string) {
	if h := s.groups[id]; h != nil && !h.isClassic() && len(h.offsets) == 0 && len(h.pendingOffsets) == 0 {
		delete(s.groups, id)
	}
}

// hasTxnOffsets reports whether a transaction has offsets of groupID pending.
func (s *Shard) hasTxnOffsets(groupID string) bool {
	for _, byGroup := range s.txnOffsets {
		if len(byGroup[groupID]) > 0 {
			return true
		}
	}
	return false
}

// expireConsumerOffsets is expireOffsets for the consumer groups (Kafka's
// cleanupGroupMetadata with ConsumerGroup's offset expiration condition): offsets of
// topics no member subscribes to expire offsets.retention.minutes after their commit
// (or at the expire timestamp of an OffsetCommit v2-4); an empty group with no offset
// left, none being written and no transaction's offsets pending is deleted with its
// records (deleteConsumerGroup).
func (s *Shard) expireConsumerOffsets(now time.Time, b *batch) {
	fromCommit := func(v offsetValue) int64 { return v.commitTimestampMs }
	for _, id := range s.ConsumerGroupIDs() {
		cg, holder := s.consumerGroups[id], s.groups[id]
		var expired []topicPartition
		allExpired := true
		if holder != nil {
			expired, allExpired = holder.expiredOffsets(now, s.cfg.OffsetsRetention, fromCommit, cg.IsSubscribedToTopic)
		}
		if allExpired && cg.NumMembers() == 0 && (holder == nil || len(holder.pendingOffsets) == 0) && !s.hasTxnOffsets(id) {
			b.merge(s.deleteConsumerGroup(cg, func(int16) {}))
			continue
		}
		if len(expired) == 0 {
			continue
		}
		records := make([]Record, 0, len(expired))
		for _, tp := range expired {
			records = append(records, offsetCommitTombstone(id, tp))
		}
		s.writeDeletion(b, holder, expired, false, nil, records)
	}
}

// notClassicGroup is the DescribeGroups v6 answer for a group id that is a consumer
// group (Kafka's GroupMetadataManager.classicGroup).
func notClassicGroup(groupID string) string {
	return fmt.Sprintf("Group %s is not a classic group.", groupID)
}
