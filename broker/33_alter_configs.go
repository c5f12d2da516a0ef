package broker

// AlterConfigs (key 33), v0-2: the legacy, non-incremental form. The configs given
// replace every dynamic config of the resource (keys not named are deleted), with the
// same resources, validation and live effect as IncrementalAlterConfigs
// (44_incremental_alter_configs.go).

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.AlterConfigs, 0, 2, (*Broker).respondFromController, apiOpts{
		authorize:   authorizeAlterConfigs,
		controller:  onController((*Broker).alterConfigs),
		fillError:   fillErrorAlterConfigs,
		adminChange: true,
	})
}

// alterConfigs runs on the controller.
func (b *Broker) alterConfigs(ctx context.Context, r *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	seen := map[metadata.ConfigResource]int{}
	for _, res := range r.Resources {
		seen[metadata.ConfigResource{Type: metadata.ConfigResourceType(res.ResourceType), Name: res.ResourceName}]++
	}
	for _, res := range r.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		cres := metadata.ConfigResource{Type: metadata.ConfigResourceType(res.ResourceType), Name: res.ResourceName}
		plan := func(im *metadata.Image) ([]metadata.Record, error) {
			if seen[cres] > 1 {
				return nil, fmt.Errorf("%w: resource %q is listed more than once", ErrInvalidRequest, res.ResourceName)
			}
			named := map[string]bool{}
			var changes []config.Change
			for _, c := range res.Configs {
				if c.Value == nil {
					return nil, config.InvalidConfigError(fmt.Sprintf("Null value not supported for : %s", c.Name))
				}
				named[c.Name] = true
				changes = append(changes, config.Change{Name: c.Name, Value: c.Value})
			}
			for _, name := range sortedKeys(im.ResourceConfigs(cres)) {
				if !named[name] {
					changes = append(changes, config.Change{Name: name, Value: nil})
				}
			}
			return configRecords(im, cres, changes)
		}
		if err := b.commitConfigs(ctx, r.ValidateOnly, plan); err != nil {
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
