package group

// The KIP-848 consumer groups of a Shard, beside its classic groups: the
// ConsumerGroupHeartbeat and expiry entry points that persist a ConsumerGroup's events
// as Kafka's records (consumer_records.go), and the replay that rebuilds the groups
// from those records when the partition is loaded.
//
// One group id is one type, as in Kafka 4.2's GroupMetadataManager: a classic group
// with members is not a consumer group (GROUP_ID_NOT_FOUND "Group g is not a consumer
// group.") unless group.consumer.migration.policy lets a heartbeat upgrade it, and an
// empty one is replaced (consumer_migrate.go); a simple group (committed offsets only,
// no protocol type) is no obstacle, and keeps holding the offsets.
//
// Apply, then persist: as the classic group applies a new generation at once and
// writes its record (join.go), a heartbeat changes the ConsumerGroup at once and
// writes the records; the response waits for the write. When the write fails the
// response carries the write's error code (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// ...) and the group stays as the heartbeat left it, ahead of the log: if the
// partition moved, Unload drops it and the next coordinator loads the log; if the
// shard stays loaded, the group is marked to resync, and its next write states the
// whole group (every member's metadata and assignment, epochs, targets) with the
// tombstones of the members the failed writes removed, so that the log replays to the
// group again. (Kafka instead reverts its timeline to the last committed offset; the
// member whose response failed may be fenced and rejoin.)

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// isClassic reports whether the classic group g is a group of the classic protocol,
// not just the holder of a simple consumer's offsets (Kafka's ClassicGroup
// .isSimpleGroup is its negation).
func (g *group) isClassic() bool { return g.protocolType != "" || len(g.members) > 0 }

// ConsumerGroup returns the consumer group groupID, nil when the shard has none: a
// read-only view for describing it (ConsumerGroupDescribe, ListGroups) and for tests.
// Callers must not change it.
func (s *Shard) ConsumerGroup(groupID string) *ConsumerGroup { return s.consumerGroups[groupID] }

// ConsumerGroupIDs returns the ids of the shard's consumer groups, sorted.
func (s *Shard) ConsumerGroupIDs() []string { return slices.Sorted(maps.Keys(s.consumerGroups)) }

// ConsumerGroupHeartbeat (key 68, v0-1) at now, from client c, against the metadata
// image topics (Kafka's GroupMetadataManager.consumerGroupHeartbeat). The response is
// sent through send once the group's records are committed (at once for an error). A
// group is created by its first member's join and kept while it has records. With an
// authorizer, topics is ConsumerTopicsWithDescriber(image, the request principal's
// DESCRIBE check): regular expressions the heartbeat resolves keep only those topics.
func (s *Shard) ConsumerGroupHeartbeat(now time.Time, c Client, req *kmsg.ConsumerGroupHeartbeatRequest, topics ConsumerTopics, send func(kmsg.Response)) Effects {
	s.observe(now)
	return s.withConsumerDeadline(req.Group, s.consumerGroupHeartbeat(now, c, req, topics, send))
}

func (s *Shard) consumerGroupHeartbeat(now time.Time, c Client, req *kmsg.ConsumerGroupHeartbeatRequest, topics ConsumerTopics, send func(kmsg.Response)) Effects {
	var b batch
	probe := &ConsumerGroup{id: req.Group, cfg: s.cfg.Consumer}
	if err := probe.validateHeartbeat(req); err != nil {
		b.reply(send, probe.errorResult(req, err).Response)
		return b.effects()
	}
	if err := heartbeatFitsRecords(c, req); err != nil {
		b.reply(send, probe.errorResult(req, err).Response)
		return b.effects()
	}
	if s.shareGroups[req.Group] != nil {
		b.reply(send, probe.errorResult(req, notConsumerGroup(req.Group)).Response)
		return b.effects()
	}
	g := s.consumerGroups[req.Group]
	classic := s.groups[req.Group]
	var conversion []ConsumerEvent
	if classic != nil && classic.isClassic() {
		var err *hbError
		if g, conversion, err = s.classicToConsumer(classic, now, topics); err != nil { // consumer_migrate.go
			b.reply(send, probe.errorResult(req, err).Response)
			return b.effects()
		}
	} else {
		classic = nil
	}
	cfg := s.consumerConfig(req.Group) // the group's own configs, as of this heartbeat
	if g == nil {
		g = NewConsumerGroup(req.Group, cfg)
	}
	g.cfg = cfg
	// The last consumer-protocol member leaving may turn the group classic
	// (consumer_migrate.go).
	if classic == nil && s.leaveDowngrades(now, &b, g, req, topics, send) {
		return b.effects()
	}
	res := g.Heartbeat(req, ConsumerClient{ClientID: c.ID, ClientHost: c.Host}, now, topics)
	if classic != nil && res.Response.ErrorCode == 0 {
		s.retireClassic(&b, classic)
		res.Events = append(conversion, res.Events...)
	}
	if len(res.Events) > 0 {
		s.consumerGroups[req.Group] = g
		s.persistConsumer(&b, g, res.Events, res.Response)
		s.consumerRebalanced(g, res.Events, now)
	}
	b.reply(send, res.Response)
	return b.effects()
}

