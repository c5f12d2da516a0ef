package broker

// AlterPartitionReassignments (key 45), v0-1, runs on the controller: per partition,
// a replica list starts (or replaces) a reassignment and a null list cancels one, each
// recorded in the metadata log (metadata/reassignment.go); the controller completes a
// reassignment once every adding replica is in the ISR (controller/duties.go). Errors per
// partition, in Kafka's words: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT
// (empty, duplicate or unregistered brokers), NO_REASSIGNMENT_IN_PROGRESS (a cancel of
// nothing), INVALID_REPLICATION_FACTOR (v1 with allow_replication_factor_change false
// and a different replica count). A request naming more than 10,000 partitions is
// refused whole with POLICY_VIOLATION (controller/limits.go). The answer comes once the records
// are committed; the data moves afterwards.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
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

// alterPartitionReassignments runs on the controller: it decodes the partitions, asks
// the controller (controller/reassignments.go) and encodes the outcomes.
func (b *Broker) alterPartitionReassignments(ctx context.Context, r *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = r.AllowReplicationFactorChange
	var reqs []controller.Reassignment
	for _, t := range r.Topics {
		for _, rp := range t.Partitions {
			reqs = append(reqs, controller.Reassignment{Topic: t.Topic, Partition: rp.Partition, Replicas: rp.Replicas})
		}
	}
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	cctx, cancel := b.waitTimeout(ctx, timeout)
	defer cancel()
	results, err := b.ctrl.AlterPartitionReassignments(cctx, reqs, r.Version < 1 || r.AllowReplicationFactorChange)
	if err != nil {
		fillErrorAlterPartitionAssignments(r, resp, kerr.PolicyViolation.Code, err)
		return resp
	}
	i := 0
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, rp := range t.Partitions {
			out := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			out.Partition = rp.Partition
			if perr := results[i]; perr != nil {
				out.ErrorCode, out.ErrorMessage = b.errorCodeLogged(perr, "alter partition reassignments"), errorMessage(perr)
			}
			i++
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fillErrorAlterPartitionAssignments is AlterPartitionAssignments's apiOpts.fillError.
func fillErrorAlterPartitionAssignments(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
	r.ErrorCode, r.ErrorMessage = code, errorMessage(cause)
}
