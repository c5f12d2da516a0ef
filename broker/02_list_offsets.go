package broker

// ListOffsets (key 2), v1-7: -1 latest (the high watermark; under read_committed,
// isolation_level 1 from v2, the last stable offset), -2 earliest (log start), -3 (v7) the record with
// the largest timestamp, and T >= 0 the first record with timestamp >= T below the high
// watermark (offset -1 when there is none). v4+ reports leader epochs and applies
// KIP-320 fencing with current_leader_epoch. As in Kafka, replica_id -2 (the debugging
// replica) may ask any replica, leader or follower, and a broker or debugging replica id
// reads without isolation: latest is that replica's log end offset and time lookups
// reach it too.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ListOffsets, 1, 7, (*Broker).handleListOffsets, apiOpts{
		authorize:       authorizeListOffsets,
		partitionScoped: true,
	})
}

func (b *Broker) handleListOffsets(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = p.Partition
			sp.ErrorCode = b.listOffset(&sp, t.Topic, p, r.ReplicaID, r.Version, r.IsolationLevel == 1)
			if sp.ErrorCode != 0 {
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return rpc.Respond(resp)
}

// debuggingReplicaID is ListOffsets' replica id for tools that may ask any replica.
const debuggingReplicaID = -2

func (b *Broker) listOffset(sp *kmsg.ListOffsetsResponseTopicPartition, topic string, p kmsg.ListOffsetsRequestTopicPartition, replicaID int32, version int16, readCommitted bool) int16 {
	lp := b.partitions.get(topic, p.Partition)
	if lp == nil {
		return b.noReplicaError(topic, p.Partition)
	}
	scope := replication.LeaderOnly
	if replicaID == debuggingReplicaID {
		scope = replication.AnyReplica
	}
	if err := lp.CheckEpoch(p.CurrentLeaderEpoch, scope); err != nil {
		return b.errorCodeLogged(err, "list offsets")
	}
	st := lp.State()
	sp.Timestamp, sp.LeaderEpoch = -1, st.LeaderEpoch
	isolated := replicaID == -1 // consumers read up to the HW; brokers and tools to the LEO
	end := st.HighWatermark
	switch {
	case !isolated:
		end = st.LogEndOffset
	case readCommitted:
		end = st.LastStableOffset
	}
	// A new leader whose high watermark has not reached the start of its epoch cannot
	// answer a consumer's latest query, nor a time query whose answer is not below the
	// HW yet (Kafka's rule; before v5 the code is LEADER_NOT_AVAILABLE).
	notAvailable := int16(0)
	if isolated && st.HighWatermark < st.LeaderEpochStartOffset {
		notAvailable = kerr.OffsetNotAvailable.Code
		if version < 5 {
			notAvailable = kerr.LeaderNotAvailable.Code
		}
	}
	switch p.Timestamp {
	case -1: // latest
		if notAvailable != 0 {
			return notAvailable
		}
		sp.Offset = end
		return 0
	case -2: // earliest
		sp.Offset = st.LogStartOffset
		sp.LeaderEpoch = epochAt(lp, st.LogStartOffset)
		return 0
	}
	var found segment.TimestampOffset
	var ok bool
	err := lp.WithLog(func(l *segment.Log) (err error) {
		if p.Timestamp == -3 {
			found, ok, err = l.MaxTimestampOffset()
		} else {
			found, ok, err = l.OffsetForTimestamp(p.Timestamp)
		}
		return err
	})
	if err != nil {
		return b.errorCodeLogged(err, "list offsets")
	}
	if !ok || found.Offset >= end {
		if notAvailable != 0 {
			return notAvailable
		}
		sp.Offset, sp.LeaderEpoch = -1, -1
		return 0
	}
	sp.Offset, sp.Timestamp, sp.LeaderEpoch = found.Offset, found.Timestamp, epochAt(lp, found.Offset)
	return 0
}

// epochAt returns the leader epoch in which offset was written, from the epoch cache.
func epochAt(lp *localPartition, offset int64) int32 {
	epoch := int32(-1)
	lp.WithLog(func(l *segment.Log) error {
		for _, e := range l.LeaderEpochs().Entries() {
			if e.StartOffset <= offset {
				epoch = e.Epoch
			}
		}
		return nil
	})
	return epoch
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
