package broker

// AlterPartition (key 56), v0-3, internal: a partition leader asks the controller to
// change the ISR. The controller (controller.AlterISR) checks, per partition and in Kafka's order: unknown
// partition (UNKNOWN_TOPIC_OR_PARTITION); epochs newer than its own (NOT_CONTROLLER);
// an older leader epoch (FENCED_LEADER_EPOCH); a sender that is not the leader
// (INVALID_REQUEST); an older partition epoch (INVALID_UPDATE_VERSION); an ISR that is
// not a subset of the replicas or lacks the leader (INVALID_REQUEST); a member that is
// fenced or unregistered, or (v3, KIP-903) registered at another broker epoch than the
// one the leader names for it (INELIGIBLE_REPLICA). A valid change is one PartitionChange
// record (partition epoch +1); the answer carries the committed state.

import (
	"context"
	"slices"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
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

// alterPartition runs on the controller (controller/isr.go decides).
func (b *Broker) alterPartition(ctx context.Context, r *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
	var changes []controller.ISRChange
	for _, t := range r.Topics {
		for _, rp := range t.Partitions {
			ch := controller.ISRChange{Topic: t.Topic, TopicID: metadata.Uuid(t.TopicID), ByID: r.Version >= 2,
				Partition: rp.Partition, LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, ISR: rp.NewISR}
			if r.Version >= 3 {
				ch.ISR = nil
				for _, e := range rp.NewEpochISR {
					ch.ISR = append(ch.ISR, e.BrokerID)
					ch.BrokerEpochs = append(ch.BrokerEpochs, e.BrokerEpoch)
				}
			}
			changes = append(changes, ch)
		}
	}
	outcomes, err := b.ctrl.AlterISR(ctx, r.BrokerID, r.BrokerEpoch, changes)
	if err != nil {
		resp.ErrorCode = b.errorCodeLogged(err, "alter partition")
		return resp
	}
	im := b.Image()
	i := 0
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
			if code := errorCode(outcomes[i]); code != 0 {
				out.ErrorCode = code
			} else if tp := im.Topic(name); tp != nil && int(rp.Partition) < len(tp.Partitions) {
				p := tp.Partitions[rp.Partition]
				out.LeaderID, out.LeaderEpoch, out.ISR, out.PartitionEpoch = p.Leader, p.LeaderEpoch, slices.Clone(p.ISR), p.PartitionEpoch
			}
			i++
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
