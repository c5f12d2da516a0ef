package broker

// TxnOffsetCommit (key 28), v0-3: a transactional producer's offset commit, sent to the
// group's coordinator after AddOffsetsToTxn. The offsets are staged in the group's shard
// (group.Shard.TxnOffsetCommit) and become committed offsets when the transaction's
// COMMIT marker reaches the group's __consumer_offsets partition (WriteTxnMarkers), or
// are dropped on ABORT. Partitions of unknown topics are UNKNOWN_TOPIC_OR_PARTITION;
// INVALID_GROUP_ID for an empty group id; NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS when the group's partition is not served here.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(kmsg.TxnOffsetCommit, 0, 3, (*Broker).handleTxnOffsetCommit) }

func (b *Broker) handleTxnOffsetCommit(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	failed := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if r.Group == "" {
		return rpc.Respond(failed(kerr.InvalidGroupID.Code))
	}
	im := b.Image()
	for _, t := range r.Topics {
		topic := im.Topic(t.Topic)
		for _, p := range t.Partitions {
			if topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions) {
				return rpc.Respond(failed(kerr.UnknownTopicOrPartition.Code))
			}
		}
	}
	return b.groups.respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.TxnOffsetCommit(now, r, r.ResponseKind().(*kmsg.TxnOffsetCommitResponse), send)
	}, failed)
}

// completeGroupTransaction applies or drops producerID's staged offsets in the
// __consumer_offsets partition after its marker; it returns the outcome's code.
func (b *Broker) completeGroupTransaction(ctx context.Context, partition int32, producerID int64, commit bool) int16 {
	ch := make(chan int16, 1)
	done := func(code int16) {
		select {
		case ch <- code:
		default:
		}
	}
	b.groups.submitTo(partition, func(now time.Time, s *group.Shard) group.Effects {
		return s.CompleteTransaction(now, producerID, commit, done)
	}, done)
	select {
	case code := <-ch:
		return code
	case <-ctx.Done():
		return kerr.RequestTimedOut.Code
	}
}
