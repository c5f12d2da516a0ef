package shareleader

import (
	"fmt"

	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readStateRequest is ReadShareGroupState (key 84) for one share partition.
func readStateRequest(key share.Key, leaderEpoch int32) *kmsg.ReadShareGroupStateRequest {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = key.GroupID
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = key.Partition, leaderEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// stateOfRead finds key's answer in resp: its error, or its state (start offset -1
// when never initialized).
func stateOfRead(key share.Key, resp *kmsg.ReadShareGroupStateResponse) (share.State, error) {
	for _, t := range resp.Topics {
		if t.TopicID != key.TopicID {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition != key.Partition {
				continue
			}
			if p.ErrorCode != 0 {
				return share.State{}, &stateError{codeError{code: p.ErrorCode, what: fmt.Sprintf("reading the share state of %s/%d", key.GroupID, key.Partition)}}
			}
			st := share.State{StateEpoch: p.StateEpoch, StartOffset: p.StartOffset, DeliveryCompleteCount: -1}
			for _, b := range p.StateBatches {
				st.Batches = append(st.Batches, share.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
					DeliveryState: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
			}
			return st, nil
		}
	}
	return share.State{}, &stateError{codeError{code: kerr.UnknownServerError.Code, what: "the share coordinator did not answer for the partition"}}
}

// writeStateRequest is WriteShareGroupState (key 85) carrying change c of key, written
// with the partition leader's epoch (the coordinator fences older leaders) and the
// state epoch read at load.
func writeStateRequest(key share.Key, stateEpoch, leaderEpoch int32, c share.Change) *kmsg.WriteShareGroupStateRequest {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = key.GroupID
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch = key.Partition, stateEpoch, leaderEpoch
	p.StartOffset, p.DeliveryCompleteCount = c.StartOffset, c.DeliveryCompleteCount
	for _, b := range c.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset = b.FirstOffset, b.LastOffset
		sb.DeliveryState, sb.DeliveryCount = int8(b.DeliveryState), b.DeliveryCount
		p.StateBatches = append(p.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// writeOutcome is key's error in a WriteShareGroupState answer.
func writeOutcome(key share.Key, resp *kmsg.WriteShareGroupStateResponse) error {
	for _, t := range resp.Topics {
		if t.TopicID != key.TopicID {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition == key.Partition {
				if p.ErrorCode != 0 {
					return &stateError{codeError{code: p.ErrorCode, what: fmt.Sprintf("writing the share state of %s/%d", key.GroupID, key.Partition)}}
				}
				return nil
			}
		}
	}
	return &stateError{codeError{code: kerr.UnknownServerError.Code, what: "the share coordinator did not answer for the partition"}}
}
