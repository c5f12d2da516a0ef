package config

// Share groups' configs (KIP-932): the broker properties group.share.* (Kafka 4.2's
// GroupCoordinatorConfig and ShareGroupConfig) with their bounds, the share.* group
// configs of the GROUP config resource (Kafka's GroupConfig) that they default and
// bound, and the syntax of share.auto.offset.reset.

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The share group configs' names (Kafka's GroupConfig).
const (
	ShareSessionTimeoutConfig        = "share.session.timeout.ms"
	ShareHeartbeatIntervalConfig     = "share.heartbeat.interval.ms"
	ShareRecordLockDurationConfig    = "share.record.lock.duration.ms"
	ShareDeliveryCountLimitConfig    = "share.delivery.count.limit"
	SharePartitionMaxRecordLocksConf = "share.partition.max.record.locks"
	ShareAutoOffsetResetConfig       = "share.auto.offset.reset"
	ShareIsolationLevelConfig        = "share.isolation.level"
)

// shareBrokerDefs are the group.share.* broker properties (Kafka 4.2's defaults and
// validators).
var shareBrokerDefs = []Def{
	{Name: "group.share.session.timeout.ms", Type: TypeInt, Default: "45000", ReadOnly: true, Validator: atLeast(1),
		Doc:  "The timeout to detect client failures when using the share group protocol, in milliseconds.",
		Note: "A group's share.session.timeout.ms (GROUP config resource) overrides it; see Group configs below."},
	{Name: "group.share.min.session.timeout.ms", Type: TypeInt, Default: "45000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The minimum allowed session timeout for share group members: the smallest share.session.timeout.ms a group may be given."},
	{Name: "group.share.max.session.timeout.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The maximum allowed session timeout for share group members: the largest share.session.timeout.ms a group may be given."},
	{Name: "group.share.heartbeat.interval.ms", Type: TypeInt, Default: "5000", ReadOnly: true, Validator: atLeast(1),
		Doc:  "The heartbeat interval given to the members of a share group, in milliseconds.",
		Note: "A group's share.heartbeat.interval.ms (GROUP config resource) overrides it; see Group configs below."},
	{Name: "group.share.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The minimum heartbeat interval for share group members: the smallest share.heartbeat.interval.ms a group may be given."},
	{Name: "group.share.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The maximum heartbeat interval for share group members: the largest share.heartbeat.interval.ms a group may be given."},
	{Name: "group.share.max.size", Type: TypeInt, Default: "200", ReadOnly: true, Validator: between(1, 1000),
		Doc: "The maximum number of members that a single share group can accommodate. A member joining past it gets GROUP_MAX_SIZE_REACHED."},
	{Name: "group.share.assignors", Type: TypeList, Default: "simple", ReadOnly: true, Validator: listOf("simple", "org.apache.kafka.coordinator.group.assignor.SimpleAssignor"),
		Doc:  "The server-side assignors as a list of either names for built-in assignors or full class names for custom assignors. The list must contain only a single entry which is used by all groups. The supported built-in assignors are: simple.",
		Note: "Only the built-in simple assignor, by name or by Kafka's class name: every member gets every partition of the topics it subscribes to whose share state is initialized."},
	{Name: "group.share.record.lock.duration.ms", Type: TypeInt, Default: "30000", ReadOnly: true, Validator: atLeast(1000),
		Doc:  "The record acquisition lock duration in milliseconds for share groups.",
		Note: "A group's share.record.lock.duration.ms overrides it."},
	{Name: "group.share.min.record.lock.duration.ms", Type: TypeInt, Default: "15000", ReadOnly: true, Validator: atLeast(1000),
		Doc: "The record acquisition lock minimum duration in milliseconds for share groups: the smallest share.record.lock.duration.ms a group may be given."},
	{Name: "group.share.max.record.lock.duration.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Validator: atLeast(1000),
		Doc: "The record acquisition lock maximum duration in milliseconds for share groups: the largest share.record.lock.duration.ms a group may be given."},
	{Name: "group.share.delivery.count.limit", Type: TypeInt, Default: "5", ReadOnly: true, Validator: between(2, 10),
		Doc:  "The maximum number of delivery attempts for a record delivered to a share group; past it the record is archived.",
		Note: "A group's share.delivery.count.limit overrides it."},
	{Name: "group.share.min.delivery.count.limit", Type: TypeInt, Default: "2", ReadOnly: true, Validator: between(2, 10),
		Doc: "The minimum share.delivery.count.limit a share group may be given."},
	{Name: "group.share.max.delivery.count.limit", Type: TypeInt, Default: "10", ReadOnly: true, Validator: between(2, 10),
		Doc: "The maximum share.delivery.count.limit a share group may be given."},
	{Name: "group.share.partition.max.record.locks", Type: TypeInt, Default: "2000", ReadOnly: true, Validator: between(100, 10000),
		Doc:  "Share-group record lock limit per share-partition: the most records a share partition holds in flight.",
		Note: "A group's share.partition.max.record.locks overrides it."},
	{Name: "group.share.min.partition.max.record.locks", Type: TypeInt, Default: "100", ReadOnly: true, Validator: between(100, 10000),
		Doc: "The minimum share.partition.max.record.locks a share group may be given."},
	{Name: "group.share.max.partition.max.record.locks", Type: TypeInt, Default: "4000", ReadOnly: true, Validator: between(100, 10000),
		Doc: "The maximum share.partition.max.record.locks a share group may be given."},
	{Name: "group.share.max.share.sessions", Type: TypeInt, Default: "2000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The maximum number of share sessions per broker."},
}

