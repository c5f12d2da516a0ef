package shareleader

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Persister is Kafka's share-state Persister
// (org.apache.kafka.server.share.persister.Persister, DefaultStatePersister): the
// share coordinators' API, keys 83–87, with each (group, topic, partition) of a
// request routed to the share coordinator of its key ("group:topicId:partition", the
// __share_group_state partition FindCoordinator v6 names for key type 2) and the
// answers gathered into one response in the request's order. A partition whose
// coordinator cannot be reached gets its Kafka error code in the response
// (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...); the error is for a request
// that could not be tried at all (ctx done, the broker shutting down).
//
// The group coordinator initializes and deletes share state through it (share
// group heartbeats, DeleteGroups, the share group offsets admin APIs), the share
// partition manager reads and writes it, and the broker implements it.
type Persister interface {
	InitializeState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error)
	ReadState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error)
	WriteState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error)
	DeleteState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error)
	ReadStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error)
}
