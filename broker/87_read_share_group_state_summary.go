package broker

// ReadShareGroupStateSummary (key 87), v0-1 (v1: DeliveryCompleteCount): a share
// partition's state epoch, leader epoch and start offset, for
// DescribeShareGroupOffsets; nothing is fenced or written.
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
	registerAPI(kmsg.ReadShareGroupStateSummary, 0, 1, (*Broker).handleReadShareGroupStateSummary, apiOpts{
		authorize: clusterOnly(auth.OpClusterAction),
		fillError: fillShareError,
	})
}

func (b *Broker) handleReadShareGroupStateSummary(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.RespondLater(b.shareStates.ReadShareGroupStateSummary(req.Body.(*kmsg.ReadShareGroupStateSummaryRequest)))
}
