package group

// The share groups of a Shard, beside its classic and consumer groups: the
// ShareGroupHeartbeat, share state initialization, expiry, ShareGroupDescribe and
// DeleteGroups entry points that persist a ShareGroup's events as Kafka's records
// (share_records.go), and the replay that rebuilds the groups at load time.
//
// One group id is one type, as in Kafka 4.2: a ShareGroupHeartbeat naming a classic
// group (one holding only committed offsets included) or a consumer group answers
// GROUP_ID_NOT_FOUND "Group g is not a share group.", and the consumer group paths
// answer a share group's id as Kafka does ("Group g is not a consumer group."); there
// is no conversion between share groups and the others.
//
// Apply, then persist, as consumer_shard.go: a heartbeat changes the group at once and
// writes its records; if the write fails the response carries the write's error and
// the group is marked to resync, its next write stating the whole group with the
// tombstones of the members the failed writes removed.

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupTypeShare is ListGroups' type of a share group (and its protocol type).
const GroupTypeShare = "share"

// ShareGroup returns the share group groupID, nil when the shard has none: a read-only
// view for describing it and for tests. Callers must not change it.
func (s *Shard) ShareGroup(groupID string) *ShareGroup { return s.shareGroups[groupID] }

// ShareGroupIDs returns the ids of the shard's share groups, sorted.
func (s *Shard) ShareGroupIDs() []string { return slices.Sorted(maps.Keys(s.shareGroups)) }

// shareConfig is the effective ShareConfig of group id: Config.Share with the group's
// own share.session.timeout.ms and share.heartbeat.interval.ms over it.
func (s *Shard) shareConfig(id string) ShareConfig {
	cfg := s.cfg.Share.withDefaults()
	if s.cfg.ShareGroupConfig != nil {
		s.cfg.ShareGroupConfig(id).override(&cfg.SessionTimeout, &cfg.HeartbeatInterval)
	}
	return cfg
}

// otherGroupType reports whether id names a classic or consumer group of the shard.
func (s *Shard) otherGroupType(id string) bool {
	g := s.groups[id]
	return s.consumerGroups[id] != nil || (g != nil && !g.is(stateDead))
}

func notShareGroup(id string) *hbError {
	return hbErrorf(kerr.GroupIDNotFound, "Group %s is not a share group.", id)
}

// ShareGroupHeartbeat (key 76, v1) at now, from client c, against the metadata image
// topics (Kafka's GroupMetadataManager.shareGroupHeartbeat). The response is sent
// through send once the group's records are committed (at once for an error). A group
// is created by its first member's join. When the heartbeat marks partitions for share
// state initialization, Config.OnShareInitialize is told once its records are
// committed (at once when it only retries partitions already marked).
func (s *Shard) ShareGroupHeartbeat(now time.Time, c Client, req *kmsg.ShareGroupHeartbeatRequest, topics ConsumerTopics, send func(kmsg.Response)) Effects {
	s.observe(now)
	return s.withConsumerDeadline(req.GroupID, s.shareGroupHeartbeat(now, c, req, topics, send))
}

func (s *Shard) shareGroupHeartbeat(now time.Time, c Client, req *kmsg.ShareGroupHeartbeatRequest, topics ConsumerTopics, send func(kmsg.Response)) Effects {
	var b batch
	if err := validateShareHeartbeat(req); err != nil {
		b.reply(send, shareErrorResult(req, err).Response)
		return b.effects()
	}
	fields := append([]string{req.GroupID, req.MemberID, c.ID, c.Host, optionalValue(req.RackID)}, req.SubscribedTopicNames...)
	for _, f := range fields {
		if !fitsRecord(f) {
			b.reply(send, shareErrorResult(req, hbErrorf(kerr.InvalidRequest, "A string of the request is longer than %d bytes.", maxRecordString)).Response)
			return b.effects()
		}
	}
	if s.otherGroupType(req.GroupID) {
		b.reply(send, shareErrorResult(req, notShareGroup(req.GroupID)).Response)
		return b.effects()
	}
	g := s.shareGroups[req.GroupID]
	cfg := s.shareConfig(req.GroupID)
	if g == nil {
		g = NewShareGroup(req.GroupID, cfg)
	}
	g.cfg = cfg
	res := g.Heartbeat(req, c, now, topics)
	if len(res.Events) > 0 {
		s.shareGroups[req.GroupID] = g
		s.persistShare(&b, g, res.Events, res.Response, res.Initialize)
	} else if res.Initialize != nil && s.cfg.OnShareInitialize != nil {
		s.cfg.OnShareInitialize(*res.Initialize)
	}
	b.reply(send, res.Response)
	return b.effects()
}

