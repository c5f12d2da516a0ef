package broker

// IncrementalAlterConfigs (key 44), v0-1. Topics (resource type 2) and brokers (type 4:
// a broker id for DYNAMIC_BROKER_CONFIG, empty for the cluster-wide
// DYNAMIC_DEFAULT_BROKER_CONFIG). Operations SET, DELETE, APPEND and SUBTRACT (the last
// two on LIST configs only). Each resource is validated against the property table
// (unknown names, values and properties that cannot change at run time are
// INVALID_CONFIG with Kafka's message) and committed as one entry of Config records; a
// resource named twice is INVALID_REQUEST. Every broker applies the records from its
// image, so the change takes effect without a restart. Turning
// unclean.leader.election.enable on elects leaders for leaderless partitions.

import (
	"context"
	"fmt"
	"sync"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.IncrementalAlterConfigs, 0, 1, (*Broker).respondFromController, apiOpts{
		authorize:   authorizeIncrementalAlterConfigs,
		controller:  onController((*Broker).incrementalAlterConfigs),
		fillError:   fillErrorIncrementalAlterConfigs,
		adminChange: true,
	})
}

// incrementalAlterConfigs runs on the controller.
func (b *Broker) incrementalAlterConfigs(ctx context.Context, r *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	seen := map[metadata.ConfigResource]int{}
	for _, res := range r.Resources {
		seen[metadata.ConfigResource{Type: metadata.ConfigResourceType(res.ResourceType), Name: res.ResourceName}]++
	}
	for _, res := range r.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		cres := metadata.ConfigResource{Type: metadata.ConfigResourceType(res.ResourceType), Name: res.ResourceName}
		plan := func(im *metadata.Image) ([]metadata.Record, error) {
			if seen[cres] > 1 {
				return nil, fmt.Errorf("%w: resource %q is listed more than once", ErrInvalidRequest, res.ResourceName)
			}
			changes, err := b.incrementalChanges(im, cres, res.Configs)
			if err != nil {
				return nil, err
			}
			return configRecords(im, cres, changes)
		}
		err := b.commitConfigs(ctx, r.ValidateOnly, plan)
		if err != nil {
			rr.ErrorCode = b.errorCodeLogged(err, "incremental alter configs")
			rr.ErrorMessage = errorMessage(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// incrementalChanges turns the request's operations into keys to set or delete.
func (b *Broker) incrementalChanges(im *metadata.Image, res metadata.ConfigResource, configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]config.Change, error) {
	var out []config.Change
	for _, c := range configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return nil, config.InvalidConfigError(fmt.Sprintf("Null value not supported for : %s", c.Name))
			}
			out = append(out, config.Change{Name: c.Name, Value: c.Value})
		case kmsg.IncrementalAlterConfigOpDelete:
			out = append(out, config.Change{Name: c.Name, Value: nil})
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !config.ListType(res.Type, c.Name) {
				return nil, config.InvalidConfigError(fmt.Sprintf("Config value append is not allowed for config key: %s", c.Name))
			}
			if c.Value == nil {
				return nil, config.InvalidConfigError(fmt.Sprintf("Null value not supported for : %s", c.Name))
			}
			current := b.currentConfigValue(im, res, c.Name)
			v := config.AppendListValue(current, *c.Value)
			if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
				v = config.SubtractListValue(current, *c.Value)
			}
			out = append(out, config.Change{Name: c.Name, Value: &v})
		default:
			return nil, fmt.Errorf("%w: unknown config operation %d", ErrInvalidRequest, c.Op)
		}
	}
	return out, nil
}

// currentConfigValue is a config's value before a change: the resource's own entry,
// else its effective value.
func (b *Broker) currentConfigValue(im *metadata.Image, res metadata.ConfigResource, name string) string {
	if v, ok := im.Config(res, name); ok {
		return v
	}
	if res.Type == metadata.TopicResource {
		return b.topicConfigsFor(im, res.Name)[name].Value
	}
	v, _ := b.cfg.brokerValue(name)
	return v
}

// commitConfigs plans a resource's Config records on the controller and commits them
// (or only validates them), then, when they turn unclean leader election on, elects
// leaders for leaderless partitions that may now have one.
func (b *Broker) commitConfigs(ctx context.Context, validateOnly bool, plan func(*metadata.Image) ([]metadata.Record, error)) error {
	cctx, cancel := b.waitTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	if validateOnly {
		_, err := plan(b.Image())
		return err
	}
	// Plans run on the controller goroutine, possibly after ctx ended here: they hand
	// their records over under mu.
	var mu sync.Mutex
	var planned []metadata.Record
	_, err := b.ctrl.Do(cctx, func(im *metadata.Image) ([]metadata.Record, error) {
		records, err := plan(im)
		mu.Lock()
		planned = records
		mu.Unlock()
		return records, err
	})
	mu.Lock()
	unclean := config.EnablesUnclean(planned)
	stored := planned
	mu.Unlock()
	if err == nil {
		b.warnInertConfigs(stored)
	}
	if err != nil || !unclean {
		return err
	}
	var before *metadata.Image
	var elected []metadata.Record
	if _, err := b.ctrl.Do(cctx, func(im *metadata.Image) ([]metadata.Record, error) {
		records := metadata.ElectLeaderlessRecords(im, func(id int32) bool { return im.Acceptable(id) }, b.uncleanAllowed(im))
		mu.Lock()
		before, elected = im, records
		mu.Unlock()
		return records, nil
	}); err != nil {
		b.logger.Warn("electing leaders after enabling unclean leader election", "error", err)
		return nil // the config is committed; the next unfence retries the elections
	}
	mu.Lock()
	defer mu.Unlock()
	b.ctrl.LogUncleanElections(before, elected)
	return nil
}

// warnInertConfigs logs each stored broker config that Petrel does not act on
// (config.InertBrokerConfig), as a start-up property of that kind is warned about.
func (b *Broker) warnInertConfigs(records []metadata.Record) {
	for _, r := range records {
		c, ok := r.(metadata.ConfigRecord)
		if !ok || c.ResourceType != metadata.BrokerResource || c.Value == nil {
			continue
		}
		if u, inert := config.InertBrokerConfig(c.Name); inert {
			b.logger.Warn("stored a broker config Petrel does not act on", "config", c.Name, "broker", c.ResourceName, "why", u.Note)
		}
	}
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
