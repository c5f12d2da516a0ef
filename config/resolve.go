package config

// Resolving a property's value: a broker property from the node's supplied properties
// (with Kafka's hour and minute fallbacks), a topic config through Kafka's layers (the
// topic's override, this broker's dynamic config, the cluster-wide dynamic default,
// the static broker property, Kafka's default).

import (
	"strconv"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// Kafka's config sources (DescribeConfigs v1+, ConfigSource).
const (
	DynamicTopicConfig         int8 = 1 // DYNAMIC_TOPIC_CONFIG: the topic's override
	DynamicBrokerConfig        int8 = 2 // DYNAMIC_BROKER_CONFIG: this broker's, in the metadata log
	DynamicDefaultBrokerConfig int8 = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG: the cluster-wide default
	StaticBrokerConfig         int8 = 4 // STATIC_BROKER_CONFIG: the node's supplied property
	DefaultConfig              int8 = 5 // DEFAULT_CONFIG: Kafka's default
)

// Resolved is a topic config's value as a broker resolves it, and its Kafka source.
type Resolved struct {
	Def    Def
	Value  string
	Source int8
}

// BrokerValue returns a broker property's effective value among the supplied props and
// the supplied property it comes from: name itself, a Kafka fallback
// (log.retention.hours for log.retention.ms), or "" for the default.
func BrokerValue(props map[string]string, name string) (value, from string) {
	if v, ok := props[name]; ok {
		if name == "log.retention.ms" {
			return scaleMs(v, time.Millisecond), name // any negative value is -1, as in Kafka
		}
		return v, name
	}
	// Kafka's hour and minute fallbacks for retention and roll.
	switch name {
	case "log.retention.ms":
		if v, ok := props["log.retention.minutes"]; ok {
			return scaleMs(v, time.Minute), "log.retention.minutes"
		}
		if v, ok := props["log.retention.hours"]; ok {
			return scaleMs(v, time.Hour), "log.retention.hours"
		}
	case "log.roll.ms":
		if v, ok := props["log.roll.hours"]; ok {
			return scaleMs(v, time.Hour), "log.roll.hours"
		}
	}
	def, _ := BrokerDef(name)
	return def.Default, ""
}

func scaleMs(v string, unit time.Duration) string {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return v
	}
	if n < 0 {
		return "-1"
	}
	return strconv.FormatInt(n*int64(unit/time.Millisecond), 10)
}

// DynamicBrokerConfigs are the broker configs of one broker in the metadata image: its
// own (resource name = its id) and the cluster-wide default (empty name).
type DynamicBrokerConfigs struct {
	Own      map[string]string
	Defaults map[string]string
}

// Lookup returns a broker property's dynamic value and its Kafka source.
func (d DynamicBrokerConfigs) Lookup(name string) (string, int8, bool) {
	if v, ok := d.Own[name]; ok {
		return v, DynamicBrokerConfig, true
	}
	if v, ok := d.Defaults[name]; ok {
		return v, DynamicDefaultBrokerConfig, true
	}
	return "", 0, false
}

// DynamicBrokerConfigsFor returns broker id's dynamic configs in im.
func DynamicBrokerConfigsFor(im *metadata.Image, id int32) DynamicBrokerConfigs {
	return DynamicBrokerConfigs{
		Own:      im.ResourceConfigs(metadata.ConfigResource{Type: metadata.BrokerResource, Name: strconv.Itoa(int(id))}),
		Defaults: im.ResourceConfigs(metadata.ConfigResource{Type: metadata.BrokerResource, Name: ""}),
	}
}

// ResolveTopicConfigs resolves every topic config of a topic with overrides in Kafka's
// order: the override, the broker's dynamic config (dyn), the supplied broker property
// of props, Kafka's default.
func ResolveTopicConfigs(overrides map[string]string, dyn DynamicBrokerConfigs, props map[string]string) map[string]Resolved {
	out := make(map[string]Resolved, len(TopicDefs))
	for _, def := range TopicDefs {
		if v, ok := overrides[def.Name]; ok {
			out[def.Name] = Resolved{def, v, DynamicTopicConfig}
			continue
		}
		if def.BrokerSynonym == "" {
			out[def.Name] = Resolved{def, def.Default, DefaultConfig}
			continue
		}
		if v, src, ok := dyn.Lookup(def.BrokerSynonym); ok {
			out[def.Name] = Resolved{def, v, src}
			continue
		}
		out[def.Name] = resolveStatic(def, props)
	}
	return out
}

// resolveStatic resolves def from its broker synonym's static value: the property
// supplied in props (STATIC_BROKER_CONFIG), else its default (DEFAULT_CONFIG).
func resolveStatic(def Def, props map[string]string) Resolved {
	v, from := BrokerValue(props, def.BrokerSynonym)
	if from != "" {
		return Resolved{def, v, StaticBrokerConfig}
	}
	return Resolved{def, v, DefaultConfig}
}
