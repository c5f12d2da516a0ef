package cli

// `petrel configs` on consumer groups (--entity-type groups, as kafka-configs.sh in
// Kafka 4): the GROUP config resource (KIP-848) through DescribeConfigs and
// IncrementalAlterConfigs, which kadm has no helpers for.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeGroupConfigs is DescribeConfigs (with synonyms) of group, in kadm's form.
func describeGroupConfigs(ctx context.Context, cl *kgo.Client, group string) (kadm.ResourceConfigs, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var out kadm.ResourceConfigs
	for _, r := range resp.Resources {
		rc := kadm.ResourceConfig{Name: r.ResourceName, Err: kerr.ErrorForCode(r.ErrorCode), ErrMessage: derefString(r.ErrorMessage)}
		for _, c := range r.Configs {
			cfg := kadm.Config{Key: c.Name, Value: c.Value, Sensitive: c.IsSensitive, Source: c.Source}
			for _, s := range c.ConfigSynonyms {
				cfg.Synonyms = append(cfg.Synonyms, kadm.ConfigSynonym{Key: s.Name, Value: s.Value, Source: s.Source})
			}
			rc.Configs = append(rc.Configs, cfg)
		}
		out = append(out, rc)
	}
	return out, nil
}

// alterGroupConfigs is IncrementalAlterConfigs of group's configs.
func alterGroupConfigs(ctx context.Context, cl *kgo.Client, alters []kadm.AlterConfig, group string) (kadm.AlterConfigsResponses, error) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, a := range alters {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = a.Name, a.Value
		if a.Op == kadm.DeleteConfig {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var out kadm.AlterConfigsResponses
	for _, r := range resp.Resources {
		out = append(out, kadm.AlterConfigsResponse{Name: r.ResourceName, Err: kerr.ErrorForCode(r.ErrorCode), ErrMessage: derefString(r.ErrorMessage)})
	}
	return out, nil
}

// listGroupIDs is every group's id (ListGroups), for describe without a name.
func listGroupIDs(ctx context.Context, adm *kadm.Client) ([]string, error) {
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	ids := groups.Groups()
	slices.Sort(ids)
	return ids, nil
}
