package broker

// ReadShareGroupState (key 84), v0: a share partition's new leader reads its
// durable state (state epoch, start offset, state batches). A leader epoch older than
// the one recorded is FENCED_LEADER_EPOCH; a newer one is recorded first (a
// ShareUpdate) so that the previous leader's writes are fenced. A partition never
// initialized answers start offset -1, state epoch 0.
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
	registerAPI(kmsg.ReadShareGroupState, 0, 0, (*Broker).handleReadShareGroupState, apiOpts{
		authorize: clusterOnly(auth.OpClusterAction),
		fillError: fillShareError,
	})
}

func (b *Broker) handleReadShareGroupState(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.RespondLater(b.shareStates.ReadShareGroupState(req.Body.(*kmsg.ReadShareGroupStateRequest)))
}
