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

// dynamicBrokerConfigNames are the broker properties of the table that change at run
// time here, as in Kafka (kafkaDynamicBrokerConfigs): the broker defaults of the topic
// configs (Kafka's DynamicLogConfig set), the replication throttles (KIP-73), the
// connection limits (connection_quotas.go), the log cleaner's settings (cleaner.go) and
// the producer state settings. Each is read where it is used through
// dynamicBrokerValue, so a change applies from the next use. Kafka-dynamic properties
// of the table that Petrel reads only at start are notDynamicYet.
var dynamicBrokerConfigNames = func() map[string]bool {
	m := map[string]bool{
		"leader.replication.throttled.rate":         true,
		"follower.replication.throttled.rate":       true,
		"max.connections":                           true,
		"max.connections.per.ip":                    true,
		"max.connections.per.ip.overrides":          true,
		"log.cleaner.threads":                       true,
		"log.cleaner.dedupe.buffer.size":            true,
		"log.cleaner.io.max.bytes.per.second":       true,
		"log.cleaner.backoff.ms":                    true,
		"producer.id.expiration.ms":                 true,
		"transaction.partition.verification.enable": true,
		metadata.CordonedLogDirsConfig:              true,
	}
	for _, d := range topicConfigDefs {
		if d.BrokerSynonym != "" {
			m[d.BrokerSynonym] = true
		}
	}
	return m
}()

// notDynamicYet are the properties Kafka changes at run time that Petrel implements but
// reads only at start (docs/compatibility.md): a change is refused with a message saying
// to restart with the new value.
var notDynamicYet = map[string]string{
	"log.retention.hours":                   "change log.retention.ms at run time instead",
	"log.retention.minutes":                 "change log.retention.ms at run time instead",
	"log.roll.hours":                        "change log.roll.ms at run time instead",
	"listeners":                             "listeners are opened at start",
	"listener.security.protocol.map":        "listeners are opened at start",
	"sasl.enabled.mechanisms":               "a listener's SASL mechanisms are read at start",
	"sasl.jaas.config":                      "a listener's SASL users and credentials are read at start",
	"sasl.mechanism.inter.broker.protocol":  "the inter-broker credentials are read at start",
	"ssl.keystore.type":                     "a listener's TLS configuration is read at start",
	"ssl.keystore.location":                 "a listener's TLS configuration is read at start",
	"ssl.keystore.password":                 "a listener's TLS configuration is read at start",
	"ssl.key.password":                      "a listener's TLS configuration is read at start",
	"ssl.keystore.key":                      "a listener's TLS configuration is read at start",
	"ssl.keystore.certificate.chain":        "a listener's TLS configuration is read at start",
	"ssl.truststore.type":                   "a listener's TLS configuration is read at start",
	"ssl.truststore.location":               "a listener's TLS configuration is read at start",
	"ssl.truststore.password":               "a listener's TLS configuration is read at start",
	"ssl.truststore.certificates":           "a listener's TLS configuration is read at start",
	"ssl.client.auth":                       "a listener's TLS configuration is read at start",
	"ssl.endpoint.identification.algorithm": "a listener's TLS configuration is read at start",
}

// dynamicBrokerInt64, dynamicBrokerBool and dynamicBrokerFloat64 read a dynamic broker
// property as it is now (dynamicBrokerValue: this broker's value, the cluster default,
// the static value).
func (b *Broker) dynamicBrokerInt64(name string) int64 {
	return parseInt64(b.dynamicBrokerValue(b.Image(), name))
}

func (b *Broker) dynamicBrokerBool(name string) bool {
	return parseBool(b.dynamicBrokerValue(b.Image(), name))
}

func (b *Broker) dynamicBrokerFloat64(name string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSpace(b.dynamicBrokerValue(b.Image(), name)), 64)
	return f
}

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

// validateDynamicBrokerConfig checks one dynamic broker config of a broker resource
// (perBroker: named by a broker id, else the cluster default), with Kafka's rules and
// ConfigException wording (INVALID_CONFIG): only a property Kafka changes at run time
// may change; per-broker ones need a broker id; the SSL ones need a listener prefix. A
// property Kafka changes at run time that Petrel does not act on (inertBrokerConfig) is
// accepted and stored, as a start-up property of that kind is.
func validateDynamicBrokerConfig(name, value string, perBroker bool) error {
	def, known := brokerConfigByName[name]
	if !known {
		def, known = listenerPropertyDef(name)
	}
	base := name
	if rest, ok := strings.CutPrefix(name, "listener.name."); ok {
		if _, prop, ok := strings.Cut(rest, "."); ok {
			base = prop
			if _, p2, ok := strings.Cut(prop, "."); ok && strings.HasSuffix(p2, "sasl.jaas.config") {
				base = "sasl.jaas.config"
			}
		}
	}
	_, inert := inertBrokerConfig(name)
	switch {
	case !known && !inert:
		return invalidConfigError("Unknown broker config name: " + name)
	case !kafkaDynamic(name):
		return invalidConfigError(fmt.Sprintf("Cannot update these configs dynamically: Set(%s)", name))
	case strings.HasPrefix(base, "ssl.") && base == name:
		return invalidConfigError(fmt.Sprintf("These security configs can be dynamically updated only per-listener using the listener prefix: Set(%s)", name))
	case kafkaDynamicBrokerConfigs[base] == "per-broker" && !perBroker:
		return invalidConfigError(fmt.Sprintf("Cannot update these configs at default cluster level, broker id must be specified: Set(%s)", name))
	case inert:
		return nil
	case notDynamicYet[base] != "":
		return invalidConfigError(fmt.Sprintf("Cannot update these configs dynamically: Set(%s): Petrel does not change it at run time yet (%s); restart the broker with the new value", name, notDynamicYet[base]))
	case !dynamicBrokerConfigNames[name]:
		return invalidConfigError(fmt.Sprintf("Cannot update these configs dynamically: Set(%s)", name))
	}
	return checkConfigValue(def, value)
}

// inertBrokerConfig reports a Kafka property that Petrel knows but does not act on
// (configdefs_unimplemented.go) and that Kafka changes at run time: IncrementalAlterConfigs
// and AlterConfigs store it and the controller logs that it is inert, as a start-up
// property of that kind is accepted with a warning, so tools that set Kafka's full
// property set work.
func inertBrokerConfig(name string) (unimplementedConfig, bool) {
	if _, inTable := brokerConfigByName[name]; inTable {
		return unimplementedConfig{}, false
	}
	if _, ok := listenerPropertyDef(name); ok {
		return unimplementedConfig{}, false
	}
	u, ok := unimplementedBrokerConfig(name)
	return u, ok && kafkaDynamic(name)
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
				err = validateDynamicBrokerConfig(c.name, *c.value, res.Name != "")
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