// ShareGroupStateInitialized is the outcome of a ShareInitialize (the share
// coordinator's InitializeShareGroupState answer): errorCode 0 moves parts to the
// initialized partitions and bumps the group epoch, so that the members' next
// heartbeats assign them (ShareGroup.StateInitialized); another code drops them from
// the initializing ones, for the next heartbeat to ask again
// (ShareGroup.StateInitializeFailed). A group deleted meanwhile is left alone.
func (s *Shard) ShareGroupStateInitialized(now time.Time, groupID string, parts []ShareTopicPartitions, errorCode int16, topics ConsumerTopics) Effects {
	s.observe(now)
	var b batch
	g := s.shareGroups[groupID]
	if g == nil {
		return b.effects()
	}
	var evs []ShareEvent
	if errorCode == 0 {
		evs = g.StateInitialized(parts, topics)
	} else {
		evs = g.StateInitializeFailed(parts)
	}
	if len(evs) > 0 {
		s.persistShare(&b, g, evs, nil, nil)
	}
	return b.effects()
}

// expireShareGroups removes the members of every share group whose session timed out
// (ExpireConsumerGroups calls it: one expiry timer serves both kinds of group).
func (s *Shard) expireShareGroups(b *batch, now time.Time, topics ConsumerTopics) {
	for _, id := range s.ShareGroupIDs() {
		g := s.shareGroups[id]
		if evs := g.Expire(now, topics); len(evs) > 0 {
			s.persistShare(b, g, evs, nil, nil)
		}
	}
}