// shareGroupDefs are the share.* configs of the GROUP config resource.
var shareGroupDefs = []Def{
	{Name: ShareSessionTimeoutConfig, Type: TypeInt, Default: "45000", BrokerSynonym: "group.share.session.timeout.ms", Validator: atLeast(1),
		Doc:  "The timeout to detect client failures when using the share group protocol.",
		Note: "Between group.share.min.session.timeout.ms and group.share.max.session.timeout.ms, and above the group's heartbeat interval. A change applies to each member from its next heartbeat."},
	{Name: ShareHeartbeatIntervalConfig, Type: TypeInt, Default: "5000", BrokerSynonym: "group.share.heartbeat.interval.ms", Validator: atLeast(1),
		Doc:  "The heartbeat interval given to the members.",
		Note: "Between group.share.min.heartbeat.interval.ms and group.share.max.heartbeat.interval.ms, and below the group's session timeout. A change applies to each member from its next heartbeat."},
	{Name: ShareRecordLockDurationConfig, Type: TypeInt, Default: "30000", BrokerSynonym: "group.share.record.lock.duration.ms", Validator: atLeast(1000),
		Doc:  "The record acquisition lock duration in milliseconds for share groups.",
		Note: "Between group.share.min.record.lock.duration.ms and group.share.max.record.lock.duration.ms; records acquired after a change get the new duration."},
	{Name: ShareDeliveryCountLimitConfig, Type: TypeInt, Default: "5", BrokerSynonym: "group.share.delivery.count.limit", Validator: atLeast(2),
		Doc:  "The maximum number of delivery attempts for a record delivered to a share group.",
		Note: "Between group.share.min.delivery.count.limit and group.share.max.delivery.count.limit."},
	{Name: SharePartitionMaxRecordLocksConf, Type: TypeInt, Default: "2000", BrokerSynonym: "group.share.partition.max.record.locks", Validator: atLeast(100),
		Doc:  "Share-group record lock limit per share-partition.",
		Note: "Between group.share.min.partition.max.record.locks and group.share.max.partition.max.record.locks."},
	{Name: ShareAutoOffsetResetConfig, Type: TypeString, Default: "latest", Validator: autoOffsetResetValidator{},
		Doc:  "The strategy to initialize the share-partition start offset: earliest (the earliest offset), latest (the latest offset), or by_duration:<duration> (the first offset at or after the current time less the duration, in ISO-8601 format PnDTnHnMn.nS; negative durations are not allowed).",
		Note: "Read when a share partition without durable state is first loaded; it does not move a share partition that already has state (reset its offsets for that)."},
	{Name: ShareIsolationLevelConfig, Type: TypeString, Default: "read_uncommitted", Validator: oneOf("read_committed", "read_uncommitted"),
		Doc: "Controls how to read records written transactionally. If set to \"read_committed\", the share group will only deliver transactional records which have been committed. If set to \"read_uncommitted\", the share group will return all messages, even transactional messages which have been aborted. Non-transactional records will be returned unconditionally in either mode."},
}

func init() {
	BrokerDefs = append(BrokerDefs, shareBrokerDefs...)
	for _, d := range shareBrokerDefs {
		brokerByName[d.Name] = d
	}
	GroupDefs = append(GroupDefs, shareGroupDefs...)
	for _, d := range shareGroupDefs {
		groupByName[d.Name] = d
	}
}

