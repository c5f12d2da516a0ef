package group

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupAuthorizedOperations is what Kafka answers for a group without an authorizer:
// every operation a group supports (READ 3, DELETE 6, DESCRIBE 8) as a bit field.
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8

// describeGroup is one group of DescribeGroups (Kafka's GroupMetadataManager.describeGroups):
// members' metadata and assignments are shown only when the group is Stable. A group id
// that is not a classic group is Dead, and from v6 GROUP_ID_NOT_FOUND with Kafka's
// message ("Group g not found.", "Group g is not a classic group.").
func (s *Shard) describeGroup(groupID string, version int16, includeAuthorizedOperations bool) kmsg.DescribeGroupsResponseGroup {
	out := kmsg.NewDescribeGroupsResponseGroup()
	out.Group = groupID
	if includeAuthorizedOperations {
		out.AuthorizedOperations = groupAuthorizedOperations
	}
	g := s.groups[groupID]
	notFound := ""
	switch {
	case s.consumerGroups[groupID] != nil || s.shareGroups[groupID] != nil:
		notFound = notClassicGroup(groupID)
	case g == nil:
		notFound = fmt.Sprintf("Group %s not found.", groupID)
	}
	if notFound != "" {
		out.State = stateDead.String()
		if version >= 6 {
			out.ErrorCode, out.ErrorMessage = errGroupIDNotFound, &notFound
		}
		return out
	}
	out.State = g.state.String()
	out.ProtocolType = g.protocolType
	stable := g.is(stateStable)
	if stable {
		out.Protocol = g.protocol
	}
	for _, m := range g.all() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.ProtocolMetadata = []byte{}
		dm.MemberAssignment = []byte{}
		if stable {
			dm.ProtocolMetadata = m.metadata(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// listGroups lists the shard's groups, filtered by state and type names (case-insensitive,
// as Kafka): the classic groups ("classic", simple consumers' included) and the
// consumer groups ("consumer", protocol type "consumer") and the share groups ("share",
// protocol type "share"), sorted by id.
func (s *Shard) listGroups(states, types []string) []kmsg.ListGroupsResponseGroup {
	matches := func(filter []string, value string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, value) {
				return true
			}
		}
		return false
	}
	ids := make([]string, 0, len(s.groups)+len(s.consumerGroups))
	for id := range s.groups {
		if s.consumerGroups[id] == nil { // else the holder of a consumer group's offsets
			ids = append(ids, id)
		}
	}
	for id := range s.consumerGroups {
		ids = append(ids, id)
	}
	for id := range s.shareGroups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []kmsg.ListGroupsResponseGroup
	for _, id := range ids {
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = id
		if cg := s.consumerGroups[id]; cg != nil {
			lg.ProtocolType, lg.GroupState, lg.GroupType = consumerProtocolType, cg.State().String(), "consumer"
		} else if sg := s.shareGroups[id]; sg != nil {
			lg.ProtocolType, lg.GroupState, lg.GroupType = GroupTypeShare, sg.State().String(), GroupTypeShare
		} else {
			g := s.groups[id]
			if g.is(stateDead) {
				continue
			}
			lg.ProtocolType, lg.GroupState, lg.GroupType = g.protocolType, g.state.String(), "classic"
		}
		if matches(states, lg.GroupState) && matches(types, lg.GroupType) {
			out = append(out, lg)
		}
	}
	return out
}

// deleteGroup is one group of DeleteGroups: tombstones for its offsets and its metadata.
func (s *Shard) deleteGroup(now time.Time, groupID string, send func(errorCode int16)) Effects {
	var b batch
	if cg := s.consumerGroups[groupID]; cg != nil {
		return s.deleteConsumerGroup(cg, send)
	}
	if sg := s.shareGroups[groupID]; sg != nil {
		return s.deleteShareGroup(sg, send) // share_shard.go
	}
	g := s.groups[groupID]
	switch {
	case groupID == "":
		send(errInvalidGroupID)
		return b.effects()
	case g == nil || g.is(stateDead):
		send(errGroupIDNotFound)
		return b.effects()
	case !g.is(stateEmpty):
		send(errNonEmptyGroup)
		return b.effects()
	}
	// Pending commits lie before the tombstones in the log: they are deleted too, as
	// Kafka's coordinator deletes the offsets as they stand at the log end.
	tps := g.offsetPartitions()
	records := make([]Record, 0, len(tps)+1)
	for _, tp := range tps {
		records = append(records, offsetCommitTombstone(g.id, tp))
	}
	records = append(records, groupMetadataTombstone(g.id))
	s.writeDeletion(&b, g, tps, true, send, records)
	return b.effects()
}

// offsetPartitions is every partition g has an offset of, committed or being written,
// sorted by topic and partition.
func (g *group) offsetPartitions() []topicPartition {
	tps := make([]topicPartition, 0, len(g.offsets)+len(g.pendingOffsets))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	for tp := range g.pendingOffsets {
		if _, ok := g.offsets[tp]; !ok {
			tps = append(tps, tp)
		}
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
	return tps
}
