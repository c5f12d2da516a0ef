package coordinator

// The group coordinator's answers to the requests that span groups or shards:
// OffsetFetch (one group before v8, many from v8, KIP-709) and ListGroups (every
// serving shard).

import (
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch answers r from each group's shard, in r's version; v9+ checks the member
// it names against a consumer group (group.Shard.OffsetFetchMember). v10's topic ids
// are the caller's to resolve: the shard reads the topic names.
func (gc *GroupCoordinator) OffsetFetch(r *kmsg.OffsetFetchRequest) <-chan kmsg.Response {
	type one struct {
		id     string
		topics []kmsg.OffsetFetchRequestTopic
		// memberID and memberEpoch name the member asking (v9+), nil and -1 for none.
		memberID    *string
		memberEpoch int32
	}
	var groups []one
	if r.Version < 8 {
		groups = []one{{id: r.Group, topics: r.Topics, memberEpoch: -1}}
	} else {
		for _, g := range r.Groups {
			o := one{id: g.Group, memberEpoch: -1}
			if r.Version >= 9 {
				o.memberID, o.memberEpoch = g.MemberID, g.MemberEpoch
			}
			if g.Topics != nil {
				o.topics = []kmsg.OffsetFetchRequestTopic{}
				for _, t := range g.Topics {
					ft := kmsg.NewOffsetFetchRequestTopic()
					ft.Topic, ft.Partitions = t.Topic, t.Partitions
					o.topics = append(o.topics, ft)
				}
			}
			groups = append(groups, o)
		}
	}
	return Gather(len(groups), func(i int, done func(kmsg.OffsetFetchResponseGroup)) {
		g := groups[i]
		failed := func(code int16) {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.id, code
			done(rg)
		}
		if g.id == "" {
			failed(kerr.InvalidGroupID.Code)
			return
		}
		gc.Submit(g.id, func(_ time.Time, s *group.Shard) group.Effects {
			done(s.OffsetFetchMember(g.id, g.memberID, g.memberEpoch, g.topics, r.RequireStable))
			return group.Effects{}
		}, failed)
	}, func(results []kmsg.OffsetFetchResponseGroup) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		if r.Version >= 8 {
			resp.Groups = results
			return resp
		}
		offsetFetchV0(r, resp, results[0])
		return resp
	})
}

// offsetFetchV0 puts g, one group's answer, into resp as versions before 8 carry it.
func offsetFetchV0(r *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse, g kmsg.OffsetFetchResponseGroup) {
	resp.ErrorCode = g.ErrorCode
	for _, t := range g.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if r.Version < 2 && g.ErrorCode != 0 && len(g.Topics) == 0 {
		// v0-1 have no group error: every requested partition carries it.
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, g.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
}

// ListGroups answers r with the groups of every serving shard;
// COORDINATOR_LOAD_IN_PROGRESS while a partition is still loading.
func (gc *GroupCoordinator) ListGroups(r *kmsg.ListGroupsRequest) <-chan kmsg.Response {
	return collectServing(gc.Router, func(_ time.Time, s *group.Shard) []kmsg.ListGroupsResponseGroup {
		return s.ListGroups(r.StatesFilter, r.TypesFilter)
	}, func(groups []kmsg.ListGroupsResponseGroup, loading bool) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.Groups = groups
		if loading {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		}
		return resp
	})
}

// DescribeGroups answers r from each group's shard. authorizedOps, when not nil, gives
// a group's authorized operations (v3+ with IncludeAuthorizedOperations and an
// authorizer).
func (gc *GroupCoordinator) DescribeGroups(r *kmsg.DescribeGroupsRequest, authorizedOps func(group string) int32) <-chan kmsg.Response {
	return Gather(len(r.Groups), func(i int, done func(kmsg.DescribeGroupsResponseGroup)) {
		id := r.Groups[i]
		gc.Submit(id, func(_ time.Time, s *group.Shard) group.Effects {
			g := s.DescribeGroup(id, r.Version, r.IncludeAuthorizedOperations)
			if authorizedOps != nil {
				g.AuthorizedOperations = authorizedOps(id)
			}
			done(g)
			return group.Effects{}
		}, func(code int16) {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, code
			done(g)
		})
	}, func(results []kmsg.DescribeGroupsResponseGroup) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		resp.Groups = results
		return resp
	})
}

// DeleteGroups deletes each group of r on its shard (INVALID_GROUP_ID for ""); an
// empty share group's state is deleted first (GroupConfig.DeleteShareGroupState).
func (gc *GroupCoordinator) DeleteGroups(r *kmsg.DeleteGroupsRequest) <-chan kmsg.Response {
	return Gather(len(r.Groups), func(i int, done func(kmsg.DeleteGroupsResponseGroup)) {
		id := r.Groups[i]
		answer := func(code int16) {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = id, code
			done(g)
		}
		if id == "" {
			answer(kerr.InvalidGroupID.Code)
			return
		}
		gc.Submit(id, func(now time.Time, s *group.Shard) group.Effects {
			if gc.deleteShareStateFirst(id, s, answer) {
				return group.Effects{}
			}
			return s.DeleteGroup(now, id, answer)
		}, answer)
	}, func(results []kmsg.DeleteGroupsResponseGroup) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
		resp.Groups = results
		return resp
	})
}

// OffsetCommit commits r's offsets on the group's shard, answered once replicated.
// Partitions that known refuses (no such topic or partition) get
// UNKNOWN_TOPIC_OR_PARTITION and are not committed; failed answers a refusal of the
// whole request (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
func (gc *GroupCoordinator) OffsetCommit(r *kmsg.OffsetCommitRequest, known func(topic string, partition int32) bool,
	failed func(code int16) kmsg.Response) <-chan kmsg.Response {
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	kept := *r
	kept.Topics = nil
	for _, t := range r.Topics {
		kt := t
		kt.Partitions = nil
		var unknown kmsg.OffsetCommitResponseTopic
		for _, p := range t.Partitions {
			if known(t.Topic, p.Partition) {
				kt.Partitions = append(kt.Partitions, p)
				continue
			}
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
			unknown.Partitions = append(unknown.Partitions, rp)
		}
		if len(unknown.Partitions) > 0 {
			unknown.Topic = t.Topic
			resp.Topics = append(resp.Topics, unknown)
		}
		if len(kt.Partitions) > 0 {
			kept.Topics = append(kept.Topics, kt)
		}
	}
	if len(kept.Topics) == 0 && len(r.Topics) > 0 {
		ch := make(chan kmsg.Response, 1)
		ch <- resp
		return ch
	}
	return gc.Respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.OffsetCommit(now, &kept, resp, send)
	}, failed)
}

// TxnOffsetCommit writes r's offsets on partition's shard as one transactional batch
// of r's producer, appended with v's KIP-890 check; send gets the answer, failed the
// code of a refusal before the shard.
func (gc *GroupCoordinator) TxnOffsetCommit(partition int32, r *kmsg.TxnOffsetCommitRequest, v Verification,
	send func(kmsg.Response), failed func(code int16)) {
	gc.SubmitTo(partition, func(now time.Time, s *group.Shard) group.Effects {
		eff := s.TxnOffsetCommit(now, r, r.ResponseKind().(*kmsg.TxnOffsetCommitResponse), send)
		if eff.Producer != nil {
			eff.Producer.Verification = v
		}
		return eff
	}, failed)
}
