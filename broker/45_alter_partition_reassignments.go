package broker

// AlterPartitionReassignments (key 45), v0-1, runs on the controller: per partition,
// a replica list starts (or replaces) a reassignment and a null list cancels one, each
// recorded in the metadata log (metadata/reassignment.go); the controller completes a
// reassignment once every adding replica is in the ISR (controller/duties.go). Errors per
// partition, in Kafka's words: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT
// (empty, duplicate or unregistered brokers), NO_REASSIGNMENT_IN_PROGRESS (a cancel of
// nothing), INVALID_REPLICATION_FACTOR (v1 with allow_replication_factor_change false
// and a different replica count). A request naming more than 10,000 partitions is
// refused whole with POLICY_VIOLATION (limits.go). The answer comes once the records
// are committed; the data moves afterwards.

import (
	"context"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.AlterPartitionAssignments, 0, 1, (*Broker).respondFromController, apiOpts{
		authorize:  clusterOnlyCode(auth.OpAlter),
		controller: onController((*Broker).alterPartitionReassignments),
		fillError:  fillErrorAlterPartitionAssignments,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode == kerr.NotController.Code
		},
		adminChange: true,
		ownTimeout:  true,
	})
}

// alterPartitionReassignments runs on the controller.
func (b *Broker) alterPartitionReassignments(ctx context.Context, r *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = r.AllowReplicationFactorChange
	n := 0
	for _, t := range r.Topics {
		n += len(t.Partitions)
	}
	if n > controller.MaxResourcesPerRequest {
		err := controller.TooManyResources(n)
		fillErrorAlterPartitionAssignments(r, resp, kerr.PolicyViolation.Code, err)
		return resp
	}
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	cctx, cancel := b.waitTimeout(ctx, timeout)
	defer cancel()
	results := make([][]error, len(r.Topics))
	_, err := b.ctrl.Do(cctx, func(im *metadata.Image) ([]metadata.Record, error) {
		var records []metadata.Record
		// Each partition is planned against the image its earlier siblings leave, so
		// that a request naming one partition twice stays consistent.
		for ti, t := range r.Topics {
			results[ti] = make([]error, len(t.Partitions))
			for pi, rp := range t.Partitions {
				recs, err := planReassignment(im, t.Topic, rp, r.Version < 1 || r.AllowReplicationFactorChange)
				if err == nil && len(recs) > 0 {
					var next *metadata.Image
					if next, err = im.Apply(im.Offset, recs); err == nil {
						im = next
						records = append(records, recs...)
					}
				}
				results[ti][pi] = err
			}
		}
		return records, nil
	})
	for ti, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for pi, rp := range t.Partitions {
			out := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			out.Partition = rp.Partition
			perr := err
			if perr == nil && results[ti] != nil {
				perr = results[ti][pi]
			}
			if perr != nil {
				out.ErrorCode, out.ErrorMessage = b.errorCodeLogged(perr, "alter partition reassignments"), errorMessage(perr)
			}
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// planReassignment plans one partition's reassignment or, with null replicas, its
// cancellation.
func planReassignment(im *metadata.Image, topic string, rp kmsg.AlterPartitionAssignmentsRequestTopicPartition, allowRFChange bool) ([]metadata.Record, error) {
	t := im.Topic(topic)
	if t == nil {
		return nil, fmt.Errorf("%w: %s", metadata.ErrUnknownTopic, topic)
	}
	if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		return nil, fmt.Errorf("%w: %s-%d", metadata.ErrUnknownPartition, topic, rp.Partition)
	}
	p := t.Partitions[rp.Partition]
	if rp.Replicas == nil {
		return metadata.CancelReassignmentRecords(im, t, p)
	}
	if !allowRFChange && len(rp.Replicas) != len(p.OriginalReplicas()) {
		return nil, fmt.Errorf("%w: the reassignment of %s-%d changes the replication factor from %d to %d",
			metadata.ErrInvalidReplicationFactor, topic, rp.Partition, len(p.OriginalReplicas()), len(rp.Replicas))
	}
	return metadata.StartReassignmentRecords(im, t, p, rp.Replicas)
}

// fillErrorAlterPartitionAssignments is AlterPartitionAssignments's apiOpts.fillError.
func fillErrorAlterPartitionAssignments(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
	r.ErrorCode, r.ErrorMessage = code, errorMessage(cause)
}
