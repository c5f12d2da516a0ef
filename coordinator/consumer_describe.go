package coordinator

// ConsumerGroupDescribe (key 69) across the group coordinator's shards: each group is
// described by its own shard (Kafka's GroupCoordinatorService.consumerGroupDescribe).

import (
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe answers r from each group's shard, in r's order: an empty
// group id is INVALID_GROUP_ID, a group whose partition is not served here
// NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while it loads). names gives the
// topics' names (the metadata image); finish, when not nil, completes each group
// described without error (its AuthorizedOperations) on the shard's goroutine.
func (gc *GroupCoordinator) ConsumerGroupDescribe(r *kmsg.ConsumerGroupDescribeRequest, names group.TopicNamer,
	finish func(*kmsg.ConsumerGroupDescribeResponseGroup)) <-chan kmsg.Response {
	return Gather(len(r.Groups), func(i int, done func(kmsg.ConsumerGroupDescribeResponseGroup)) {
		gc.describeConsumerGroup(r.Groups[i], names, finish, done)
	}, func(results []kmsg.ConsumerGroupDescribeResponseGroup) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		resp.Groups = results
		return resp
	})
}

// describeConsumerGroup describes group id on its shard and gives the answer to done.
func (gc *GroupCoordinator) describeConsumerGroup(id string, names group.TopicNamer,
	finish func(*kmsg.ConsumerGroupDescribeResponseGroup), done func(kmsg.ConsumerGroupDescribeResponseGroup)) {
	if id == "" {
		done(consumerGroupRefused(id, kerr.InvalidGroupID.Code))
		return
	}
	gc.Submit(id, func(_ time.Time, s *group.Shard) group.Effects {
		g := s.ConsumerGroupDescribe(id, names)
		if finish != nil && g.ErrorCode == 0 {
			finish(&g)
		}
		done(g)
		return group.Effects{}
	}, func(code int16) { done(consumerGroupRefused(id, code)) })
}

// consumerGroupRefused is group id answered with an error code alone.
func consumerGroupRefused(id string, code int16) kmsg.ConsumerGroupDescribeResponseGroup {
	g := kmsg.NewConsumerGroupDescribeResponseGroup()
	g.Group, g.ErrorCode = id, code
	return g
}
