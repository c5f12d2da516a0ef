package config

// Dynamic broker configs: which broker properties IncrementalAlterConfigs and
// AlterConfigs may change at run time here, and how a change is checked.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/metadata"
)

// dynamicBrokerConfigNames are the broker properties of the table that change at run
// time here, as in Kafka (kafkaDynamicBrokerConfigs): the broker defaults of the topic
// configs (Kafka's DynamicLogConfig set), the replication throttles (KIP-73), the
// connection limits (rpc/connection_quotas.go), the log cleaner's settings
// (broker/cleaner.go) and the producer state settings. The broker reads each where it is
// used through its dynamicBrokerValue, so a change applies from the next use. Kafka-dynamic properties
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
	for _, d := range TopicDefs {
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
	"remote.log.manager.copy.max.bytes.per.second": "tiered storage is being built (P23)",
	"remote.log.reader.threads":                    "the remote reader goroutines start with the broker",
	"remote.fetch.max.wait.ms":                     "read at start",
	"remote.log.index.file.cache.total.size.bytes": "the remote index cache is sized at start",
	"log.retention.hours":                          "change log.retention.ms at run time instead",
	"log.retention.minutes":                        "change log.retention.ms at run time instead",
	"log.roll.hours":                               "change log.roll.ms at run time instead",
	"listeners":                                    "listeners are opened at start",
	"listener.security.protocol.map":               "listeners are opened at start",
	"sasl.enabled.mechanisms":                      "a listener's SASL mechanisms are read at start",
	"sasl.jaas.config":                             "a listener's SASL users and credentials are read at start",
	"sasl.mechanism.inter.broker.protocol":         "the inter-broker credentials are read at start",
	"ssl.keystore.type":                            "a listener's TLS configuration is read at start",
	"ssl.keystore.location":                        "a listener's TLS configuration is read at start",
	"ssl.keystore.password":                        "a listener's TLS configuration is read at start",
	"ssl.key.password":                             "a listener's TLS configuration is read at start",
	"ssl.keystore.key":                             "a listener's TLS configuration is read at start",
	"ssl.keystore.certificate.chain":               "a listener's TLS configuration is read at start",
	"ssl.truststore.type":                          "a listener's TLS configuration is read at start",
	"ssl.truststore.location":                      "a listener's TLS configuration is read at start",
	"ssl.truststore.password":                      "a listener's TLS configuration is read at start",
	"ssl.truststore.certificates":                  "a listener's TLS configuration is read at start",
	"ssl.client.auth":                              "a listener's TLS configuration is read at start",
	"ssl.endpoint.identification.algorithm":        "a listener's TLS configuration is read at start",
}

// ValidateBrokerResourceName checks a broker resource name: empty (the cluster default) or
// a broker id.
func ValidateBrokerResourceName(name string) error {
	if name == "" {
		return nil
	}
	if id, err := strconv.ParseInt(name, 10, 32); err != nil || id < 0 {
		return InvalidConfigError(fmt.Sprintf("Invalid broker name %q: a broker resource is named by a broker id, or empty for the cluster default", name))
	}
	return nil
}

// ValidateDynamicBrokerConfig checks one dynamic broker config of a broker resource
// (perBroker: named by a broker id, else the cluster default), with Kafka's rules and
// ConfigException wording (INVALID_CONFIG): only a property Kafka changes at run time
// may change; per-broker ones need a broker id; the SSL ones need a listener prefix. A
// property Kafka changes at run time that Petrel does not act on (InertBrokerConfig) is
// accepted and stored, as a start-up property of that kind is.
func ValidateDynamicBrokerConfig(name, value string, perBroker bool) error {
	def, known := brokerByName[name]
	if !known {
		def, known = ListenerPropertyDef(name)
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
	_, inert := InertBrokerConfig(name)
	switch {
	case !known && !inert:
		return InvalidConfigError("Unknown broker config name: " + name)
	case !kafkaDynamic(name):
		return InvalidConfigError(fmt.Sprintf("Cannot update these configs dynamically: Set(%s)", name))
	case strings.HasPrefix(base, "ssl.") && base == name:
		return InvalidConfigError(fmt.Sprintf("These security configs can be dynamically updated only per-listener using the listener prefix: Set(%s)", name))
	case kafkaDynamicBrokerConfigs[base] == "per-broker" && !perBroker:
		return InvalidConfigError(fmt.Sprintf("Cannot update these configs at default cluster level, broker id must be specified: Set(%s)", name))
	case inert:
		return nil
	case notDynamicYet[base] != "":
		return InvalidConfigError(fmt.Sprintf("Cannot update these configs dynamically: Set(%s): Petrel does not change it at run time yet (%s); restart the broker with the new value", name, notDynamicYet[base]))
	case !dynamicBrokerConfigNames[name]:
		return InvalidConfigError(fmt.Sprintf("Cannot update these configs dynamically: Set(%s)", name))
	}
	return CheckValue(def, value)
}

// InertBrokerConfig reports a Kafka property that Petrel knows but does not act on
// (defs_unimplemented.go) and that Kafka changes at run time: IncrementalAlterConfigs
// and AlterConfigs store it and the controller logs that it is inert, as a start-up
// property of that kind is accepted with a warning, so tools that set Kafka's full
// property set work.
func InertBrokerConfig(name string) (Unimplemented, bool) {
	if _, inTable := brokerByName[name]; inTable {
		return Unimplemented{}, false
	}
	if _, ok := ListenerPropertyDef(name); ok {
		return Unimplemented{}, false
	}
	u, ok := UnimplementedBrokerConfig(name)
	return u, ok && kafkaDynamic(name)
}

// AppendListValue and SubtractListValue are Kafka's APPEND and SUBTRACT on a
// comma-separated list.
func AppendListValue(current, add string) string {
	items := splitList(current)
	for _, v := range splitList(add) {
		if !slices.Contains(items, v) {
			items = append(items, v)
		}
	}
	return strings.Join(items, ",")
}

func SubtractListValue(current, remove string) string {
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
