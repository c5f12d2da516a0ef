package telemetry

// Decoding a push: the OTLP MetricsData protobuf (KIP-714 fixes OTLP as the format)
// turned into points, each a Prometheus series of the client: gauges and sums as
// their value, histograms and summaries as their _count and _sum.

import (
	"errors"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// ErrTooLarge is what Push.Decompress returns for a payload that decompresses past
// MaxBytes (TELEMETRY_TOO_LARGE).
var ErrTooLarge = errors.New("telemetry: metrics decompress past telemetry.max.bytes")

// Limits on one point, so that a client cannot make a series arbitrarily large.
const (
	MaxAttributes  = 16  // a data point with more is dropped
	MaxLabelLength = 256 // longer attribute values are cut
)

// Point is one decoded value of a pushed metric.
type Point struct {
	Name    string  // the metric's name as a Prometheus name
	Labels  []Label // the data point's attributes, sorted by name
	Value   float64
	Counter bool // a monotonic sum, histogram count or sum: exported as a counter
	Delta   bool // the value is a delta to add to the last one
}

// Label is one attribute of a point.
type Label struct{ Name, Value string }

// Decode decodes an uncompressed OTLP MetricsData payload into points; points over
// the attribute limit are left out, and counted in dropped.
func Decode(b []byte) (points []Point, dropped int, err error) {
	var data metricspb.MetricsData
	if err := proto.Unmarshal(b, &data); err != nil {
		return nil, 0, err
	}
	add := func(name string, attrs []*commonpb.KeyValue, v float64, counter, delta bool) {
		if len(attrs) > MaxAttributes {
			dropped++
			return
		}
		points = append(points, Point{Name: name, Labels: labels(attrs), Value: v, Counter: counter, Delta: delta})
	}
	for _, rm := range data.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				name := promName(m.GetName())
				if name == "" || reservedName(name) {
					dropped++
					continue
				}
				switch d := m.GetData().(type) {
				case *metricspb.Metric_Gauge:
					for _, dp := range d.Gauge.GetDataPoints() {
						add(name, dp.GetAttributes(), numberValue(dp), false, false)
					}
				case *metricspb.Metric_Sum:
					delta := d.Sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
					mono := d.Sum.GetIsMonotonic()
					for _, dp := range d.Sum.GetDataPoints() {
						add(name, dp.GetAttributes(), numberValue(dp), mono, delta && mono)
					}
				case *metricspb.Metric_Histogram:
					delta := d.Histogram.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
					for _, dp := range d.Histogram.GetDataPoints() {
						add(name+"_count", dp.GetAttributes(), float64(dp.GetCount()), true, delta)
						add(name+"_sum", dp.GetAttributes(), dp.GetSum(), true, delta)
					}
				case *metricspb.Metric_ExponentialHistogram:
					delta := d.ExponentialHistogram.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
					for _, dp := range d.ExponentialHistogram.GetDataPoints() {
						add(name+"_count", dp.GetAttributes(), float64(dp.GetCount()), true, delta)
						add(name+"_sum", dp.GetAttributes(), dp.GetSum(), true, delta)
					}
				case *metricspb.Metric_Summary:
					for _, dp := range d.Summary.GetDataPoints() {
						add(name+"_count", dp.GetAttributes(), float64(dp.GetCount()), true, false)
						add(name+"_sum", dp.GetAttributes(), dp.GetSum(), true, false)
					}
				}
			}
		}
	}
	return points, dropped, nil
}

func numberValue(dp *metricspb.NumberDataPoint) float64 {
	if v, ok := dp.GetValue().(*metricspb.NumberDataPoint_AsInt); ok {
		return float64(v.AsInt)
	}
	return dp.GetAsDouble()
}

// clientLabelNames are the labels every client series carries; an attribute of the
// same name is renamed exported_<name>, as Prometheus renames clashing labels.
var clientLabelNames = []string{"client_instance_id", "client_id", "client_software_name", "client_software_version", "principal"}

func labels(attrs []*commonpb.KeyValue) []Label {
	out := make([]Label, 0, len(attrs))
	seen := map[string]bool{}
	for _, kv := range attrs {
		name := promName(kv.GetKey())
		if name == "" || strings.HasPrefix(name, "__") {
			continue
		}
		for _, c := range clientLabelNames {
			if name == c {
				name = "exported_" + name
			}
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		v := attrValue(kv.GetValue())
		if len(v) > MaxLabelLength {
			v = v[:MaxLabelLength]
		}
		out = append(out, Label{name, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func attrValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case nil:
		return ""
	default:
		// Numbers and booleans print as protobuf's text form of the value.
		s := strings.TrimSpace(v.String())
		if _, after, ok := strings.Cut(s, ":"); ok {
			return strings.TrimSpace(after)
		}
		return s
	}
}

// reservedPrefixes are the broker's own metric name prefixes: a client metric named
// so is dropped rather than shadow or clash with the broker's series.
var reservedPrefixes = []string{"kafka_", "petrel_", "go_", "process_", "promhttp_", "raft_"}

func reservedName(name string) bool {
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// promName turns an OTLP metric or attribute name into a Prometheus name: every
// character outside [a-zA-Z0-9_] becomes '_', and a leading digit gets a '_' before it.
func promName(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(s) + 1)
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// decodePush decompresses and decodes a push's metrics within maxBytes; the code is
// TELEMETRY_TOO_LARGE or INVALID_RECORD when that fails.
func decodePush(p Push, maxBytes int32) ([]Point, int, int16) {
	data := p.Metrics
	if p.CompressionType != 0 {
		if p.Decompress == nil {
			return nil, 0, kerr.InvalidRecord.Code
		}
		var err error
		if data, err = p.Decompress(); err != nil {
			if errors.Is(err, ErrTooLarge) {
				return nil, 0, kerr.TelemetryTooLarge.Code
			}
			return nil, 0, kerr.InvalidRecord.Code
		}
	}
	if maxBytes > 0 && len(data) > int(maxBytes) {
		return nil, 0, kerr.TelemetryTooLarge.Code
	}
	points, dropped, err := Decode(data)
	if err != nil {
		return nil, 0, kerr.InvalidRecord.Code
	}
	return points, dropped, 0
}