// heartbeatFitsRecords refuses (INVALID_REQUEST, as JoinGroup does) a heartbeat with a
// string the member metadata record cannot hold: flexible requests may carry longer
// strings than the records' int16 lengths, and a record must never be written cut.
func heartbeatFitsRecords(c Client, req *kmsg.ConsumerGroupHeartbeatRequest) *hbError {
	fields := []string{req.Group, req.MemberID, c.ID, c.Host, optionalValue(req.InstanceID), optionalValue(req.RackID),
		optionalValue(req.SubscribedTopicRegex), optionalValue(req.ServerAssignor)}
	fields = append(fields, req.SubscribedTopicNames...)
	for _, f := range fields {
		if !fitsRecord(f) {
			return hbErrorf(kerr.InvalidRequest, "A string of the request is longer than %d bytes.", maxRecordString)
		}
	}
	return nil
}

// ExpireConsumerGroups removes, at now, the members of every consumer group whose
// session or rebalance timeout passed (ConsumerGroup.Expire), and of every share
// group whose session timed out (ShareGroup.Expire), writing their records.
// The runtime calls it at NextConsumerDeadline; topics is the metadata image.
func (s *Shard) ExpireConsumerGroups(now time.Time, topics ConsumerTopics) Effects {
	s.observe(now)
	var b batch
	for _, id := range s.ConsumerGroupIDs() {
		g := s.consumerGroups[id]
		if leaving := g.expiring(now); len(leaving) > 0 && s.downgrades(g, leaving) && s.downgrade(now, &b, g, leaving, topics) {
			continue // consumer_migrate.go
		}
		if evs := g.Expire(now, topics); len(evs) > 0 {
			s.persistConsumer(&b, g, evs, nil)
			s.consumerRebalanced(g, evs, now)
		}
	}
	s.expireShareGroups(&b, now, topics) // share_shard.go
	return b.effects()
}

// ConsumerDeadlineTimer is the key of the Timer a call asks for when it may have set
// a consumer group member's session or rebalance deadline: the runtime keeps one
// expiry timer per shard, arms it no later than the Timer's At, and calls
// ExpireConsumerGroups (never Timeout) when it fires, then re-arms it at
// NextConsumerDeadline.
const ConsumerDeadlineTimer = "petrel/consumer-expire"

// withConsumerDeadline adds to e the ConsumerDeadlineTimer of group id's earliest
// member deadline, when id is a consumer group with one: every call that handles a
// member of a consumer group (its heartbeats, and its classic members' JoinGroup,
// SyncGroup, Heartbeat and LeaveGroup) may have moved it earlier.
func (s *Shard) withConsumerDeadline(id string, e Effects) Effects {
	if g := s.consumerGroups[id]; g != nil {
		if at, ok := g.NextDeadline(); ok {
			e.Timers = append(e.Timers, Timer{Key: ConsumerDeadlineTimer, At: at})
		}
	}
	if g := s.shareGroups[id]; g != nil {
		if at, ok := g.NextDeadline(); ok {
			e.Timers = append(e.Timers, Timer{Key: ConsumerDeadlineTimer, At: at})
		}
	}
	return e
}

