package broker

// AlterConfigs (key 33), v0-2: the legacy, non-incremental form. The configs given
// replace every dynamic config of the resource (keys not named are deleted), with the
// same resources, validation and live effect as IncrementalAlterConfigs
// (44_incremental_alter_configs.go).

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.AlterConfigs, 0, 2, (*Broker).respondFromController, apiOpts{
		authorize:  authorizeAlterConfigs,
		controller: onController((*Broker).alterConfigs),
		fillError:  fillErrorAlterConfigs,
		isNotController: func(resp kmsg.Response) bool {
			return allNotController(resp.(*kmsg.AlterConfigsResponse).Resources, func(r kmsg.AlterConfigsResponseResource) int16 { return r.ErrorCode })
		},
		adminChange: true,
	})
}

// alterConfigs runs on the controller: it decodes each resource's configs, asks the
// controller (controller/configs.go) and encodes the outcomes.
func (b *Broker) alterConfigs(ctx context.Context, r *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	specs := make([]controller.ConfigsSpec, len(r.Resources))
	for i, res := range r.Resources {
		specs[i] = controller.ConfigsSpec{Resource: metadata.ConfigResource{Type: metadata.ConfigResourceType(res.ResourceType), Name: res.ResourceName}, Replace: true}
		for _, c := range res.Configs {
			specs[i].Configs = append(specs[i].Configs, controller.ConfigAlteration{Name: c.Name, Value: c.Value})
		}
	}
	errs := b.ctrl.AlterConfigs(ctx, specs, r.ValidateOnly, defaultAdminTimeout)
	for i, res := range r.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		if err := errs[i]; err != nil {
			rr.ErrorCode = b.errorCodeLogged(err, "alter configs")
			rr.ErrorMessage = errorMessage(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// authorizeAlterConfigs is AlterConfigs's authorization rule (checkRequest).
func authorizeAlterConfigs(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	z := checksOf(b, req)
	var denied []kmsg.AlterConfigsRequestResource
	r.Resources, denied = split(r.Resources, func(res kmsg.AlterConfigsRequestResource) bool {
		return z.configOK(res.ResourceType, res.ResourceName, auth.OpAlterConfigs)
	})
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.AlterConfigsResponse)
		for _, res := range denied {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, configDeniedCode(res.ResourceType)
			out.Resources = append(out.Resources, rr)
		}
	})
}

// fillErrorAlterConfigs is AlterConfigs's apiOpts.fillError.
func fillErrorAlterConfigs(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.AlterConfigsResponse)
	for _, res := range req.(*kmsg.AlterConfigsRequest).Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, code, errorMessage(cause)
		r.Resources = append(r.Resources, rr)
	}
}
