package broker

// AllocateProducerIds (key 67), v0, internal: a broker asks the controller for its next
// block of producer ids. The controller checks the broker epoch (BROKER_ID_NOT_REGISTERED,
// STALE_BROKER_EPOCH) and writes a ProducerIds record moving the cluster's next producer
// id up by controller.ProducerIDBlockSize; the block starts at the previous value. Decisions run one
// at a time on a fresh image after each new controller term's barrier, so no id is ever
// handed out twice, also across controller failover (an entry whose answer was lost only
// wastes its block).

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerInternalAPI(kmsg.AllocateProducerIDs, 0, 0, (*Broker).respondFromController, apiOpts{
		authorize:  clusterOnly(auth.OpClusterAction),
		controller: onController((*Broker).allocateProducerIDs),
		fillError:  fillErrorAllocateProducerIDs,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.AllocateProducerIDsResponse).ErrorCode == kerr.NotController.Code
		},
	})
}

// allocateProducerIDs runs on the controller (controller/producer_ids.go decides).
func (b *Broker) allocateProducerIDs(ctx context.Context, r *kmsg.AllocateProducerIDsRequest) *kmsg.AllocateProducerIDsResponse {
	resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	start, err := b.ctrl.AllocateProducerIDs(ctx, r.BrokerID, r.BrokerEpoch)
	if err != nil {
		resp.ErrorCode = b.errorCodeLogged(err, "allocate producer ids")
		return resp
	}
	resp.ProducerIDStart, resp.ProducerIDLen = start, controller.ProducerIDBlockSize
	return resp
}

// fillErrorAllocateProducerIDs is AllocateProducerIDs's apiOpts.fillError.
func fillErrorAllocateProducerIDs(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	r.ErrorCode = code
}
