package telemetry

// The pushed metrics kept per client instance and exported on /metrics: the manager
// is a prometheus.Collector, unchecked (the series' names come from the clients).

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// series is one exported value of a client instance (guarded by Manager.mu).
type series struct {
	point Point
}

func seriesKey(p Point) string {
	var b strings.Builder
	b.WriteString(p.Name)
	for _, l := range p.Labels {
		b.WriteByte(0xff)
		b.WriteString(l.Name)
		b.WriteByte('=')
		b.WriteString(l.Value)
	}
	return b.String()
}

// recordLocked keeps points as in's series: a delta adds to the value kept, anything
// else replaces it; a new series beyond MaxSeries is dropped and counted.
func (m *Manager) recordLocked(in *instance, points []Point) {
	for _, p := range points {
		key := seriesKey(p)
		if s, ok := in.series[key]; ok {
			if p.Delta {
				s.point.Value += p.Value
			} else {
				s.point.Value = p.Value
			}
			continue
		}
		if m.cfg.MaxSeries > 0 && m.series >= m.cfg.MaxSeries {
			m.stats.droppedSeries++
			continue
		}
		in.series[key] = &series{point: p}
		m.series++
	}
}

// Describe sends nothing: the collector is unchecked, its series named by clients.
func (m *Manager) Describe(chan<- *prometheus.Desc) {}

const clientSeriesHelp = "A client metric pushed with PushTelemetry (KIP-714), labelled with the client."

var (
	instanceCountDesc = prometheus.NewDesc("kafka_server_client_metrics_instance_count",
		"Client instances the broker keeps telemetry state for (client-metrics instance-count).", nil, nil)
	unknownSubscriptionDesc = prometheus.NewDesc("kafka_server_client_metrics_unknown_subscription_request_total",
		"Pushes refused with UNKNOWN_SUBSCRIPTION_ID (client-metrics unknown-subscription-request-count).", nil, nil)
	throttleDesc = prometheus.NewDesc("kafka_server_client_metrics_throttle_total",
		"Telemetry requests refused with THROTTLING_QUOTA_EXCEEDED (client-metrics throttle-count).", nil, nil)
	pushErrorDesc = prometheus.NewDesc("kafka_server_client_metrics_plugin_error_total",
		"Pushes whose metrics could not be decoded or were too large once decompressed (client-metrics plugin-error-count).", nil, nil)
	seriesDesc = prometheus.NewDesc("petrel_client_metrics_series",
		"Client metric series kept for /metrics, across every client instance.", nil, nil)
	droppedDesc = prometheus.NewDesc("petrel_client_metrics_dropped_series_total",
		"Pushed client metric values not kept: new series beyond petrel.client.metrics.max.series, or data points over the attribute limit.", nil, nil)
)

// Collect expires the instances that stopped pushing, then sends every kept series
// with the client's labels, and the manager's own counters.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	for _, metric := range m.gather() {
		ch <- metric
	}
}

// gather builds the metrics under mu, so that Collect sends them without it.
func (m *Manager) gather() []prometheus.Metric {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]prometheus.Metric, 0, m.series+6)
	m.expireLocked(m.cfg.Now())
	counter := map[string]bool{} // a name's type, the first seen: a series of the other type is left out
	for _, in := range m.instances {
		client := []string{uuidString(in.id), in.client.ClientID, in.client.SoftwareName, in.client.SoftwareVersion, in.client.Principal}
		for _, s := range in.series {
			if c, seen := counter[s.point.Name]; seen && c != s.point.Counter {
				continue
			}
			counter[s.point.Name] = s.point.Counter
			names := append(make([]string, 0, len(clientLabelNames)+len(s.point.Labels)), clientLabelNames...)
			values := append(make([]string, 0, cap(names)), client...)
			for _, l := range s.point.Labels {
				names = append(names, l.Name)
				values = append(values, l.Value)
			}
			kind := prometheus.GaugeValue
			if s.point.Counter {
				kind = prometheus.CounterValue
			}
			metric, err := prometheus.NewConstMetric(prometheus.NewDesc(s.point.Name, clientSeriesHelp, names, nil), kind, s.point.Value, values...)
			if err == nil {
				out = append(out, metric)
			}
		}
	}
	out = append(out, prometheus.MustNewConstMetric(instanceCountDesc, prometheus.GaugeValue, float64(len(m.instances))))
	out = append(out, prometheus.MustNewConstMetric(unknownSubscriptionDesc, prometheus.CounterValue, m.stats.unknownSubscription))
	out = append(out, prometheus.MustNewConstMetric(throttleDesc, prometheus.CounterValue, m.stats.throttled))
	out = append(out, prometheus.MustNewConstMetric(pushErrorDesc, prometheus.CounterValue, m.stats.pushErrors))
	out = append(out, prometheus.MustNewConstMetric(seriesDesc, prometheus.GaugeValue, float64(m.series)))
	out = append(out, prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, m.stats.droppedSeries))
	return out
}
