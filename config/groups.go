package config

// Group configs (KIP-848): the per-group configs of the GROUP config resource (type 32
// in DescribeConfigs, IncrementalAlterConfigs and AlterConfigs), Kafka 4.2's
// GroupConfig, with the broker properties (group.consumer.*) that supply their
// defaults and bound them, and the rules Kafka checks across those properties at start
// (GroupCoordinatorConfig) and across a group's configs when they change
// (GroupConfig.validate).

import (
	"fmt"
	"slices"
)

// GroupConfigSource is Kafka's GROUP_CONFIG source (DescribeConfigs v1+): a group's own
// value.
const GroupConfigSource int8 = 8

// The group configs' names (Kafka's GroupConfig).
const (
	ConsumerSessionTimeoutConfig    = "consumer.session.timeout.ms"
	ConsumerHeartbeatIntervalConfig = "consumer.heartbeat.interval.ms"
)

// GroupDefs are the group configs Petrel honours. BrokerSynonym is the broker property
// that supplies the default (Kafka's "group." + name); Default is Kafka's.
var GroupDefs = []Def{
	{Name: ConsumerSessionTimeoutConfig, Type: TypeInt, Default: "45000", BrokerSynonym: "group.consumer.session.timeout.ms", Validator: atLeast(1),
		Doc:  "The timeout to detect client failures when using the consumer group protocol.",
		Note: "Between group.consumer.min.session.timeout.ms and group.consumer.max.session.timeout.ms, and above the group's heartbeat interval. A change applies to each member from its next heartbeat."},
	{Name: ConsumerHeartbeatIntervalConfig, Type: TypeInt, Default: "5000", BrokerSynonym: "group.consumer.heartbeat.interval.ms", Validator: atLeast(1),
		Doc:  "The heartbeat interval given to the members.",
		Note: "Between group.consumer.min.heartbeat.interval.ms and group.consumer.max.heartbeat.interval.ms, and below the group's session timeout. A change applies to each member from its next heartbeat."},
}

var groupByName = indexConfigDefs(GroupDefs)

// GroupDef returns the definition of group config name.
func GroupDef(name string) (Def, bool) {
	d, ok := groupByName[name]
	return d, ok
}

// ValidateGroupConfig checks one group config's name, type and validator (Kafka's
// GroupConfig.validateNames and parse); ValidateGroupConfigs checks the bounds.
func ValidateGroupConfig(name, value string) error {
	def, ok := groupByName[name]
	if !ok {
		return InvalidConfigError("Unknown group config name: " + name)
	}
	return CheckValue(def, value)
}

