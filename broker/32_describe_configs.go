package broker

// DescribeConfigs (key 32), v1-4. Topics (resource type 2) report every topic config
// with its effective value and source: DYNAMIC_TOPIC_CONFIG for overrides,
// STATIC_BROKER_CONFIG for values from server.properties or --set, DEFAULT_CONFIG for
// Kafka's defaults; synonyms when asked (v1+), types and documentation (v3+). Brokers
// (type 4) report this broker's properties; an empty name is the cluster default.
// Dynamic broker configs (IncrementalAlterConfigs, AlterConfigs) show as
// DYNAMIC_BROKER_CONFIG (this broker's) or DYNAMIC_DEFAULT_BROKER_CONFIG (the cluster
// default), for brokers and for the topic configs they supply. Groups (type 32,
// KIP-848) report the group configs (group_configs.go): GROUP_CONFIG for the group's
// own, else the broker property's source; DESCRIBE_CONFIGS on the group is needed.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeConfigs, 1, 4, (*Broker).handleDescribeConfigs, apiOpts{
		authorize: authorizeDescribeConfigs,
	})
}

func (b *Broker) handleDescribeConfigs(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	im := b.Image()
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var entries []kmsg.DescribeConfigsResponseResourceConfig
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if im.Topic(res.ResourceName) == nil {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rr.ErrorMessage = errorMessage(fmt.Errorf("topic %q does not exist", res.ResourceName))
				break
			}
			resolved := b.topicConfigsFor(im, res.ResourceName)
			for _, def := range config.TopicDefs {
				entries = append(entries, b.describeTopicConfig(r, resolved[def.Name]))
			}
		case kmsg.ConfigResourceTypeBroker:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(b.cfg.NodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				rr.ErrorMessage = errorMessage(fmt.Errorf("broker %d describes only its own configs, not broker %q", b.cfg.NodeID, res.ResourceName))
				break
			}
			dyn := config.DynamicBrokerConfigsFor(im, b.cfg.NodeID)
			if res.ResourceName == "" {
				dyn.Own = nil // the cluster default: only default dynamic configs apply
			}
			for _, def := range config.BrokerDefs {
				entries = append(entries, b.describeBrokerConfig(r, def, dyn))
			}
			for _, def := range config.BrokerSynonymDefs() {
				entries = append(entries, b.describeBrokerConfig(r, def, dyn))
			}
			entries = append(entries, describeStoredBrokerConfigs(r, dyn)...)
		case kmsg.ConfigResourceTypeGroupConfig:
			if res.ResourceName == "" {
				rr.ErrorCode = kerr.InvalidRequest.Code
				rr.ErrorMessage = errorMessage(errors.New("Group name must not be empty"))
				break
			}
			entries = b.describeGroupConfigs(r, im, res.ResourceName)
		case kmsg.ConfigResourceTypeClientMetrics:
			entries, rr.ErrorCode, rr.ErrorMessage = describeClientMetricsConfigs(r, im, res.ResourceName) // client_telemetry.go
		case kmsg.ConfigResourceTypeBrokerLogger:
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			rr.ErrorMessage = errorMessage(fmt.Errorf("unsupported resource type %d", res.ResourceType))
		}
		if res.ConfigNames != nil {
			entries = slices.DeleteFunc(entries, func(e kmsg.DescribeConfigsResponseResourceConfig) bool {
				return !slices.Contains(res.ConfigNames, e.Name)
			})
		}
		rr.Configs = entries
		resp.Resources = append(resp.Resources, rr)
	}
	return rpc.Respond(resp)
}

func (b *Broker) describeTopicConfig(r *kmsg.DescribeConfigsRequest, rc config.Resolved) kmsg.DescribeConfigsResponseResourceConfig {
	c := newConfigEntry(r, rc.Def, rc.Value, rc.Source)
	if r.IncludeSynonyms {
		if rc.Source == config.DynamicTopicConfig {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(rc.Def.Name, rc.Value, config.DynamicTopicConfig))
		}
		{
			dyn := config.DynamicBrokerConfigsFor(b.Image(), b.cfg.NodeID)
			if v, ok := dyn.Own[rc.Def.BrokerSynonym]; ok {
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(rc.Def.BrokerSynonym, v, config.DynamicBrokerConfig))
			}
			if v, ok := dyn.Defaults[rc.Def.BrokerSynonym]; ok {
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(rc.Def.BrokerSynonym, v, config.DynamicDefaultBrokerConfig))
			}
		}
		c.ConfigSynonyms = append(c.ConfigSynonyms, b.brokerSynonyms(rc.Def.BrokerSynonym)...)
	}
	return c
}

