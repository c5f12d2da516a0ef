package broker

// The GROUP config resource (KIP-848, type 32): DescribeConfigs' answer for a group
// id, from its configs in the metadata image over the broker's group.consumer.*
// properties, and the group coordinator's read of a group's own configs at each
// heartbeat. The changes go through the controller (controller/configs.go) as for
// topics; the configs outlive the group, as in Kafka.

import (
	"time"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeGroupConfigs is DescribeConfigs of group: every group config with its
// value and Kafka's source (ConfigHelper.createGroupConfigEntry): GROUP_CONFIG for the
// group's own, else its broker property's (STATIC_BROKER_CONFIG or DEFAULT_CONFIG);
// the synonyms, when asked, in that order. The group need not exist.
func (b *Broker) describeGroupConfigs(r *kmsg.DescribeConfigsRequest, im *metadata.Image, name string) []kmsg.DescribeConfigsResponseResourceConfig {
	own := im.ResourceConfigs(metadata.ConfigResource{Type: metadata.GroupResource, Name: name})
	resolved := config.ResolveGroupConfigs(own, b.cfg.Properties)
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(config.GroupDefs))
	for _, def := range config.GroupDefs {
		rc := resolved[def.Name]
		c := newConfigEntry(r, rc.Def, rc.Value, rc.Source)
		if r.IncludeSynonyms {
			if rc.Source == config.GroupConfigSource {
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(def.Name, rc.Value, config.GroupConfigSource))
			}
			c.ConfigSynonyms = append(c.ConfigSynonyms, b.brokerSynonyms(def.BrokerSynonym)...)
		}
		out = append(out, c)
	}
	return out
}

// consumerGroupConfig is group.Config.ConsumerGroupConfig: group id's own configs in
// the current metadata image (zero fields: the broker's).
func (b *Broker) consumerGroupConfig(id string) group.ConsumerGroupConfig {
	im := b.Image()
	res := metadata.ConfigResource{Type: metadata.GroupResource, Name: id}
	ms := func(name string) time.Duration {
		if v, ok := im.Config(res, name); ok {
			return time.Duration(config.ParseInt64(v)) * time.Millisecond
		}
		return 0
	}
	return group.ConsumerGroupConfig{
		SessionTimeout:    ms(config.ConsumerSessionTimeoutConfig),
		HeartbeatInterval: ms(config.ConsumerHeartbeatIntervalConfig),
	}
}
