package broker

// DeleteShareGroupState (key 86), v0: the group coordinator drops share partitions'
// durable state (a tombstone); a partition without state is answered at once.
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
	registerAPI(kmsg.DeleteShareGroupState, 0, 0, (*Broker).handleDeleteShareGroupState, apiOpts{
		authorize: clusterOnly(auth.OpClusterAction),
		fillError: fillShareError,
	})
}

func (b *Broker) handleDeleteShareGroupState(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.RespondLater(b.shareStates.DeleteShareGroupState(req.Body.(*kmsg.DeleteShareGroupStateRequest)))
}