// shareBounds are the share group configs bounded by broker properties, with the
// properties bounding them (Kafka's GroupConfig.validateValues).
var shareBounds = []struct{ name, min, max string }{
	{ShareHeartbeatIntervalConfig, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	{ShareSessionTimeoutConfig, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
	{ShareRecordLockDurationConfig, "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
	{ShareDeliveryCountLimitConfig, "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
	{SharePartitionMaxRecordLocksConf, "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
}

// validateShareGroupConfigs is ValidateGroupConfigs' share part: each bounded share
// config (unset: its broker default) within its broker bounds, and the session
// timeout above the heartbeat interval, with Kafka's messages.
func validateShareGroupConfigs(configs, props map[string]string) error {
	value := func(name string) int64 {
		if v, ok := configs[name]; ok {
			return ParseInt64(v)
		}
		v, _ := BrokerValue(props, groupByName[name].BrokerSynonym)
		return ParseInt64(v)
	}
	broker := func(name string) int64 {
		v, _ := BrokerValue(props, name)
		return ParseInt64(v)
	}
	for _, b := range shareBounds {
		v := value(b.name)
		if v < broker(b.min) {
			return InvalidConfigError(b.name + " must be greater than or equal to " + b.min)
		}
		if v > broker(b.max) {
			return InvalidConfigError(b.name + " must be less than or equal to " + b.max)
		}
	}
	if value(ShareSessionTimeoutConfig) <= value(ShareHeartbeatIntervalConfig) {
		return InvalidConfigError(ShareSessionTimeoutConfig + " must be greater than " + ShareHeartbeatIntervalConfig)
	}
	return nil
}

// CheckShareGroupProperties checks the rules Kafka requires across the group.share.*
// broker properties props (each valid on its own): each default within its min and
// max, each max at least its min, the heartbeat interval below the session timeout.
// Kafka refuses to start otherwise; so does Petrel.
func CheckShareGroupProperties(props map[string]string) error {
	n := func(name string) int64 {
		v, _ := BrokerValue(props, name)
		return ParseInt64(v)
	}
	triples := [][3]string{
		{"group.share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
		{"group.share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
		{"group.share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
		{"group.share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
		{"group.share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
	}
	for _, t := range triples {
		v, lo, hi := t[0], t[1], t[2]
		switch {
		case n(hi) < n(lo):
			return InvalidConfigError(fmt.Sprintf("%s must be greater than or equal to %s", hi, lo))
		case n(v) < n(lo):
			return InvalidConfigError(fmt.Sprintf("%s must be greater than or equal to %s", v, lo))
		case n(v) > n(hi):
			return InvalidConfigError(fmt.Sprintf("%s must be less than or equal to %s", v, hi))
		}
	}
	if n("group.share.heartbeat.interval.ms") >= n("group.share.session.timeout.ms") {
		return InvalidConfigError("group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms")
	}
	return nil
}

// autoOffsetResetValidator is Kafka's ShareGroupAutoOffsetResetStrategy.Validator:
// latest, earliest or by_duration:<ISO-8601 duration>, in any case.
type autoOffsetResetValidator struct{}

func (autoOffsetResetValidator) check(v parsedValue) string {
	if _, _, err := ParseShareAutoOffsetReset(v.str); err != nil {
		return err.Error()
	}
	return ""
}

func (autoOffsetResetValidator) String() string {
	return "[latest, earliest, by_duration:PnDTnHnMn.nS]"
}

// isoDuration is the subset of Java's Duration.parse a reset duration may use: days,
// hours, minutes and seconds with up to nine decimals, never negative.
var isoDuration = regexp.MustCompile(`^\+?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:[.,](\d{0,9}))?S)?)?$`)

// ParseShareAutoOffsetReset parses a share.auto.offset.reset value (any case):
// strategy is "latest", "earliest" or "by_duration", with d the duration of the last.
// The error is Kafka's reason, without the name and value.
func ParseShareAutoOffsetReset(s string) (strategy string, d time.Duration, err error) {
	lower := strings.ToLower(strings.TrimSpace(s))
	switch lower {
	case "latest", "earliest":
		return lower, 0, nil
	}
	rest, ok := strings.CutPrefix(lower, "by_duration:")
	if !ok {
		return "", 0, errors.New("the value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.")
	}
	d, err = parseISODuration(strings.ToUpper(strings.TrimSpace(rest)))
	if err != nil {
		return "", 0, err
	}
	return "by_duration", d, nil
}

// parseISODuration parses s (upper case) as an ISO-8601 duration PnDTnHnMn.nS.
func parseISODuration(s string) (time.Duration, error) {
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("Duration '%s' must not be negative.", s)
	}
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") || (m[1] == "" && m[2] == "" && m[3] == "" && m[4] == "") {
		return 0, fmt.Errorf("Unable to parse '%s' as an ISO-8601 duration.", s)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || n > int64(1<<62)/int64(unit) {
			return 0, fmt.Errorf("Unable to parse '%s' as an ISO-8601 duration.", s)
		}
		d += time.Duration(n) * unit
	}
	if frac := m[5]; frac != "" {
		ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		d += time.Duration(ns)
	}
	return d, nil
}
