package broker

// Dynamic configs: topic overrides and broker configs stored as Config records in the
// metadata log (IncrementalAlterConfigs, AlterConfigs), resolved on every broker from
// its own image, so a change takes effect at the next reconciliation without a restart.

import (
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
