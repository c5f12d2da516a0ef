package broker

// OffsetForLeaderEpoch (key 23), v2-4 (librdkafka sends exactly v2): for each partition,
// after KIP-320 fencing with current_leader_epoch, the largest epoch at most the asked
// one and the offset where it ends on this leader (the log end offset for the latest
// epoch); (-1, -1) when unknown. Followers use it to truncate (KIP-279); consumers to
// detect truncation after a leader change.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.OffsetForLeaderEpoch, 2, 4, (*Broker).handleOffsetForLeaderEpoch, apiOpts{
		authorize:       authorizeOffsetForLeaderEpoch,
		partitionScoped: true,
	})
}

func (b *Broker) handleOffsetForLeaderEpoch(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			lp := b.partitions.get(t.Topic, p.Partition)
			switch {
			case lp == nil:
				rp.ErrorCode = b.noReplicaError(t.Topic, p.Partition)
			default:
				if err := lp.CheckLeaderEpoch(p.CurrentLeaderEpoch); err != nil {
					rp.ErrorCode = b.errorCodeLogged(err, "offset for leader epoch")
					break
				}
				rp.LeaderEpoch, rp.EndOffset = lp.EndOffsetForEpoch(p.LeaderEpoch)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return rpc.Respond(resp)
}

// authorizeOffsetForLeaderEpoch is OffsetForLeaderEpoch's authorization rule
// (checkRequest).
func authorizeOffsetForLeaderEpoch(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	z := checksOf(b, req)
	if r.Version >= 3 && r.ReplicaID >= 0 {
		if z.clusterOK(auth.OpClusterAction) {
			return authzDecision{}
		}
		denied := r.Topics
		r.Topics = nil
		return z.whole(func(resp kmsg.Response) { addEpochDenied(resp, denied) })
	}
	var denied []kmsg.OffsetForLeaderEpochRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return z.topicOK(auth.OpDescribe, t.Topic) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) { addEpochDenied(resp, denied) })
}

func addEpochDenied(resp kmsg.Response, denied []kmsg.OffsetForLeaderEpochRequestTopic) {
	out := resp.(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range denied {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, codeTopicAuthz, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}
