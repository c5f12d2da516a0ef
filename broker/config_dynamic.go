package broker

// Dynamic configs: topic overrides and broker configs stored as Config records in the
// metadata log (IncrementalAlterConfigs, AlterConfigs), resolved on every broker from
// its own image, so a change takes effect at the next reconciliation without a restart.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/metadata"
)

// dynamicBrokerConfigs are the broker configs of one broker in the metadata image: its
// own (resource name = its id) and the cluster-wide default (empty name).
type dynamicBrokerConfigs struct {
	own      map[string]string
	defaults map[string]string
}

// lookup returns a broker property's dynamic value and its Kafka source.
func (d dynamicBrokerConfigs) lookup(name string) (string, int8, bool) {
	if v, ok := d.own[name]; ok {
		return v, sourceDynamicBroker, true
	}
	if v, ok := d.defaults[name]; ok {
		return v, sourceDynamicDefaultBroker, true
	}
	return "", 0, false
}

// dynamicBrokerConfigsFor returns broker id's dynamic configs in im.
func dynamicBrokerConfigsFor(im *metadata.Image, id int32) dynamicBrokerConfigs {
	return dynamicBrokerConfigs{
		own:      im.ResourceConfigs(metadata.ConfigResource{Type: metadata.BrokerResource, Name: strconv.Itoa(int(id))}),
		defaults: im.ResourceConfigs(metadata.ConfigResource{Type: metadata.BrokerResource, Name: ""}),
	}
}

// topicConfigsFor resolves topic's configs as this broker sees them in im.
func (b *Broker) topicConfigsFor(im *metadata.Image, topic string) map[string]resolvedConfig {
	overrides := im.ResourceConfigs(metadata.ConfigResource{Type: metadata.TopicResource, Name: topic})
	return b.cfg.topicConfigsLayered(overrides, dynamicBrokerConfigsFor(im, b.cfg.NodeID))
}

// dynamicBrokerConfigNames are the broker properties that may change at run time: the
// broker defaults of the topic configs (Kafka's DynamicLogConfig set), the
// replication throttles (Kafka's DynamicReplicationConfig, KIP-73) and the connection
// limits (Kafka's DynamicConnectionQuota; connection_quotas.go).
var dynamicBrokerConfigNames = func() map[string]bool {
	m := map[string]bool{
		"leader.replication.throttled.rate":   true,
		"follower.replication.throttled.rate": true,
		"max.connections":                     true,
		"max.connections.per.ip":              true,
		"max.connections.per.ip.overrides":    true,
	}
	for _, d := range topicConfigDefs {
		if d.BrokerSynonym != "" {
			m[d.BrokerSynonym] = true
		}
	}
	return m
}()

// validateBrokerConfigName checks a broker resource name: empty (the cluster default) or
// a broker id.
func validateBrokerConfigName(name string) error {
	if name == "" {
		return nil
	}
	if id, err := strconv.ParseInt(name, 10, 32); err != nil || id < 0 {
		return invalidConfigError(fmt.Sprintf("Invalid broker name %q: a broker resource is named by a broker id, or empty for the cluster default", name))
	}
	return nil
}

// validateDynamicBrokerConfig checks one dynamic broker config (Kafka's ConfigException
// wording, INVALID_CONFIG).
func validateDynamicBrokerConfig(name, value string) error {
	def, known := brokerConfigByName[name]
	switch {
	case !known:
		return invalidConfigError("Unknown broker config name: " + name)
	case !dynamicBrokerConfigNames[name]:
		return invalidConfigError(fmt.Sprintf("Cannot update these configs dynamically: Set(%s)", name))
	}
	return checkConfigValue(def, value)
}

// configChange is one key of a resource to set (Value non-nil) or delete.
type configChange struct {
	name  string
	value *string
}

// configRecords validates changes to res against im and returns their Config records.
// Deleting a key that is not set writes nothing for it.
func configRecords(im *metadata.Image, res metadata.ConfigResource, changes []configChange) ([]metadata.Record, error) {
	switch res.Type {
	case metadata.TopicResource:
		if im.Topic(res.Name) == nil {
			return nil, fmt.Errorf("%w: topic '%s' does not exist", metadata.ErrUnknownTopic, res.Name)
		}
		if isInternalTopic(res.Name) {
			return nil, internalTopicError("alter the configs of", res.Name)
		}
	case metadata.BrokerResource:
		if err := validateBrokerConfigName(res.Name); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unsupported resource type %d", ErrInvalidRequest, res.Type)
	}
	current := im.ResourceConfigs(res)
	seen := map[string]bool{}
	var records []metadata.Record
	for _, c := range changes {
		if seen[c.name] {
			return nil, invalidConfigError(fmt.Sprintf("Config %s is altered more than once", c.name))
		}
		seen[c.name] = true
		if c.value != nil {
			var err error
			if res.Type == metadata.TopicResource {
				err = validateTopicConfig(c.name, *c.value)
			} else {
				err = validateDynamicBrokerConfig(c.name, *c.value)
			}
			if err != nil {
				return nil, err
			}
		} else if _, set := current[c.name]; !set {
			continue
		}
		records = append(records, metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: c.name, Value: c.value})
	}
	if err := checkRecordsPerUserOp(len(records)); err != nil {
		return nil, err
	}
	return records, nil
}

// listConfigType reports whether name is a LIST config of the resource type (APPEND and
// SUBTRACT apply only to those).
func listConfigType(t metadata.ConfigResourceType, name string) bool {
	if t == metadata.TopicResource {
		return topicConfigByName[name].Type == TypeList
	}
	return brokerConfigByName[name].Type == TypeList
}

// appendListValue and subtractListValue are Kafka's APPEND and SUBTRACT on a
// comma-separated list.
func appendListValue(current, add string) string {
	items := splitList(current)
	for _, v := range splitList(add) {
		if !slices.Contains(items, v) {
			items = append(items, v)
		}
	}
	return strings.Join(items, ",")
}

func subtractListValue(current, remove string) string {
	drop := splitList(remove)
	return strings.Join(slices.DeleteFunc(splitList(current), func(v string) bool { return slices.Contains(drop, v) }), ",")
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// enablesUnclean reports whether records turn unclean.leader.election.enable on for a
// topic or as a broker default.
func enablesUnclean(records []metadata.Record) bool {
	for _, r := range records {
		c, ok := r.(metadata.ConfigRecord)
		if ok && c.Value != nil && (c.Name == "unclean.leader.election.enable") && parseBool(*c.Value) {
			return true
		}
	}
	return false
}
