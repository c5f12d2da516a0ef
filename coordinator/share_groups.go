package coordinator

// The KIP-932 share groups on the group coordinator: ShareGroupHeartbeat (key 76) and
// ShareGroupDescribe (key 77) submitted to the group's __consumer_offsets partition
// (Kafka's GroupCoordinatorService.shareGroupHeartbeat and shareGroupDescribe), the
// share coordinator's answer to a share state initialization delivered back to the
// group's shard, and the share state a deleted share group leaves for the share
// coordinator to delete. Share members' sessions expire on the consumer groups' timer
// (consumer_heartbeat.go): the shard's deadlines include them.

import (
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupHeartbeat answers r from the group's shard, once the records it causes
// are committed. client is who sent it, stored for display only. A group whose
// partition is not served here gets NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS,
// which the client retries after finding the coordinator again. The partitions the
// heartbeat marks for share state initialization go to group.Config.OnShareInitialize.
func (gc *GroupCoordinator) ShareGroupHeartbeat(r *kmsg.ShareGroupHeartbeatRequest, client group.Client) <-chan kmsg.Response {
	return gc.Respond(r.GroupID, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.ShareGroupHeartbeat(now, client, r, gc.cfg.ConsumerTopics(), send)
	}, func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp
	})
}

// ShareGroupStateInitialized delivers the outcome of a group.ShareInitialize to the
// group's shard: errorCode 0 makes parts assignable (the group epoch is bumped, the
// members' next heartbeats get them), another code lets the next heartbeat ask again.
// A partition no longer served here drops the outcome: the group's new coordinator
// asks again after group.share.initialize.retry.interval.ms.
func (gc *GroupCoordinator) ShareGroupStateInitialized(groupID string, parts []group.ShareTopicPartitions, errorCode int16) {
	gc.Submit(groupID, func(now time.Time, s *group.Shard) group.Effects {
		return s.ShareGroupStateInitialized(now, groupID, parts, errorCode, gc.cfg.ConsumerTopics())
	}, func(int16) {})
}

// ShareGroupDescribe answers r from each group's shard, in r's order: an empty group
// id is INVALID_GROUP_ID, a group whose partition is not served here NOT_COORDINATOR
// (COORDINATOR_LOAD_IN_PROGRESS while it loads). names gives the topics' names;
// finish, when not nil, completes each group described without error (its
// AuthorizedOperations) on the shard's goroutine.
func (gc *GroupCoordinator) ShareGroupDescribe(r *kmsg.ShareGroupDescribeRequest, names group.TopicNamer,
	finish func(*kmsg.ShareGroupDescribeResponseGroup)) <-chan kmsg.Response {
	return Gather(len(r.GroupIDs), func(i int, done func(kmsg.ShareGroupDescribeResponseGroup)) {
		id := r.GroupIDs[i]
		refused := func(code int16) {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = id, code
			done(g)
		}
		if id == "" {
			refused(kerr.InvalidGroupID.Code)
			return
		}
		gc.Submit(id, func(_ time.Time, s *group.Shard) group.Effects {
			g := s.ShareGroupDescribe(id, names)
			if finish != nil && g.ErrorCode == 0 {
				finish(&g)
			}
			done(g)
			return group.Effects{}
		}, refused)
	}, func(results []kmsg.ShareGroupDescribeResponseGroup) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		resp.Groups = results
		return resp
	})
}

// shareStateOf returns the share state partitions of groupID's share group on s
// (initialized and initializing), nil when groupID is not a share group: what
// DeleteGroups has GroupConfig.DeleteShareGroupState delete before the group. Topics
// being deleted are left out: their share state goes with the topic.
func shareStateOf(s *group.Shard, groupID string) []group.ShareTopicPartitions {
	g := s.ShareGroup(groupID)
	if g == nil {
		return nil
	}
	initialized, initializing, _ := g.SharePartitions()
	return append(initialized, initializing...)
}

// deleteShareStateFirst starts DeleteGroups of groupID's share group the way Kafka 4.2
// does (GroupCoordinatorService.deleteGroups): an empty share group with share state
// has it deleted by the share coordinators first, and only then is the group deleted
// on its shard (answered as a classic group's deletion is); a state that cannot be
// deleted is the group's answer, and the group stays, so that the state of a group id
// never outlives its group (a group re-created under the id would otherwise meet the
// old state epochs). It reports whether it took the request over; a group with members
// is left to DeleteGroup (NON_EMPTY_GROUP).
func (gc *GroupCoordinator) deleteShareStateFirst(groupID string, s *group.Shard, answer func(int16)) bool {
	g := s.ShareGroup(groupID)
	if g == nil || g.NumMembers() > 0 || gc.deleteShareState == nil {
		return false
	}
	state := shareStateOf(s, groupID)
	if len(state) == 0 {
		return false
	}
	gc.deleteShareState(groupID, state, func(code int16) {
		if code != 0 {
			answer(code)
			return
		}
		gc.Submit(groupID, func(now time.Time, s *group.Shard) group.Effects {
			return s.DeleteGroup(now, groupID, answer)
		}, answer)
	})
	return true
}
