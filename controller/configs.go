package controller

// AlterConfigs' and IncrementalAlterConfigs' decision: a resource's changes validated
// against the property table and the image, as one entry of Config records; turning
// unclean leader election on elects leaders for leaderless partitions.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
)

// ConfigOp is an IncrementalAlterConfigs operation, with Kafka's numbers.
type ConfigOp int8

// The operations of IncrementalAlterConfigs.
const (
	ConfigSet      ConfigOp = 0
	ConfigDelete   ConfigOp = 1
	ConfigAppend   ConfigOp = 2
	ConfigSubtract ConfigOp = 3
)

// ConfigAlteration is one config of a resource to change.
type ConfigAlteration struct {
	Name  string
	Op    ConfigOp // ignored by a replacing ConfigsSpec: every config is set
	Value *string
}

// ConfigsSpec is one resource's changes.
type ConfigsSpec struct {
	Resource metadata.ConfigResource
	// Replace, for AlterConfigs, makes Configs the resource's whole set of dynamic
	// configs (those not named are deleted); otherwise Configs are IncrementalAlterConfigs'
	// operations.
	Replace bool
	Configs []ConfigAlteration
}

// AlterConfigs decides each resource on its own, each within timeout, and returns its
// error (nil: committed, or valid under validateOnly). A resource listed twice is
// refused (ErrInvalidRequest).
func (c *Controller) AlterConfigs(ctx context.Context, specs []ConfigsSpec, validateOnly bool, timeout time.Duration) []error {
	seen := map[metadata.ConfigResource]int{}
	for _, s := range specs {
		seen[s.Resource]++
	}
	errs := make([]error, len(specs))
	for i, s := range specs {
		plan := func(im *metadata.Image) ([]metadata.Record, error) {
			if seen[s.Resource] > 1 {
				return nil, fmt.Errorf("%w: resource %q is listed more than once", ErrInvalidRequest, s.Resource.Name)
			}
			changes, err := c.configChanges(im, s)
			if err != nil {
				return nil, err
			}
			return configRecords(im, s.Resource, changes, c.cfg.Properties)
		}
		cctx, cancel := c.bounded(ctx, timeout)
		errs[i] = c.commitConfigs(cctx, validateOnly, plan)
		cancel()
	}
	return errs
}

// configChanges turns a spec into the keys to set or delete.
func (c *Controller) configChanges(im *metadata.Image, s ConfigsSpec) ([]config.Change, error) {
	var out []config.Change
	if s.Replace {
		named := map[string]bool{}
		for _, a := range s.Configs {
			if a.Value == nil {
				return nil, config.InvalidConfigError(fmt.Sprintf("Null value not supported for : %s", a.Name))
			}
			named[a.Name] = true
			out = append(out, config.Change{Name: a.Name, Value: a.Value})
		}
		for _, name := range slices.Sorted(maps.Keys(im.ResourceConfigs(s.Resource))) {
			if !named[name] {
				out = append(out, config.Change{Name: name, Value: nil})
			}
		}
		return out, nil
	}
	for _, a := range s.Configs {
		switch a.Op {
		case ConfigSet:
			if a.Value == nil {
				return nil, config.InvalidConfigError(fmt.Sprintf("Null value not supported for : %s", a.Name))
			}
			out = append(out, config.Change{Name: a.Name, Value: a.Value})
		case ConfigDelete:
			out = append(out, config.Change{Name: a.Name, Value: nil})
		case ConfigAppend, ConfigSubtract:
			if !config.ListType(s.Resource.Type, a.Name) {
				return nil, config.InvalidConfigError(fmt.Sprintf("Config value append is not allowed for config key: %s", a.Name))
			}
			if a.Value == nil {
				return nil, config.InvalidConfigError(fmt.Sprintf("Null value not supported for : %s", a.Name))
			}
			current := c.currentConfigValue(im, s.Resource, a.Name)
			v := config.AppendListValue(current, *a.Value)
			if a.Op == ConfigSubtract {
				v = config.SubtractListValue(current, *a.Value)
			}
			out = append(out, config.Change{Name: a.Name, Value: &v})
		default:
			return nil, fmt.Errorf("%w: unknown config operation %d", ErrInvalidRequest, a.Op)
		}
	}
	return out, nil
}

// currentConfigValue is a config's value before a change: the resource's own entry,
// else its effective value on this node.
func (c *Controller) currentConfigValue(im *metadata.Image, res metadata.ConfigResource, name string) string {
	if v, ok := im.Config(res, name); ok {
		return v
	}
	if res.Type == metadata.TopicResource {
		overrides := im.ResourceConfigs(metadata.ConfigResource{Type: metadata.TopicResource, Name: res.Name})
		return config.ResolveTopicConfigs(overrides, config.DynamicBrokerConfigsFor(im, c.cfg.NodeID), c.cfg.Properties)[name].Value
	}
	v, _ := config.BrokerValue(c.cfg.Properties, name)
	return v
}

