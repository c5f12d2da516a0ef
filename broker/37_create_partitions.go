package broker

// CreatePartitions (key 37), v0-3. Raises a topic's partition count: new partitions are
// placed by the rule CreateTopics uses (Kafka's rack-unaware placement, continuing the
// partition numbering, with the topic's replication factor), or by an explicit
// assignment of one replica list per new partition. A count at or below the current one
// is INVALID_PARTITIONS; an assignment of the wrong length, size, or naming unknown or
// repeated brokers is INVALID_REPLICA_ASSIGNMENT; an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; a topic named twice is INVALID_REQUEST. validate_only
// checks without creating. The answer waits until the partitions are committed and this
// broker's new replicas are open (at most 2 s more).

import (
	"context"
	"fmt"
	"github.com/petrel-broker/petrel/controller"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.CreatePartitions, 0, 3, (*Broker).respondFromController, apiOpts{
		authorize:   authorizeCreatePartitions,
		controller:  onController((*Broker).createPartitions),
		fillError:   fillErrorCreatePartitions,
		adminChange: true,
		ownTimeout:  true,
	})
}

// createPartitions runs on the controller.
func (b *Broker) createPartitions(ctx context.Context, r *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	seen := map[string]int{}
	for _, t := range r.Topics {
		seen[t.Topic]++
	}
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var err error
		switch {
		case seen[t.Topic] > 1:
			err = fmt.Errorf("%w: topic %q is listed more than once", ErrInvalidRequest, t.Topic)
		case isInternalTopic(t.Topic):
			err = controller.InternalTopicError("add partitions to", t.Topic)
		case r.ValidateOnly:
			_, err = b.planPartitions(b.Image(), t)
		default:
			cctx, cancel := b.waitTimeout(ctx, timeout)
			var im *metadata.Image
			im, err = b.ctrl.Do(cctx, func(im *metadata.Image) ([]metadata.Record, error) {
				return b.planPartitions(im, t)
			})
			if err == nil {
				wctx, wcancel := context.WithTimeout(cctx, 2*time.Second)
				b.partitions.waitReconciled(wctx, im.Offset)
				wcancel()
			}
			cancel()
		}
		if err != nil {
			rt.ErrorCode = b.errorCodeLogged(err, "create partitions")
			rt.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// planPartitions returns the PartitionRecords that raise topic t.Topic to t.Count
// partitions.
func (b *Broker) planPartitions(im *metadata.Image, t kmsg.CreatePartitionsRequestTopic) ([]metadata.Record, error) {
	topic := im.Topic(t.Topic)
	if topic == nil {
		return nil, fmt.Errorf("%w: topic '%s' does not exist", metadata.ErrUnknownTopic, t.Topic)
	}
	current := int32(len(topic.Partitions))
	switch {
	case t.Count < current:
		return nil, fmt.Errorf("%w: topic currently has %d partitions, which is higher than the requested %d", metadata.ErrInvalidPartitions, current, t.Count)
	case t.Count == current:
		return nil, fmt.Errorf("%w: topic already has %d partitions", metadata.ErrInvalidPartitions, current)
	}
	added := int(t.Count - current)
	if int64(added) > controller.MaxPartitionsPerRequest {
		return nil, controller.TooManyPartitions(int64(added))
	}
	if err := controller.CheckRecordsPerUserOp(added); err != nil {
		return nil, err
	}
	rf := len(topic.Partitions[0].Replicas)
	var assignment [][]int32
	if t.Assignment != nil {
		if len(t.Assignment) != added {
			return nil, fmt.Errorf("%w: increasing the number of partitions by %d but %d assignments provided", metadata.ErrInvalidReplicaAssignment, added, len(t.Assignment))
		}
		for i, a := range t.Assignment {
			if len(a.Replicas) != rf {
				return nil, fmt.Errorf("%w: partition %d has %d replicas, the topic's replication factor is %d", metadata.ErrInvalidReplicaAssignment, int(current)+i, len(a.Replicas), rf)
			}
			for j, id := range a.Replicas {
				if _, ok := im.Brokers[id]; !ok || slices.Contains(a.Replicas[:j], id) {
					return nil, fmt.Errorf("%w: partition %d: broker %d is unknown or repeated", metadata.ErrInvalidReplicaAssignment, int(current)+i, id)
				}
			}
			assignment = append(assignment, a.Replicas)
		}
	} else {
		brokers := im.PlacementBrokerIDs() // unfenced and not cordoned (KIP-1066)
		if err := im.PlacementShortfall(rf); err != nil {
			return nil, err
		}
		n := max(len(brokers), 1)
		all, err := metadata.AssignReplicas(brokers, int(t.Count), rf, mrand.IntN(n), mrand.IntN(n))
		if err != nil {
			return nil, err
		}
		assignment = all[current:]
	}
	records := make([]metadata.Record, 0, added)
	for i, replicas := range assignment {
		records = append(records, newPartitionRecord(im, topic.ID, current+int32(i), replicas))
	}
	return records, nil
}

// newPartitionRecord creates a partition led by its first unfenced replica, with the
// unfenced replicas as its ISR (the first replica alone, leaderless, when all are
// fenced), as topic creation does.
func newPartitionRecord(im *metadata.Image, id metadata.Uuid, partition int32, replicas []int32) metadata.PartitionRecord {
	isr := slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return !im.Acceptable(r) })
	leader := int32(-1)
	if len(isr) > 0 {
		leader = isr[0]
	} else {
		isr = []int32{replicas[0]}
	}
	return metadata.PartitionRecord{TopicID: id, PartitionID: partition, Replicas: replicas, ISR: isr, Leader: leader}
}

// authorizeCreatePartitions is CreatePartitions's authorization rule (checkRequest).
func authorizeCreatePartitions(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	z := checksOf(b, req)
	var denied []kmsg.CreatePartitionsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return z.topicOK(auth.OpAlter, t.Topic) })
	return mergeErrors(len(denied) > 0, &kmsg.CreatePartitionsRequest{Topics: denied}, codeTopicAuthz, ErrTopicAuthorizationFailed)
}

// fillErrorCreatePartitions is CreatePartitions's apiOpts.fillError.
func fillErrorCreatePartitions(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.CreatePartitionsResponse)
	for _, t := range req.(*kmsg.CreatePartitionsRequest).Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, errorMessage(cause)
		r.Topics = append(r.Topics, rt)
	}
}
