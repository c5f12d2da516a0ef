package broker

// The controller side of the cluster operations (CreatePartitions, configs,
// ElectLeaders): in-process dispatch on the controller and NOT_CONTROLLER answers for
// forwarded requests. Kept apart from lifecycle.go so each operation stays in its own
// handler file.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterOpsLocal handles a cluster operation on this node's controller; false for
// requests it does not know.
func (b *Broker) clusterOpsLocal(ctx context.Context, req kmsg.Request) (kmsg.Response, bool) {
	switch r := req.(type) {
	case *kmsg.CreatePartitionsRequest:
		return b.createPartitions(ctx, r), true
	case *kmsg.IncrementalAlterConfigsRequest:
		return b.incrementalAlterConfigs(ctx, r), true
	case *kmsg.AlterConfigsRequest:
		return b.alterConfigs(ctx, r), true
	case *kmsg.ElectLeadersRequest:
		return b.electLeaders(ctx, r), true
	case *kmsg.CreateACLsRequest:
		return b.createACLs(ctx, r), true
	case *kmsg.DeleteACLsRequest:
		return b.deleteACLs(ctx, r), true
	case *kmsg.AlterClientQuotasRequest:
		return b.alterClientQuotas(ctx, r), true
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return b.alterUserScramCredentials(ctx, r), true
	}
	return nil, false
}

// clusterOpsNotController fills resp, the answer to req, with code on every resource.
func clusterOpsNotController(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	switch r := resp.(type) {
	case *kmsg.CreatePartitionsResponse:
		for _, t := range req.(*kmsg.CreatePartitionsRequest).Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, errorMessage(cause)
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, res := range req.(*kmsg.IncrementalAlterConfigsRequest).Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, code, errorMessage(cause)
			r.Resources = append(r.Resources, rr)
		}
	case *kmsg.AlterConfigsResponse:
		for _, res := range req.(*kmsg.AlterConfigsRequest).Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, code, errorMessage(cause)
			r.Resources = append(r.Resources, rr)
		}
	case *kmsg.ElectLeadersResponse:
		r.ErrorCode = code
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		ar := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
		for _, u := range scramUserNames(ar) {
			rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			rr.User, rr.ErrorCode, rr.ErrorMessage = u, code, errorMessage(cause)
			r.Results = append(r.Results, rr)
		}
	default:
		securityNotController(req, resp, code, cause)
	}
}

// ErrInvalidRequest is a request Kafka refuses with INVALID_REQUEST (a resource named
// twice, a config of the wrong resource type).
var ErrInvalidRequest = errors.New("broker: invalid request")

// defaultAdminTimeout bounds a cluster operation whose request carries no timeout.
const defaultAdminTimeout = 30 * time.Second
