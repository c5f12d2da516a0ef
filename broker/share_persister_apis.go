package broker

// The persister's shareleader.Persister methods over persist (share_persister.go).
// Write and ReadSummary are sent at v1, so that the delivery-complete count
// (KIP-1226) travels whatever version the caller set.

import (
	"context"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitializeState sends InitializeShareGroupState (83) to the share coordinators.
func (p *sharePersister) InitializeState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	return persistAs[*kmsg.InitializeShareGroupStateRequest, *kmsg.InitializeShareGroupStateResponse](ctx, p, req, (*coordinator.ShareCoordinator).InitializeShareGroupState)
}

// ReadState sends ReadShareGroupState (84) to the share coordinators.
func (p *sharePersister) ReadState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	return persistAs[*kmsg.ReadShareGroupStateRequest, *kmsg.ReadShareGroupStateResponse](ctx, p, req, (*coordinator.ShareCoordinator).ReadShareGroupState)
}

// WriteState sends WriteShareGroupState (85) v1 to the share coordinators.
func (p *sharePersister) WriteState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	r := *req
	r.Version = 1
	return persistAs[*kmsg.WriteShareGroupStateRequest, *kmsg.WriteShareGroupStateResponse](ctx, p, &r, (*coordinator.ShareCoordinator).WriteShareGroupState)
}

// DeleteState sends DeleteShareGroupState (86) to the share coordinators.
func (p *sharePersister) DeleteState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	return persistAs[*kmsg.DeleteShareGroupStateRequest, *kmsg.DeleteShareGroupStateResponse](ctx, p, req, (*coordinator.ShareCoordinator).DeleteShareGroupState)
}

// ReadStateSummary sends ReadShareGroupStateSummary (87) v1 to the share coordinators.
func (p *sharePersister) ReadStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	r := *req
	r.Version = 1
	return persistAs[*kmsg.ReadShareGroupStateSummaryRequest, *kmsg.ReadShareGroupStateSummaryResponse](ctx, p, &r, (*coordinator.ShareCoordinator).ReadShareGroupStateSummary)
}

// persistAs is persist answering with req's response type.
func persistAs[Req kmsg.Request, Resp kmsg.Response](ctx context.Context, p *sharePersister, req Req,
	local func(*coordinator.ShareCoordinator, Req) <-chan kmsg.Response) (Resp, error) {
	resp, err := persist(ctx, p, req, local)
	if err != nil {
		var none Resp
		return none, err
	}
	return resp.(Resp), nil
}