// ValidateGroupConfigs checks a group's whole set of configs after a change (configs,
// each valid by ValidateGroupConfig) against the broker properties props, as Kafka's
// GroupConfig.validate: an unset config takes its broker default, each must lie within
// the broker's group.consumer.min/max bounds, and the session timeout must exceed the
// heartbeat interval. The error is INVALID_CONFIG with Kafka's message.
func ValidateGroupConfigs(configs, props map[string]string) error {
	value := func(name string) int64 {
		if v, ok := configs[name]; ok {
			return ParseInt64(v)
		}
		def := groupByName[name]
		v, _ := BrokerValue(props, def.BrokerSynonym)
		return ParseInt64(v)
	}
	broker := func(name string) int64 {
		v, _ := BrokerValue(props, name)
		return ParseInt64(v)
	}
	heartbeat, session := value(ConsumerHeartbeatIntervalConfig), value(ConsumerSessionTimeoutConfig)
	checks := []struct {
		failed bool
		msg    string
	}{
		{heartbeat < broker("group.consumer.min.heartbeat.interval.ms"), ConsumerHeartbeatIntervalConfig + " must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{heartbeat > broker("group.consumer.max.heartbeat.interval.ms"), ConsumerHeartbeatIntervalConfig + " must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{session < broker("group.consumer.min.session.timeout.ms"), ConsumerSessionTimeoutConfig + " must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{session > broker("group.consumer.max.session.timeout.ms"), ConsumerSessionTimeoutConfig + " must be less than or equal to group.consumer.max.session.timeout.ms"},
		{session <= heartbeat, ConsumerSessionTimeoutConfig + " must be greater than " + ConsumerHeartbeatIntervalConfig},
	}
	for _, c := range checks {
		if c.failed {
			return InvalidConfigError(c.msg)
		}
	}
	return validateShareGroupConfigs(configs, props) // groups_share.go
}

// ResolveGroupConfigs resolves every group config of a group with overrides in Kafka's
// order (ConfigHelper.createGroupConfigEntry): the group's own value (GROUP_CONFIG),
// then its broker property supplied in props (STATIC_BROKER_CONFIG), then the broker
// property's default (DEFAULT_CONFIG).
func ResolveGroupConfigs(overrides, props map[string]string) map[string]Resolved {
	out := make(map[string]Resolved, len(GroupDefs))
	for _, def := range GroupDefs {
		if v, ok := overrides[def.Name]; ok {
			out[def.Name] = Resolved{def, v, GroupConfigSource}
			continue
		}
		if def.BrokerSynonym == "" { // share.auto.offset.reset, share.isolation.level
			out[def.Name] = Resolved{def, def.Default, DefaultConfig}
			continue
		}
		out[def.Name] = resolveStatic(def, props)
	}
	return out
}

// CheckGroupCoordinatorProperties checks the rules Kafka's GroupCoordinatorConfig
// requires across the group.* broker properties props (each valid on its own): the
// consumer groups' heartbeat interval and session timeout within their bounds, the
// interval below the timeout, and the classic protocol enabled. Kafka refuses to start
// otherwise; so does Petrel.
func CheckGroupCoordinatorProperties(props map[string]string) error {
	n := func(name string) int64 {
		v, _ := BrokerValue(props, name)
		return ParseInt64(v)
	}
	const (
		hb, minHB, maxHB = "group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"
		st, minST, maxST = "group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"
		geq, leq, less   = "%s must be greater than or equal to %s", "%s must be less than or equal to %s", "%s must be less than %s"
	)
	checks := []struct {
		ok     bool
		format string
		a, b   string
	}{
		{n(maxHB) >= n(minHB), geq, maxHB, minHB},
		{n(hb) >= n(minHB), geq, hb, minHB},
		{n(hb) <= n(maxHB), leq, hb, maxHB},
		{n(maxST) >= n(minST), geq, maxST, minST},
		{n(st) >= n(minST), geq, st, minST},
		{n(st) <= n(maxST), leq, st, maxST},
		{n(hb) < n(st), less, hb, st},
	}
	for _, c := range checks {
		if !c.ok {
			return InvalidConfigError(fmt.Sprintf(c.format, c.a, c.b))
		}
	}
	if !rebalanceProtocolEnabled(props, "classic") {
		return InvalidConfigError("Disabling the 'classic' protocol is not supported.")
	}
	return nil
}

// ConsumerProtocolEnabled reports whether group.coordinator.rebalance.protocols in
// props enables the consumer group protocol (KIP-848): without it the broker neither
// advertises nor serves ConsumerGroupHeartbeat and ConsumerGroupDescribe.
func ConsumerProtocolEnabled(props map[string]string) bool {
	return rebalanceProtocolEnabled(props, "consumer")
}

func rebalanceProtocolEnabled(props map[string]string, protocol string) bool {
	v, _ := BrokerValue(props, "group.coordinator.rebalance.protocols")
	return slices.Contains(splitList(v), protocol)
}

// ConsumerAssignorNames returns group.consumer.assignors in props as the built-in
// assignors' short names, in order (the value must be valid).
func ConsumerAssignorNames(props map[string]string) []string {
	v, _ := BrokerValue(props, "group.consumer.assignors")
	var out []string
	for _, e := range splitList(v) {
		if name, ok := consumerAssignorNames[e]; ok {
			out = append(out, name)
		}
	}
	return out
}