// brokerSynonyms are a broker property's synonyms as Kafka lists them: the supplied
// property its value comes from (log.retention.hours for log.retention.ms), then the
// default of the property Kafka's defaults are expressed in, unless it is null.
func (b *Broker) brokerSynonyms(name string) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	if name == "" {
		return nil // a topic-only config
	}
	if _, from := config.BrokerValue(b.cfg.Properties, name); from != "" {
		out = append(out, synonym(from, b.cfg.Properties[from], config.StaticBrokerConfig))
	}
	defaultName := name
	switch name {
	case "log.retention.ms":
		defaultName = "log.retention.hours"
	case "log.roll.ms":
		defaultName = "log.roll.hours"
	}
	if def, _ := config.BrokerDef(defaultName); def.Default != "" { // Kafka's null default has no synonym
		out = append(out, synonym(defaultName, def.Default, config.DefaultConfig))
	}
	return out
}

func (b *Broker) describeBrokerConfig(r *kmsg.DescribeConfigsRequest, def config.Def, dyn config.DynamicBrokerConfigs) kmsg.DescribeConfigsResponseResourceConfig {
	if v, src, ok := dyn.Lookup(def.Name); ok {
		c := newConfigEntry(r, def, v, src)
		if r.IncludeSynonyms {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(def.Name, v, src))
			if src == config.DynamicBrokerConfig {
				if dv, ok := dyn.Defaults[def.Name]; ok {
					c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(def.Name, dv, config.DynamicDefaultBrokerConfig))
				}
			}
			c.ConfigSynonyms = append(c.ConfigSynonyms, b.brokerSynonyms(def.Name)...)
		}
		return c
	}
	value, set := b.cfg.brokerValue(def.Name)
	flagged := true
	switch def.Name {
	case "node.id":
		value, set = strconv.Itoa(int(b.cfg.NodeID)), true
	case "log.dirs":
		value, set = b.cfg.logsDir(), true
	case "listeners":
		value, set = b.listenersValue(false), true
	case "advertised.listeners":
		value, set = b.listenersValue(true), true
	case config.MetricsListenerProperty:
		value, set = b.metricsListenerValue(), true
	default:
		flagged = false
	}
	source := config.DefaultConfig
	if set {
		source = config.StaticBrokerConfig
	}
	c := newConfigEntry(r, def, value, source)
	c.ReadOnly = def.ReadOnly
	if r.IncludeSynonyms {
		if flagged {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(def.Name, value, source))
		} else {
			c.ConfigSynonyms = b.brokerSynonyms(def.Name)
		}
	}
	return c
}

// describeStoredBrokerConfigs lists the dynamic broker configs stored that are not in
// the property table: Kafka properties Petrel does not act on (config.InertBrokerConfig) and
// listener-prefixed ones, as Kafka lists every dynamic config set.
func describeStoredBrokerConfigs(r *kmsg.DescribeConfigsRequest, dyn config.DynamicBrokerConfigs) []kmsg.DescribeConfigsResponseResourceConfig {
	names := map[string]bool{}
	for _, m := range []map[string]string{dyn.Own, dyn.Defaults} {
		for name := range m {
			if _, inTable := config.BrokerDef(name); !inTable {
				names[name] = true
			}
		}
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range slices.Sorted(maps.Keys(names)) {
		v, src, _ := dyn.Lookup(name)
		def, ok := config.ListenerPropertyDef(name)
		if !ok {
			def = config.Def{Name: name, Type: config.TypeString, Doc: "A Kafka property Petrel stores but does not act on."}
			if config.Sensitive(name) {
				def.Type = config.TypePassword
			}
		}
		out = append(out, newConfigEntry(r, def, v, src))
	}
	return out
}

// newConfigEntry is one config of a DescribeConfigs answer. A secret (TypePassword) is
// sensitive with a null value, for every principal and version, as in Kafka.
func newConfigEntry(r *kmsg.DescribeConfigsRequest, def config.Def, value string, source int8) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value = def.Name, &value
	if def.Type == config.TypePassword {
		c.Value, c.IsSensitive = nil, true
	}
	c.Source = kmsg.ConfigSource(source)
	c.IsDefault = source == config.DefaultConfig
	c.ConfigType = kmsg.ConfigType(def.Type)
	if r.IncludeDocumentation {
		doc := def.Doc
		c.Documentation = &doc
	}
	return c
}

// synonym is one synonym of a config; a secret's value is null.
func synonym(name, value string, source int8) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	s.Name, s.Value, s.Source = name, &value, kmsg.ConfigSource(source)
	if config.Sensitive(name) {
		s.Value = nil
	}
	return s
}

// authorizeDescribeConfigs is DescribeConfigs's authorization rule (checkRequest).
func authorizeDescribeConfigs(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	z := checksOf(b, req)
	var denied []kmsg.DescribeConfigsRequestResource
	r.Resources, denied = split(r.Resources, func(res kmsg.DescribeConfigsRequestResource) bool {
		return z.configOK(res.ResourceType, res.ResourceName, auth.OpDescribeConfigs)
	})
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.DescribeConfigsResponse)
		for _, res := range denied {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, configDeniedCode(res.ResourceType)
			out.Resources = append(out.Resources, rr)
		}
	})
}
