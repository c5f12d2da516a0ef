package broker

// DeleteRecords (key 21), v0-2. On each partition's leader: moves the log start offset
// to the given offset (-1: the high watermark), deleting the segments wholly below it;
// followers follow through the log_start_offset of their fetch answers. An offset past
// the high watermark is OFFSET_OUT_OF_RANGE; a partition this broker does not lead is
// NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION only from a caught-up image that
// lacks it). The low watermark answered is the leader's new log start offset.

import (
	"context"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(kmsg.DeleteRecords, 0, 2, (*Broker).handleDeleteRecords) }

func (b *Broker) handleDeleteRecords(ctx context.Context, req *rpc.Request) rpc.Result {
	return rpc.Respond(b.deleteRecords(req.Body.(*kmsg.DeleteRecordsRequest)))
}

func (b *Broker) deleteRecords(r *kmsg.DeleteRecordsRequest) *kmsg.DeleteRecordsResponse {
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			if isInternalTopic(t.Topic) {
				rp.ErrorCode = kerr.InvalidTopicException.Code // Kafka: "Cannot delete records of internal topics"
			} else if lp := b.partitions.get(t.Topic, p.Partition); lp == nil {
				rp.ErrorCode = b.noReplicaError(t.Topic, p.Partition)
			} else if low, err := lp.DeleteRecordsBefore(p.Offset); err != nil {
				rp.ErrorCode = b.errorCodeLogged(err, "delete records")
			} else {
				rp.LowWatermark = low
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