// configRecords validates changes to res against im (config.ChangeRecords, once the
// resource is one that may be altered; a group's resulting configs within the bounds
// of the broker properties props) and returns their Config records.
func configRecords(im *metadata.Image, res metadata.ConfigResource, changes []config.Change, props map[string]string) ([]metadata.Record, error) {
	switch res.Type {
	case metadata.TopicResource:
		if im.Topic(res.Name) == nil {
			return nil, fmt.Errorf("%w: topic '%s' does not exist", metadata.ErrUnknownTopic, res.Name)
		}
		if IsInternalTopic(res.Name) {
			return nil, InternalTopicError("alter the configs of", res.Name)
		}
	case metadata.BrokerResource:
		if err := config.ValidateBrokerResourceName(res.Name); err != nil {
			return nil, err
		}
	case metadata.GroupResource:
		if res.Name == "" {
			return nil, fmt.Errorf("%w: Group name must not be empty", ErrInvalidRequest)
		}
	case metadata.ClientMetricsResource:
		if res.Name == "" {
			return nil, fmt.Errorf("%w: Subscription name can't be empty", ErrInvalidRequest)
		}
	default:
		return nil, fmt.Errorf("%w: unsupported resource type %d", ErrInvalidRequest, res.Type)
	}
	records, err := config.ChangeRecords(im.ResourceConfigs(res), res, changes)
	if err != nil {
		return nil, err
	}
	if res.Type == metadata.GroupResource {
		if err := config.ValidateGroupConfigs(resultingConfigs(im.ResourceConfigs(res), records), props); err != nil {
			return nil, err
		}
	}
	if res.Type == metadata.TopicResource {
		after := resultingConfigs(im.ResourceConfigs(res), records)
		if err := config.ValidateTopicConfigs(after, props); err != nil {
			return nil, err
		}
		if err := config.ValidateRemoteStorageChange(im.ResourceConfigs(res), after); err != nil {
			return nil, err
		}
	}
	if err := CheckRecordsPerUserOp(len(records)); err != nil {
		return nil, err
	}
	return records, nil
}

// commitConfigs plans a resource's Config records on the controller and commits them
// (or only validates them), then, when they turn unclean leader election on, elects
// leaders for leaderless partitions that may now have one.
func (c *Controller) commitConfigs(ctx context.Context, validateOnly bool, plan func(*metadata.Image) ([]metadata.Record, error)) error {
	if validateOnly {
		_, err := plan(c.cfg.Image())
		return err
	}
	// Plans run on the controller goroutine, possibly after ctx ended here: what they
	// decided is read only when Do succeeded (the plan has then returned).
	var planned []metadata.Record
	if _, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		records, err := plan(im)
		planned = records
		return records, err
	}); err != nil {
		return err
	}
	c.warnInertConfigs(planned)
	if !config.EnablesUnclean(planned) {
		return nil
	}
	var before *metadata.Image
	var elected []metadata.Record
	if _, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		before = im
		elected = metadata.ElectLeaderlessRecords(im, func(id int32) bool { return im.Acceptable(id) }, c.cfg.UncleanAllowed(im))
		return elected, nil
	}); err != nil {
		c.log.Warn("electing leaders after enabling unclean leader election", "error", err)
		return nil // the config is committed; the next unfence retries the elections
	}
	c.LogUncleanElections(before, elected)
	return nil
}

// warnInertConfigs logs each stored broker config that Petrel does not act on
// (config.InertBrokerConfig), as a start-up property of that kind is warned about.
func (c *Controller) warnInertConfigs(records []metadata.Record) {
	for _, r := range records {
		cr, ok := r.(metadata.ConfigRecord)
		if !ok || cr.ResourceType != metadata.BrokerResource || cr.Value == nil {
			continue
		}
		if u, inert := config.InertBrokerConfig(cr.Name); inert {
			c.log.Warn("stored a broker config Petrel does not act on", "config", cr.Name, "broker", cr.ResourceName, "why", u.Note)
		}
	}
}

// resultingConfigs is a resource's configs, current, once records apply.
func resultingConfigs(current map[string]string, records []metadata.Record) map[string]string {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	for _, r := range records {
		if cr, ok := r.(metadata.ConfigRecord); ok {
			if cr.Value == nil {
				delete(out, cr.Name)
			} else {
				out[cr.Name] = *cr.Value
			}
		}
	}
	return out
}
