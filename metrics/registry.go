package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Gatherer is prometheus.Gatherer, so that callers need not import the client library.
type Gatherer = prometheus.Gatherer

// Options configures a Registry.
type Options struct {
	// PerPartition enables the per-topic and per-partition series (topic labels on
	// BrokerTopicMetrics, the Log metrics, consumer lag per partition). Off, only the
	// broker-wide series remain: the choice for clusters with many partitions.
	PerPartition bool
	// Snapshot returns the broker's state at scrape time; nil reports no state metrics.
	Snapshot func() Snapshot
	// Extra are gatherers served with this registry's metrics (Raft's go-metrics).
	Extra []prometheus.Gatherer
}

// Registry holds one broker's metrics. Its methods are safe for concurrent use.
type Registry struct {
	reg          *prometheus.Registry
	gatherer     prometheus.Gatherer
	perPartition bool

	messagesIn, bytesIn, bytesOut *prometheus.CounterVec
	replicationBytesIn            prometheus.Counter
	replicationBytesOut           prometheus.Counter
	all                           *TopicCounters
	isrShrinks, isrExpands        prometheus.Counter
	failedISRUpdates              prometheus.Counter
	fsync                         prometheus.Histogram
	requests                      requestMetrics
	groupRebalances               groupRebalances
	remote                        remoteMetrics
	verify                        replicaVerification
	topicsMu                      sync.Mutex
	topics                        map[string]*TopicCounters
}

// New builds a registry with Kafka's metrics, the Go runtime and process metrics.
func New(opts Options) *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), perPartition: opts.PerPartition, topics: map[string]*TopicCounters{}}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counterVec := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"topic"})
		r.reg.MustRegister(v)
		return v
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		r.reg.MustRegister(c)
		return c
	}
	r.messagesIn = counterVec("kafka_server_brokertopicmetrics_messagesin_total",
		"Records appended by produce requests, per topic (topic=\"\" is every topic): MessagesInPerSec.")
	r.bytesIn = counterVec("kafka_server_brokertopicmetrics_bytesin_total",
		"Record batch bytes appended by produce requests, per topic (topic=\"\" is every topic): BytesInPerSec.")
	r.bytesOut = counterVec("kafka_server_brokertopicmetrics_bytesout_total",
		"Record batch bytes returned to consumer fetches, per topic (topic=\"\" is every topic): BytesOutPerSec.")
	r.replicationBytesIn = counter("kafka_server_brokertopicmetrics_replicationbytesin_total",
		"Record batch bytes appended by this broker's follower fetches: ReplicationBytesInPerSec.")
	r.replicationBytesOut = counter("kafka_server_brokertopicmetrics_replicationbytesout_total",
		"Record batch bytes returned to follower fetches: ReplicationBytesOutPerSec.")
	r.isrShrinks = counter("kafka_server_replicamanager_isrshrinks_total",
		"ISR shrinks of partitions this broker leads, as committed by the controller: IsrShrinksPerSec.")
	r.isrExpands = counter("kafka_server_replicamanager_isrexpands_total",
		"ISR expansions of partitions this broker leads, as committed by the controller: IsrExpandsPerSec.")
	r.failedISRUpdates = counter("kafka_server_replicamanager_failedisrupdates_total",
		"ISR changes of partitions this broker leads that the controller refused: FailedIsrUpdatesPerSec.")
	r.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kafka_log_logflushstats_logflushrateandtimems",
		Help:    "Duration of log fsyncs (one per group commit) in milliseconds: LogFlushRateAndTimeMs.",
		Buckets: latencyBucketsMs,
	})
	r.reg.MustRegister(r.fsync)
	r.requests.init(r.reg)
	r.groupRebalances.init(r.reg)
	r.remote.init(r.reg, opts.PerPartition)
	r.verify.init(r.reg)
	r.all = &TopicCounters{messagesIn: r.messagesIn.WithLabelValues(""), bytesIn: r.bytesIn.WithLabelValues(""),
		bytesOut: r.bytesOut.WithLabelValues("")}
	if opts.Snapshot != nil {
		r.reg.MustRegister(&stateCollector{snapshot: opts.Snapshot, perPartition: opts.PerPartition})
	}
	r.gatherer = r.reg
	if len(opts.Extra) > 0 {
		r.gatherer = append(prometheus.Gatherers{r.reg}, opts.Extra...)
	}
	return r
}

// Gatherer is what /metrics serves.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.gatherer }

// latencyBucketsMs are the latency buckets in milliseconds: 0.1 ms to 10 s, a dozen so
// that a scrape stays small (six histograms per API in use).
var latencyBucketsMs = []float64{0.1, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 10000}

// TopicCounters are one topic's BrokerTopicMetrics counters, also counted into the
// broker-wide series. Resolve them once per topic (Topic) and keep them.
type TopicCounters struct {
	messagesIn, bytesIn, bytesOut prometheus.Counter
	total                         *TopicCounters // nil for the broker-wide counters
}

// Topic returns the counters of a topic. With per-partition series off, the
// broker-wide counters alone.
func (r *Registry) Topic(name string) *TopicCounters {
	if !r.perPartition {
		return r.all
	}
	r.topicsMu.Lock()
	defer r.topicsMu.Unlock()
	if t, ok := r.topics[name]; ok {
		return t
	}
	t := &TopicCounters{messagesIn: r.messagesIn.WithLabelValues(name), bytesIn: r.bytesIn.WithLabelValues(name),
		bytesOut: r.bytesOut.WithLabelValues(name), total: r.all}
	r.topics[name] = t
	return t
}

// ForgetTopic removes a deleted topic's series.
func (r *Registry) ForgetTopic(name string) {
	if !r.perPartition {
		return
	}
	r.topicsMu.Lock()
	delete(r.topics, name)
	r.topicsMu.Unlock()
	r.messagesIn.DeleteLabelValues(name)
	r.bytesIn.DeleteLabelValues(name)
	r.bytesOut.DeleteLabelValues(name)
	r.remote.forget(name)
}

// Produced counts one appended produce batch set: records and bytes.
func (t *TopicCounters) Produced(records, bytes int64) {
	t.messagesIn.Add(float64(records))
	t.bytesIn.Add(float64(bytes))
	if t.total != nil {
		t.total.Produced(records, bytes)
	}
}

// Fetched counts bytes returned to a consumer fetch.
func (t *TopicCounters) Fetched(bytes int64) {
	t.bytesOut.Add(float64(bytes))
	if t.total != nil {
		t.total.Fetched(bytes)
	}
}

// ReplicationIn counts bytes a follower fetch of this broker appended.
func (r *Registry) ReplicationIn(bytes int64) { r.replicationBytesIn.Add(float64(bytes)) }

// ReplicationOut counts bytes returned to other brokers' follower fetches.
func (r *Registry) ReplicationOut(bytes int64) { r.replicationBytesOut.Add(float64(bytes)) }

// ISRShrunk counts an ISR shrink of a partition this broker leads.
func (r *Registry) ISRShrunk() { r.isrShrinks.Inc() }

// ISRExpanded counts an ISR expansion of a partition this broker leads.
func (r *Registry) ISRExpanded() { r.isrExpands.Inc() }

// ISRUpdateFailed counts an ISR change of a partition this broker leads that the
// controller refused (an error for the partition in its AlterPartition answer).
func (r *Registry) ISRUpdateFailed() { r.failedISRUpdates.Inc() }

// Fsynced records the duration of one log fsync in seconds.
func (r *Registry) Fsynced(seconds float64) { r.fsync.Observe(seconds * 1000) }
