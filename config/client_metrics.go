package config

// Client metrics subscriptions (KIP-714): the configs of the CLIENT_METRICS config
// resource (type 16), Kafka's ClientMetricsConfigs, and the broker properties that
// bound client telemetry.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ClientMetricsConfigSource is Kafka's CLIENT_METRICS_CONFIG source (DescribeConfigs):
// a subscription's own value.
const ClientMetricsConfigSource int8 = 7

// ClientMetricsDefs are a subscription's configs, with Kafka's types and defaults.
var ClientMetricsDefs = []Def{
	{Name: "metrics", Type: TypeList, Default: "",
		Doc: "The telemetry metric name prefixes to ask of the matching clients; * asks for every metric, empty for none."},
	{Name: "interval.ms", Type: TypeInt, Default: "300000", Validator: between(100, 3600000),
		Doc: "How often the matching clients push, in milliseconds (the shortest of the subscriptions a client matches)."},
	{Name: "match", Type: TypeList, Default: "",
		Doc:  "The client selectors a client must all match, each selector=regex: client_instance_id, client_id, client_software_name, client_software_version, client_source_address, client_source_port; empty matches every client.",
		Note: "The regular expressions are Go's RE2 syntax (Kafka takes Java's), matched against the whole value."},
}

var clientMetricsByName = indexConfigDefs(ClientMetricsDefs)

// ClientMetricsDef returns the definition of subscription config name.
func ClientMetricsDef(name string) (Def, bool) {
	d, ok := clientMetricsByName[name]
	return d, ok
}

// clientMetricsSelectors are the selectors a match pattern may name (Kafka's).
var clientMetricsSelectors = []string{"client_instance_id", "client_id", "client_software_name",
	"client_software_version", "client_source_address", "client_source_port"}

// ValidateClientMetricsConfig checks one subscription config as Kafka's
// ClientMetricsConfigs.validate: a known name, its type and range, and match patterns
// of known selectors with regular expressions that compile (Go's RE2 syntax).
func ValidateClientMetricsConfig(name, value string) error {
	def, ok := clientMetricsByName[name]
	if !ok {
		return InvalidConfigError("Unknown client metrics configuration: [" + name + "]")
	}
	if name == "interval.ms" {
		if n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32); err != nil || n < 100 || n > 3600000 {
			return InvalidConfigError(fmt.Sprintf("Invalid value %s for interval.ms, interval must be between 100 and 3600000 (1 hour)", value))
		}
	}
	if name == "match" {
		for _, p := range splitList(value) {
			key, expr, ok := strings.Cut(p, "=")
			if !ok || strings.TrimSpace(expr) == "" || !containsString(clientMetricsSelectors, strings.TrimSpace(key)) {
				return InvalidConfigError("Illegal client matching pattern: " + p)
			}
			if _, err := regexp.Compile(strings.TrimSpace(expr)); err != nil {
				return InvalidConfigError("Illegal regex pattern in client matching pattern: " + p)
			}
		}
	}
	return CheckValue(def, value)
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// ResolveClientMetricsConfigs resolves every config of a subscription: its own value
// (CLIENT_METRICS_CONFIG), else Kafka's default (DEFAULT_CONFIG).
func ResolveClientMetricsConfigs(own map[string]string) []Resolved {
	out := make([]Resolved, 0, len(ClientMetricsDefs))
	for _, def := range ClientMetricsDefs {
		if v, ok := own[def.Name]; ok {
			out = append(out, Resolved{def, v, ClientMetricsConfigSource})
			continue
		}
		out = append(out, Resolved{def, def.Default, DefaultConfig})
	}
	return out
}

// The broker properties of client telemetry.
const (
	// TelemetryMaxBytesProperty is Kafka's telemetry.max.bytes.
	TelemetryMaxBytesProperty = "telemetry.max.bytes"
	// ClientMetricsMaxSeriesProperty is Petrel's bound on the client series kept.
	ClientMetricsMaxSeriesProperty = "petrel.client.metrics.max.series"
)

var clientTelemetryBrokerDefs = []Def{
	{Name: TelemetryMaxBytesProperty, Type: TypeInt, Default: "1048576", Validator: atLeast(1), ReadOnly: true,
		Doc:  "The maximum size (after compression if compression is used) of telemetry metrics pushed from a client to the broker.",
		Note: "Also bounds the metrics once decompressed; larger pushes are TELEMETRY_TOO_LARGE."},
	{Name: ClientMetricsMaxSeriesProperty, Type: TypeInt, Default: "10000", Validator: atLeast(0), ReadOnly: true,
		Doc: "Petrel's own: the most client metric series (KIP-714 pushes re-exported on /metrics) kept across every client; new series beyond it are dropped and counted in petrel_client_metrics_dropped_series_total. 0 keeps none."},
}

func init() {
	BrokerDefs = append(BrokerDefs, clientTelemetryBrokerDefs...)
	for _, d := range clientTelemetryBrokerDefs {
		brokerByName[d.Name] = d
	}
}
