package broker

// ListConfigResources (key 74, KIP-1142; v0 was ListClientMetricsResources), v0-1:
// the config resources there are, as type and name. v0 lists the CLIENT_METRICS
// subscriptions; v1 the types asked (none: all of them) among Kafka's: TOPIC (every
// topic), BROKER and BROKER_LOGGER (every registered broker), CLIENT_METRICS (the
// subscriptions) and GROUP (the groups that have configs). Another type is
// UNSUPPORTED_VERSION. Needs DESCRIBE_CONFIGS on the cluster, as Kafka.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ListConfigResources, 0, 1, (*Broker).handleListConfigResources, apiOpts{
		authorize: clusterOnlyCode(auth.OpDescribeConfigs),
		fillError: func(_ kmsg.Request, resp kmsg.Response, code int16, _ error) {
			resp.(*kmsg.ListConfigResourcesResponse).ErrorCode = code
		},
	})
}

// listableConfigTypes are the types ListConfigResources v1 lists, in Kafka's order.
var listableConfigTypes = []int8{
	int8(kmsg.ConfigResourceTypeTopic), int8(kmsg.ConfigResourceTypeBroker), int8(kmsg.ConfigResourceTypeBrokerLogger),
	int8(kmsg.ConfigResourceTypeClientMetrics), int8(kmsg.ConfigResourceTypeGroupConfig),
}

var errUnlistableConfigType = errors.New("unsupported config resource type")

func (b *Broker) handleListConfigResources(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ListConfigResourcesRequest)
	resp := r.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	types := []int8{int8(kmsg.ConfigResourceTypeClientMetrics)}
	if r.Version >= 1 {
		types = listableConfigTypes
		if len(r.ResourceTypes) > 0 {
			types = r.ResourceTypes
		}
	}
	out, err := listConfigResources(b.Image(), types)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return rpc.Respond(resp)
	}
	resp.ConfigResources = out
	return rpc.Respond(resp)
}

// listConfigResources lists the resources of each type in types, names sorted.
func listConfigResources(im *metadata.Image, types []int8) ([]kmsg.ListConfigResourcesResponseConfigResource, error) {
	var out []kmsg.ListConfigResourcesResponseConfigResource
	add := func(t int8, names []string) {
		for _, n := range names {
			c := kmsg.NewListConfigResourcesResponseConfigResource()
			c.Name, c.Type = n, t
			out = append(out, c)
		}
	}
	withConfigs := func(t metadata.ConfigResourceType) []string {
		var names []string
		for res, cfgs := range im.Configs {
			if res.Type == t && len(cfgs) > 0 {
				names = append(names, res.Name)
			}
		}
		slices.Sort(names)
		return names
	}
	for _, t := range types {
		if !slices.Contains(listableConfigTypes, t) {
			return nil, errUnlistableConfigType
		}
	}
	for _, t := range slices.Compact(slices.Sorted(slices.Values(types))) {
		switch kmsg.ConfigResourceType(t) {
		case kmsg.ConfigResourceTypeTopic:
			add(t, slices.Sorted(maps.Keys(im.Topics)))
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
			var ids []string
			for _, id := range im.BrokerIDs() {
				ids = append(ids, strconv.Itoa(int(id)))
			}
			add(t, ids)
		case kmsg.ConfigResourceTypeClientMetrics:
			add(t, withConfigs(metadata.ClientMetricsResource))
		case kmsg.ConfigResourceTypeGroupConfig:
			add(t, withConfigs(metadata.GroupResource))
		}
	}
	return out, nil
}
