package broker

// InitializeShareGroupState (key 83), v0: the group coordinator asks the share
// coordinator to start share partitions' durable state (a ShareSnapshot with the
// state epoch and start offset, no batches). A state epoch older than the
// partition's is FENCED_STATE_EPOCH; a negative partition INVALID_REQUEST, a
// topic-partition not in the image UNKNOWN_TOPIC_OR_PARTITION.
//
// Sent by brokers to the share coordinator (the leader of the key's
// __share_group_state partition, FindCoordinator key type 2); a partition whose key
// is not served here is NOT_COORDINATOR, one still loading
// COORDINATOR_LOAD_IN_PROGRESS, and the broker's share persister (share_persister.go)
// asks again. An empty group id is INVALID_GROUP_ID. Authorization: CLUSTER_ACTION on
// the cluster, as Kafka (otherwise every partition CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.InitializeShareGroupState, 0, 0, (*Broker).handleInitializeShareGroupState, apiOpts{
		authorize: clusterOnly(auth.OpClusterAction),
		fillError: fillShareError,
	})
}

func (b *Broker) handleInitializeShareGroupState(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.RespondLater(b.shareStates.InitializeShareGroupState(req.Body.(*kmsg.InitializeShareGroupStateRequest)))
}
