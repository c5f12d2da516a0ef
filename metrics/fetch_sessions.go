package metrics

import "github.com/prometheus/client_golang/prometheus"

// FetchSessionState is the broker's KIP-227 fetch session cache (Kafka's
// kafka.server:type=FetchSessionCache metrics).
type FetchSessionState struct {
	Sessions   int   // NumIncrementalFetchSessions
	Partitions int64 // NumIncrementalFetchPartitionsCached
	Evictions  int64 // IncrementalFetchSessionEvictionsPerSec's count since start
}

var (
	descFetchSessions = prometheus.NewDesc("kafka_server_fetchsessioncache_numincrementalfetchsessions",
		"Incremental fetch sessions (KIP-227) this broker keeps: NumIncrementalFetchSessions.", nil, nil)
	descFetchSessionPartitions = prometheus.NewDesc("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
		"Partitions held by this broker's fetch sessions: NumIncrementalFetchPartitionsCached.", nil, nil)
	descFetchSessionEvictions = prometheus.NewDesc("kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total",
		"Fetch sessions evicted to make room for new ones: IncrementalFetchSessionEvictionsPerSec.", nil, nil)
	fetchSessionDescs = []*prometheus.Desc{descFetchSessions, descFetchSessionPartitions, descFetchSessionEvictions}
)

func collectFetchSessions(ch chan<- prometheus.Metric, s FetchSessionState) {
	ch <- prometheus.MustNewConstMetric(descFetchSessions, prometheus.GaugeValue, float64(s.Sessions))
	ch <- prometheus.MustNewConstMetric(descFetchSessionPartitions, prometheus.GaugeValue, float64(s.Partitions))
	ch <- prometheus.MustNewConstMetric(descFetchSessionEvictions, prometheus.CounterValue, float64(s.Evictions))
}
