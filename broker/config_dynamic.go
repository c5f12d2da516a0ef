package broker

// Dynamic configs: topic overrides and broker configs stored as Config records in the
// metadata log (IncrementalAlterConfigs, AlterConfigs), resolved on every broker from
// its own image, so a change takes effect at the next reconciliation without a restart.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/config"
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

// dynamicBrokerInt64, dynamicBrokerBool and dynamicBrokerFloat64 read a dynamic broker
// property as it is now (dynamicBrokerValue: this broker's value, the cluster default,
// the static value).
func (b *Broker) dynamicBrokerInt64(name string) int64 {
	return config.ParseInt64(b.dynamicBrokerValue(b.Image(), name))
}

func (b *Broker) dynamicBrokerBool(name string) bool {
	return config.ParseBool(b.dynamicBrokerValue(b.Image(), name))
}

func (b *Broker) dynamicBrokerFloat64(name string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSpace(b.dynamicBrokerValue(b.Image(), name)), 64)
	return f
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
		if err := config.ValidateBrokerResourceName(res.Name); err != nil {
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
			return nil, config.InvalidConfigError(fmt.Sprintf("Config %s is altered more than once", c.name))
		}
		seen[c.name] = true
		if c.value != nil {
			var err error
			if res.Type == metadata.TopicResource {
				err = config.ValidateTopicConfig(c.name, *c.value)
			} else {
				err = config.ValidateDynamicBrokerConfig(c.name, *c.value, res.Name != "")
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
		def, _ := config.TopicDef(name)
		return def.Type == config.TypeList
	}
	def, _ := config.BrokerDef(name)
	return def.Type == config.TypeList
}

// enablesUnclean reports whether records turn unclean.leader.election.enable on for a
// topic or as a broker default.
func enablesUnclean(records []metadata.Record) bool {
	for _, r := range records {
		c, ok := r.(metadata.ConfigRecord)
		if ok && c.Value != nil && (c.Name == "unclean.leader.election.enable") && config.ParseBool(*c.Value) {
			return true
		}
	}
	return false
}
