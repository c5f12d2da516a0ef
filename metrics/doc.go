// Package metrics is Petrel's metric registry and its HTTP endpoints.
//
// Metric names are the JMX exporter's conventional rendering of Apache Kafka's MBeans
// (kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec becomes
// kafka_server_brokertopicmetrics_messagesin_total), so that dashboards and alerts
// written for Kafka work unchanged; docs/metrics.md has the whole mapping.
//
// Two kinds of metric live here. Counters and histograms on the hot paths (records
// in and out, requests, fsyncs, ISR changes) are updated by the broker as things
// happen: each update is an atomic add on a metric resolved once (per topic, per API),
// never a label lookup per request. Everything that is state (partition counts,
// under-replicated partitions, log sizes, the controller, Raft, consumer lag) is read
// at scrape time from a Snapshot the broker supplies, so nothing is kept up to date
// between scrapes.
//
// The package imports nothing of Petrel's: the broker fills in its types.
package metrics
