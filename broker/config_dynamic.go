package broker

// Dynamic configs: topic overrides and broker configs stored as Config records in the
// metadata log (IncrementalAlterConfigs, AlterConfigs), resolved on every broker from
// its own image, so a change takes effect at the next reconciliation without a restart.

import (
	"fmt"
	"github.com/petrel-broker/petrel/controller"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
)

// topicConfigsFor resolves topic's configs as this broker sees them in im.
func (b *Broker) topicConfigsFor(im *metadata.Image, topic string) map[string]config.Resolved {
	overrides := im.ResourceConfigs(metadata.ConfigResource{Type: metadata.TopicResource, Name: topic})
	return config.ResolveTopicConfigs(overrides, config.DynamicBrokerConfigsFor(im, b.cfg.NodeID), b.cfg.Properties)
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

// configRecords validates changes to res against im (config.ChangeRecords, once the
// resource is one that may be altered) and returns their Config records.
func configRecords(im *metadata.Image, res metadata.ConfigResource, changes []config.Change) ([]metadata.Record, error) {
	switch res.Type {
	case metadata.TopicResource:
		if im.Topic(res.Name) == nil {
			return nil, fmt.Errorf("%w: topic '%s' does not exist", metadata.ErrUnknownTopic, res.Name)
		}
		if isInternalTopic(res.Name) {
			return nil, controller.InternalTopicError("alter the configs of", res.Name)
		}
	case metadata.BrokerResource:
		if err := config.ValidateBrokerResourceName(res.Name); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unsupported resource type %d", ErrInvalidRequest, res.Type)
	}
	records, err := config.ChangeRecords(im.ResourceConfigs(res), res, changes)
	if err != nil {
		return nil, err
	}
	if err := controller.CheckRecordsPerUserOp(len(records)); err != nil {
		return nil, err
	}
	return records, nil
}