// nextShareDeadline is the earliest session deadline of the share groups.
func (s *Shard) nextShareDeadline() (at time.Time, ok bool) {
	for _, g := range s.shareGroups {
		if t, has := g.NextDeadline(); has && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	return at, ok
}

// persistShare adds the records of g's events to b; resp, when not nil, is the
// response waiting for them, which a failed write turns into an error response; init,
// when not nil, goes to Config.OnShareInitialize once the records are committed.
func (s *Shard) persistShare(b *batch, g *ShareGroup, events []ShareEvent, resp *kmsg.ShareGroupHeartbeatResponse, init *ShareInitialize) {
	var removed []string
	for _, ev := range events {
		if r, ok := ev.(ShareMemberRemoved); ok {
			removed = append(removed, r.MemberID)
		}
	}
	var records []Record
	var err error
	if pending, dirty := s.shareDirty[g.id]; dirty {
		delete(s.shareDirty, g.id)
		removed = append(removed, slices.Collect(maps.Keys(pending))...)
		records, err = shareResyncRecords(g, removed)
	} else {
		records, err = shareEventRecords(g.id, events)
	}
	if err != nil { // not reached: the heartbeat refused long strings
		s.markShareDirty(g.id, removed)
		if resp != nil {
			failShareHeartbeat(resp, kerr.UnknownServerError.Code)
		}
		return
	}
	epoch := s.epoch
	b.writeAnsweredOnce(func(code int16) {
		switch {
		case s.epoch != epoch:
		case code != 0:
			s.markShareDirty(g.id, removed)
		case init != nil && s.cfg.OnShareInitialize != nil:
			s.cfg.OnShareInitialize(*init)
		}
	}, func(code int16) {
		if code != 0 && resp != nil {
			failShareHeartbeat(resp, code)
		}
	}, records...)
}

// markShareDirty marks group id to resync, remembering the members removed.
func (s *Shard) markShareDirty(id string, removed []string) { addToSet(s.shareDirty, id, removed) }

func failShareHeartbeat(resp *kmsg.ShareGroupHeartbeatResponse, code int16) {
	version := resp.Version
	*resp = kmsg.NewShareGroupHeartbeatResponse()
	resp.Version, resp.ErrorCode = version, code
}

// replayShare applies one share group record read at load time: the first record of
// a group creates it, its group metadata tombstone removes it. A record of an id that
// is a classic or consumer group is an error (Kafka 4.2: "Group g is not a share
// group."), and skipped; the deprecated type 9 is skipped silently.
func (s *Shard) replayShare(rec ShareGroupRecord) error {
	id := rec.Key.GroupID
	if rec.Key.Type == RecordTypeShareGroupPartitionMetadata {
		return nil
	}
	if s.otherGroupType(id) && rec.Value != nil {
		return errors.New(notShareGroup(id).msg + " Its share group record is skipped.")
	}
	g := s.shareGroups[id]
	switch {
	case rec.Key.Type == RecordTypeShareGroupMetadata && rec.Value == nil:
		delete(s.shareGroups, id)
		delete(s.shareDirty, id)
	case g != nil:
		replayShareRecord(g, rec)
	case rec.Value != nil: // a group's first record
		g = NewShareGroup(id, s.shareConfig(id))
		s.shareGroups[id] = g
		replayShareRecord(g, rec)
	}
	return nil
}

// resetShareGroups forgets every share group (a new shard, an unload).
func (s *Shard) resetShareGroups() {
	s.shareGroups = map[string]*ShareGroup{}
	s.shareDirty = map[string]map[string]bool{}
}

// deleteShareGroup deletes an empty share group (DeleteGroups): NON_EMPTY_GROUP while
// it has members; otherwise the group's tombstones (shareGroupTombstones). The group
// is removed at once; if the write fails it comes back, unless a new group of the id
// started meanwhile, which then resyncs over the old one's records.
func (s *Shard) deleteShareGroup(g *ShareGroup, send func(errorCode int16)) Effects {
	var b batch
	if g.NumMembers() > 0 {
		send(errNonEmptyGroup)
		return b.effects()
	}
	dirty := s.shareDirty[g.id]
	records := shareGroupTombstones(g, slices.Sorted(maps.Keys(dirty)))
	delete(s.shareGroups, g.id)
	delete(s.shareDirty, g.id)
	epoch := s.epoch
	b.writeAnsweredOnce(func(code int16) {
		if code == 0 || s.epoch != epoch {
			return
		}
		if cur := s.shareGroups[g.id]; cur == nil {
			s.shareGroups[g.id] = g
			if dirty != nil {
				s.markShareDirty(g.id, slices.Collect(maps.Keys(dirty)))
			}
		} else if cur != g {
			// The new group's resync tombstones what the old one left.
			s.markShareDirty(g.id, append(slices.Collect(maps.Keys(g.target)), slices.Collect(maps.Keys(dirty))...))
		}
	}, send, records...)
	return b.effects()
}

// ShareGroupDescribe describes the share group groupID (key 77, Kafka's
// GroupMetadataManager.shareGroupDescribe and ShareGroup.asDescribedGroup): its
// state, epochs and assignor ("simple"), and each member (member id order) with its
// current assignment, topics in name order (a topic names no longer knows is left
// out). A group id without a share group answers GROUP_ID_NOT_FOUND: "Group g not
// found.", or "Group g is not a share group." for a classic or consumer group. The
// caller answers an empty id (INVALID_GROUP_ID) and fills AuthorizedOperations.
func (s *Shard) ShareGroupDescribe(groupID string, names TopicNamer) kmsg.ShareGroupDescribeResponseGroup {
	out := kmsg.NewShareGroupDescribeResponseGroup()
	out.GroupID = groupID
	g := s.shareGroups[groupID]
	if g == nil {
		msg := "Group " + groupID + " not found."
		if s.otherGroupType(groupID) {
			msg = notShareGroup(groupID).msg
		}
		out.ErrorCode, out.ErrorMessage = errGroupIDNotFound, kmsg.StringPtr(msg)
		return out
	}
	out.GroupState = g.State().String()
	out.GroupEpoch = g.groupEpoch
	out.AssignmentEpoch = g.targetEpoch
	out.Assignor = SimpleAssignorName
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch = id, m.epoch
		dm.RackID = optionalString(m.meta.RackID)
		dm.ClientID, dm.ClientHost = m.meta.ClientID, m.meta.ClientHost
		dm.SubscribedTopicNames = slices.Clone(m.meta.SubscribedTopicNames)
		if dm.SubscribedTopicNames == nil {
			dm.SubscribedTopicNames = []string{}
		}
		dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, t := range sortedTopics(m.assigned) {
			name, ok := names(t)
			if !ok {
				continue
			}
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = t, name, slices.Clone(m.assigned[t])
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		slices.SortFunc(dm.Assignment.TopicPartitions, func(a, b kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition) int {
			return javaCompareStrings(a.Topic, b.Topic)
		})
		out.Members = append(out.Members, dm)
	}
	return out
}
