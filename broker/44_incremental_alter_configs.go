package broker

// IncrementalAlterConfigs (key 44), v0-1. Topics (resource type 2), brokers (type 4:
// a broker id for DYNAMIC_BROKER_CONFIG, empty for the cluster-wide
// DYNAMIC_DEFAULT_BROKER_CONFIG) and consumer groups (type 32, KIP-848: a group id,
// whether or not the group exists; ALTER_CONFIGS on the group; values within the
// broker's group.consumer.* bounds; group_configs.go). Operations SET, DELETE, APPEND and SUBTRACT (the last
// two on LIST configs only). Each resource is validated against the property table
// (unknown names, values and properties that cannot change at run time are
// INVALID_CONFIG with Kafka's message) and committed as one entry of Config records; a
// resource named twice is INVALID_REQUEST. Every broker applies the records from its
// image, so the change takes effect without a restart. Turning
// unclean.leader.election.enable on elects leaders for leaderless partitions.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.IncrementalAlterConfigs, 0, 1, (*Broker).respondFromController, apiOpts{
		authorize:  authorizeIncrementalAlterConfigs,
		controller: onController((*Broker).incrementalAlterConfigs),
		fillError:  fillErrorIncrementalAlterConfigs,
		isNotController: func(resp kmsg.Response) bool {
			return allNotController(resp.(*kmsg.IncrementalAlterConfigsResponse).Resources, func(r kmsg.IncrementalAlterConfigsResponseResource) int16 { return r.ErrorCode })
		},
		adminChange: true,
	})
}

// incrementalAlterConfigs runs on the controller: it decodes each resource's
// operations, asks the controller (controller/configs.go) and encodes the outcomes.
func (b *Broker) incrementalAlterConfigs(ctx context.Context, r *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	specs := make([]controller.ConfigsSpec, len(r.Resources))
	for i, res := range r.Resources {
		specs[i].Resource = metadata.ConfigResource{Type: metadata.ConfigResourceType(res.ResourceType), Name: res.ResourceName}
		for _, c := range res.Configs {
			specs[i].Configs = append(specs[i].Configs, controller.ConfigAlteration{Name: c.Name, Op: controller.ConfigOp(c.Op), Value: c.Value})
		}
	}
	errs := b.ctrl.AlterConfigs(ctx, specs, r.ValidateOnly, defaultAdminTimeout)
	for i, res := range r.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		if err := errs[i]; err != nil {
			rr.ErrorCode = b.errorCodeLogged(err, "incremental alter configs")
			rr.ErrorMessage = errorMessage(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// authorizeIncrementalAlterConfigs is IncrementalAlterConfigs's authorization rule
// (checkRequest).
func authorizeIncrementalAlterConfigs(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	z := checksOf(b, req)
	var denied []kmsg.IncrementalAlterConfigsRequestResource
	r.Resources, denied = split(r.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) bool {
		return z.configOK(res.ResourceType, res.ResourceName, auth.OpAlterConfigs)
	})
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range denied {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, configDeniedCode(res.ResourceType)
			out.Resources = append(out.Resources, rr)
		}
	})
}

// fillErrorIncrementalAlterConfigs is IncrementalAlterConfigs's apiOpts.fillError.
func fillErrorIncrementalAlterConfigs(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.IncrementalAlterConfigsResponse)
	for _, res := range req.(*kmsg.IncrementalAlterConfigsRequest).Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, code, errorMessage(cause)
		r.Resources = append(r.Resources, rr)
	}
}
