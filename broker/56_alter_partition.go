package broker

// AlterPartition (key 56), v0-3, internal: a partition leader asks the controller to
// change the ISR. The controller checks, per partition and in Kafka's order: unknown
// partition (UNKNOWN_TOPIC_OR_PARTITION); epochs newer than its own (NOT_CONTROLLER);
// an older leader epoch (FENCED_LEADER_EPOCH); a sender that is not the leader
// (INVALID_REQUEST); an older partition epoch (INVALID_UPDATE_VERSION); an ISR that is
// not a subset of the replicas or lacks the leader (INVALID_REQUEST); a member that is
// fenced or unregistered (INELIGIBLE_REPLICA). A valid change is one PartitionChange
// record (partition epoch +1); the answer carries the committed state.

import (
	"context"
	"fmt"
	"slices"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerInternalAPI(kmsg.AlterPartition, 0, 3, (*Broker).respondFromController, apiOpts{
		authorize:  clusterOnly(auth.OpClusterAction),
		controller: onController((*Broker).alterPartition),
		fillError:  fillErrorAlterPartition,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.AlterPartitionResponse).ErrorCode == kerr.NotController.Code
		},
	})
}

// alterPartition runs on the controller.
func (b *Broker) alterPartition(ctx context.Context, r *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
	type result struct {
		code int16
		p    *metadata.Partition
	}
	results := map[string]map[int32]*result{}
	_, err := b.ctrl.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		if br := im.Brokers[r.BrokerID]; br == nil || (r.BrokerEpoch >= 0 && br.Epoch != r.BrokerEpoch) {
			return nil, fmt.Errorf("%w: broker %d epoch %d", ErrStaleBrokerEpoch, r.BrokerID, r.BrokerEpoch)
		}
		var records []metadata.Record
		for _, t := range r.Topics {
			topic := im.Topic(t.Topic)
			if r.Version >= 2 {
				topic = im.TopicByID(t.TopicID)
			}
			name := t.Topic
			if topic != nil {
				name = topic.Name
			}
			results[name] = map[int32]*result{}
			for _, rp := range t.Partitions {
				res := &result{}
				results[name][rp.Partition] = res
				if topic == nil || rp.Partition < 0 || int(rp.Partition) >= len(topic.Partitions) {
					res.code = kerr.UnknownTopicOrPartition.Code
					continue
				}
				p := topic.Partitions[rp.Partition]
				res.p = p
				isr := rp.NewISR
				if r.Version >= 3 {
					isr = nil
					for _, e := range rp.NewEpochISR {
						isr = append(isr, e.BrokerID)
					}
				}
				switch {
				case rp.LeaderEpoch > p.LeaderEpoch || rp.PartitionEpoch > p.PartitionEpoch:
					res.code = kerr.NotController.Code
				case rp.LeaderEpoch < p.LeaderEpoch:
					res.code = kerr.FencedLeaderEpoch.Code
				case r.BrokerID != p.Leader:
					res.code = kerr.InvalidRequest.Code
				case rp.PartitionEpoch < p.PartitionEpoch:
					res.code = kerr.InvalidUpdateVersion.Code
				case !slices.Contains(isr, p.Leader) || slices.ContainsFunc(isr, func(id int32) bool { return !slices.Contains(p.Replicas, id) }):
					res.code = kerr.InvalidRequest.Code
				case slices.ContainsFunc(isr, func(id int32) bool { return !im.Acceptable(id) }):
					res.code = kerr.IneligibleReplica.Code
				default:
					records = append(records, metadata.PartitionChangeRecord{TopicID: topic.ID, PartitionID: p.ID, ISR: slices.Clone(isr)})
				}
			}
		}
		return records, nil
	})
	if err != nil {
		resp.ErrorCode = b.errorCodeLogged(err, "alter partition")
		return resp
	}
	im := b.Image()
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = t.Topic, t.TopicID
		for _, rp := range t.Partitions {
			out := kmsg.NewAlterPartitionResponseTopicPartition()
			out.Partition = rp.Partition
			name := t.Topic
			if tp := im.TopicByID(t.TopicID); r.Version >= 2 && tp != nil {
				name = tp.Name
			}
			if res := results[name][rp.Partition]; res != nil && res.code != 0 {
				out.ErrorCode = res.code
			} else if tp := im.Topic(name); tp != nil && int(rp.Partition) < len(tp.Partitions) {
				p := tp.Partitions[rp.Partition]
				out.LeaderID, out.LeaderEpoch, out.ISR, out.PartitionEpoch = p.Leader, p.LeaderEpoch, slices.Clone(p.ISR), p.PartitionEpoch
			}
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// alterISR sends a leader's ISR change to the controller (replication.Options.AlterISR),
// batched with this broker's other pending changes (isrBatcher).
func (b *Broker) alterISR(change replication.ISRChange) error {
	return b.isrChanges.submit(change)
}

// fillErrorAlterPartition is AlterPartition's apiOpts.fillError.
func fillErrorAlterPartition(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.AlterPartitionResponse)
	r.ErrorCode = code
}
