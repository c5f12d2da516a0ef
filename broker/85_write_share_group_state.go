package broker

// WriteShareGroupState (key 85), v0-1 (v1: DeliveryCompleteCount, KIP-1226): the
// partition leader's changes, written as a ShareUpdate, or a ShareSnapshot every
// share.coordinator.snapshot.update.records.per.snapshot updates; answered once the
// high watermark passes the record (COORDINATOR_NOT_AVAILABLE after
// share.coordinator.write.timeout.ms). Older leader or state epochs are
// FENCED_LEADER_EPOCH and FENCED_STATE_EPOCH.
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
	registerAPI(kmsg.WriteShareGroupState, 0, 1, (*Broker).handleWriteShareGroupState, apiOpts{
		authorize: clusterOnly(auth.OpClusterAction),
		fillError: fillShareError,
	})
}

func (b *Broker) handleWriteShareGroupState(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.RespondLater(b.shareStates.WriteShareGroupState(req.Body.(*kmsg.WriteShareGroupStateRequest)))
}