// NextConsumerDeadline is when ExpireConsumerGroups next has something to do; ok is
// false when no consumer or share group member has a timer running. The runtime asks after
// Loaded and after every ExpireConsumerGroups and keeps one timer at it (a scan of
// every member: O(members) per call); a call's ConsumerDeadlineTimer
// (withConsumerDeadline) only brings that timer forward.
func (s *Shard) NextConsumerDeadline() (at time.Time, ok bool) {
	for _, g := range s.consumerGroups {
		if t, has := g.NextDeadline(); has && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	if t, has := s.nextShareDeadline(); has && (!ok || t.Before(at)) {
		at, ok = t, true
	}
	return at, ok
}

// persistConsumer adds the records of g's events to b; resp, when not nil, is the
// response waiting for them, which a failed write turns into an error response.
func (s *Shard) persistConsumer(b *batch, g *ConsumerGroup, events []ConsumerEvent, resp *kmsg.ConsumerGroupHeartbeatResponse) {
	s.rewriteRetiredConsumer(b, g.id)
	s.rewriteClassicTombstone(b, g.id)
	removed, removedRx := removedMembers(events), removedRegexes(events)
	var records []Record
	var err error
	if pending, dirty := s.consumerDirty[g.id]; dirty {
		// Resync after a failed write: the tombstones of every member a failed write
		// removed, then the whole group. A member that joined again under its id since
		// is tombstoned too: the whole group restates its metadata and assignment, but
		// names a target only for members that have one, so the removed member's
		// target record would otherwise outlive it.
		for id := range pending {
			removed = append(removed, id)
		}
		var tombs []ConsumerEvent
		for _, id := range slices.Compact(slices.Sorted(slices.Values(removed))) {
			tombs = append(tombs, ConsumerMemberRemoved{MemberID: id})
		}
		removedRx = append(removedRx, s.takeDirtyRegexes(g.id)...)
		tombs = append(tombs, staleRegexTombstones(g, removedRx)...)
		if records, err = consumerEventRecords(g.id, tombs); err == nil {
			var full []Record
			full, err = consumerGroupFullRecords(g)
			records = append(records, full...)
		}
		delete(s.consumerDirty, g.id)
	} else {
		records, err = consumerEventRecords(g.id, events)
	}
	if err != nil {
		// Not reached: heartbeatFitsRecords refused the strings already.
		s.markConsumerDirty(g.id, removed)
		s.markRegexesDirty(g.id, removedRx)
		if resp != nil {
			failHeartbeat(resp, kerr.UnknownServerError.Code, err.Error())
		}
		return
	}
	// Kafka 4.1+ (KIP-1101) tombstones a deprecated subscription metadata record
	// once it writes the group's epoch with the metadata hash.
	legacy := s.consumerLegacyMetadata[g.id] && bumpsEpoch(events)
	if legacy {
		records = append(records, ConsumerGroupRecord{Key: ConsumerGroupKey{Type: RecordTypeConsumerGroupPartitionMetadata, GroupID: g.id}}.Encode())
		delete(s.consumerLegacyMetadata, g.id)
	}
	epoch := s.epoch
	answered := false
	b.writeAnswered(func(code int16) Effects {
		if code != 0 && s.epoch == epoch {
			s.markConsumerDirty(g.id, removed)
			s.markRegexesDirty(g.id, removedRx)
			if legacy {
				s.consumerLegacyMetadata[g.id] = true
			}
		}
		if code != 0 && resp != nil && !answered {
			failHeartbeat(resp, code, "")
		}
		return Effects{}
	}, func(code int16) Effects {
		answered = true
		if resp != nil {
			failHeartbeat(resp, code, "")
		}
		return Effects{}
	}, records...)
}

// markConsumerDirty marks group id to resync, remembering the members removed. A
// group id without a group (deleted meanwhile) stays marked: the next group of the id
// resyncs, and a committed deletion tombstones the members (deleteConsumerGroup).
func (s *Shard) markConsumerDirty(id string, removed []string) {
	addToSet(s.consumerDirty, id, removed)
}

// addToSet adds items to sets[id], creating it (empty when items is).
func addToSet(sets map[string]map[string]bool, id string, items []string) {
	set := sets[id]
	if set == nil {
		set = map[string]bool{}
		sets[id] = set
	}
	for _, item := range items {
		set[item] = true
	}
}

func bumpsEpoch(events []ConsumerEvent) bool {
	for _, ev := range events {
		if _, ok := ev.(ConsumerGroupEpochBumped); ok {
			return true
		}
	}
	return false
}

func removedMembers(events []ConsumerEvent) []string {
	var out []string
	for _, ev := range events {
		if r, ok := ev.(ConsumerMemberRemoved); ok {
			out = append(out, r.MemberID)
		}
	}
	return out
}

// failHeartbeat turns resp into the error response Kafka sends when the write fails.
func failHeartbeat(resp *kmsg.ConsumerGroupHeartbeatResponse, code int16, msg string) {
	version := resp.Version
	*resp = kmsg.NewConsumerGroupHeartbeatResponse()
	resp.Version = version
	resp.ErrorCode = code
	if msg != "" {
		resp.ErrorMessage = kmsg.StringPtr(msg)
	}
}

// replayConsumer applies one KIP-848 record read at load time: the first record of a
// group creates it, its group metadata tombstone removes it. A record of a group id
// that is a classic group is an error (Kafka 4.2: IllegalStateException "Group g is
// not a consumer group."), and skipped.
func (s *Shard) replayConsumer(rec ConsumerGroupRecord) error {
	id := rec.Key.GroupID
	if cg := s.groups[id]; cg != nil && cg.isClassic() && rec.Value != nil {
		return fmt.Errorf("group %q is a classic group: consumer group record type %d skipped", id, rec.Key.Type)
	}
	switch rec.Key.Type {
	case RecordTypeConsumerGroupPartitionMetadata:
		// Deprecated since Kafka 4.1 (KIP-1101): read and ignored, remembered only so
		// that the group's deletion tombstones it.
		if rec.Value != nil {
			s.consumerLegacyMetadata[id] = true
		} else {
			delete(s.consumerLegacyMetadata, id)
		}
		return nil
	}
	g := s.consumerGroups[id]
	if g == nil {
		if rec.Value == nil {
			return nil
		}
		g = NewConsumerGroup(id, s.consumerConfig(id))
		s.consumerGroups[id] = g
	}
	if rec.Key.Type == RecordTypeConsumerGroupMetadata && rec.Value == nil {
		delete(s.consumerGroups, id)
		delete(s.consumerDirty, id)
		s.dropEmptyHolder(id)
		return nil
	}
	replayConsumerRecord(g, rec)
	return nil
}

// resetConsumerGroups forgets every consumer group (a new shard, an unload).
func (s *Shard) resetConsumerGroups() {
	s.consumerGroups = map[string]*ConsumerGroup{}
	s.consumerDirty = map[string]map[string]bool{}
	s.consumerDirtyRegexes = map[string]map[string]bool{}
	s.consumerLegacyMetadata = map[string]bool{}
	s.classicRetired = map[string]bool{}
	s.retiredConsumers = map[string]retiredConsumer{}
}

// deleteConsumerGroup deletes an empty consumer group (DeleteGroups, Kafka's
// GroupCoordinatorShard.deleteGroups): NON_EMPTY_GROUP while it has members; otherwise
// the tombstones of its committed offsets, then of the group's records
// (consumerGroupTombstones). The group is removed at once (its offsets once the
// tombstones are committed, as the classic path does); if the write fails it comes
// back, unless a new group of the id started meanwhile, whose records, written after
// the failed tombstones, then state it over the old empty group's.
func (s *Shard) deleteConsumerGroup(g *ConsumerGroup, send func(errorCode int16)) Effects {
	var b batch
	if g.NumMembers() > 0 {
		send(errNonEmptyGroup)
		return b.effects()
	}
	s.rewriteClassicTombstone(&b, g.id)
	var records []Record
	var tps []topicPartition
	offsets := s.groups[g.id]
	if offsets != nil {
		tps = offsets.offsetPartitions()
		for _, tp := range tps {
			records = append(records, offsetCommitTombstone(g.id, tp))
		}
	}
	dirtyRx := s.takeDirtyRegexes(g.id)
	removal, err := s.consumerGroupRemoval(g, dirtyRx)
	if err != nil { // not reached: the ids were stored once
		send(kerr.UnknownServerError.Code)
		return b.effects()
	}
	records = append(records, removal...)
	// Applied at once, as Kafka replays its tombstones: a member joining before they
	// are committed starts a new group, whose records follow them in the log.
	legacy, dirty := s.consumerLegacyMetadata[g.id], s.consumerDirty[g.id]
	delete(s.consumerGroups, g.id)
	delete(s.consumerDirty, g.id)
	delete(s.consumerLegacyMetadata, g.id)
	epoch := s.epoch
	answered := false
	b.writeAnswered(func(code int16) Effects {
		if code == 0 && s.epoch == epoch {
			if offsets != nil {
				for _, tp := range tps {
					delete(offsets.offsets, tp)
					s.dropTxnOffsetsOf(g.id, tp)
				}
				if s.groups[g.id] == offsets {
					s.dropEmptyHolder(g.id)
				}
			}
		}
		if code == 0 && s.epoch == epoch && s.consumerGroups[g.id] == nil && s.consumerDirty[g.id] != nil {
			// Writes issued before the deletion failed since: tombstone their members.
			return s.consumerCleanup(g.id)
		}
		if code != 0 && s.epoch == epoch && s.consumerGroups[g.id] == nil {
			// The tombstones are not in the log: the group is, as it was.
			s.consumerGroups[g.id] = g
			if legacy {
				s.consumerLegacyMetadata[g.id] = true
			}
			if dirty != nil {
				s.markConsumerDirty(g.id, slices.Collect(maps.Keys(dirty)))
				s.markRegexesDirty(g.id, dirtyRx)
			}
		} else if code != 0 && s.epoch == epoch && s.consumerGroups[g.id] != g {
			// A new group of the id started meanwhile, its records after the failed
			// tombstones: its resync must tombstone what the old group left.
			s.inheritFailedDeletion(g, dirty, dirtyRx, legacy)
		}
		if !answered {
			send(code)
		}
		return Effects{}
	}, func(code int16) Effects {
		answered = true
		send(code)
		return Effects{}
	}, records...)
	return b.effects()
}

// consumerGroupRemoval is the records removing group g: the tombstones of the members
// and regular expressions (dirtyRx) failed writes removed, which may still have records
// in the log, then the group's (consumerGroupTombstones).
func (s *Shard) consumerGroupRemoval(g *ConsumerGroup, dirtyRx []string) ([]Record, error) {
	var stale []ConsumerEvent
	for _, id := range slices.Sorted(maps.Keys(s.consumerDirty[g.id])) {
		stale = append(stale, ConsumerMemberRemoved{MemberID: id})
	}
	stale = append(stale, staleRegexTombstones(g, dirtyRx)...)
	records, err := consumerEventRecords(g.id, stale)
	if err != nil {
		return nil, err
	}
	return append(records, consumerGroupTombstones(g, s.consumerLegacyMetadata[g.id])...), nil
}

// consumerCleanup tombstones the members failed writes removed from group id, which
// has no group any more, and the group metadata again (their records could otherwise
// outlive the deletion's tombstones in the compacted log).
func (s *Shard) consumerCleanup(id string) Effects {
	var b batch
	ids := slices.Sorted(maps.Keys(s.consumerDirty[id]))
	delete(s.consumerDirty, id)
	evs := make([]ConsumerEvent, 0, len(ids))
	for _, m := range ids {
		evs = append(evs, ConsumerMemberRemoved{MemberID: m})
	}
	regexes := s.takeDirtyRegexes(id)
	for _, regex := range regexes {
		evs = append(evs, ConsumerRegularExpressionRemoved{Regex: regex})
	}
	records, err := consumerEventRecords(id, evs)
	if err != nil {
		return b.effects() // not reached: the ids were stored once
	}
	records = append(records, ConsumerGroupRecord{Key: ConsumerGroupKey{Type: RecordTypeConsumerGroupMetadata, GroupID: id}}.Encode())
	epoch := s.epoch
	b.write(func(code int16) Effects {
		if code != 0 && s.epoch == epoch {
			s.markConsumerDirty(id, ids)
			s.markRegexesDirty(id, regexes)
		}
		return Effects{}
	}, records...)
	return b.effects()
}
