package broker

// ListOffsets (key 2), v1-10: the lookup is the replica's (replication/list_offsets.go:
// latest, earliest over both tiers, v8's earliest local (-4, KIP-405: the local log
// start offset), v9's latest tiered (-5: the highest offset copied to remote storage,
// -1 when none or without remote storage), the largest timestamp, a time; KIP-320
// fencing from v4; the debugging replica id -2). v10's TimeoutMillis bounds the remote
// lookup of a time below the local log start; every other lookup is local and answered
// at once. Describe on the topic is its authorization rule.

import (
	"context"
	"errors"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ListOffsets, 1, 10, (*Broker).handleListOffsets, apiOpts{
		authorize:       authorizeListOffsets,
		partitionScoped: true,
	})
}

func (b *Broker) handleListOffsets(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	if r.Version >= 10 && r.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(r.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	for _, t := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = p.Partition
			sp.ErrorCode = b.listOffset(ctx, &sp, t.Topic, p, r.ReplicaID, r.Version, r.IsolationLevel == 1)
			if sp.ErrorCode != 0 {
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return rpc.Respond(resp)
}

// listOffset answers one partition's query into sp and returns its error code:
// OFFSET_NOT_AVAILABLE is LEADER_NOT_AVAILABLE before v5, as in Kafka.
func (b *Broker) listOffset(ctx context.Context, sp *kmsg.ListOffsetsResponseTopicPartition, topic string, p kmsg.ListOffsetsRequestTopicPartition, replicaID int32, version int16, readCommitted bool) int16 {
	lp := b.partitions.get(topic, p.Partition)
	if lp == nil {
		return b.noReplicaError(topic, p.Partition)
	}
	o, err := lp.ListOffsetContext(ctx, replication.OffsetQuery{Timestamp: p.Timestamp, CurrentLeaderEpoch: p.CurrentLeaderEpoch,
		ReplicaID: replicaID, ReadCommitted: readCommitted})
	if errors.Is(err, replication.ErrOffsetNotAvailable) && version < 5 {
		return kerr.LeaderNotAvailable.Code
	}
	if err != nil {
		return b.errorCodeLogged(err, "list offsets")
	}
	sp.Offset, sp.Timestamp, sp.LeaderEpoch = o.Offset, o.Timestamp, o.LeaderEpoch
	return 0
}

// authorizeListOffsets is ListOffsets's authorization rule (checkRequest).
func authorizeListOffsets(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	z := checksOf(b, req)
	var denied []kmsg.ListOffsetsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return z.topicOK(auth.OpDescribe, t.Topic) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.ListOffsetsResponse)
		for _, t := range denied {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.Timestamp, rp.Offset, rp.LeaderEpoch = p.Partition, codeTopicAuthz, -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	})
}
