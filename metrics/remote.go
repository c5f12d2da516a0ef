package metrics

import "github.com/prometheus/client_golang/prometheus"

// Tiered storage (KIP-405): Kafka's remote storage meters of BrokerTopicMetrics
// (RemoteCopyBytesPerSec, RemoteFetchRequestsPerSec, ...) as counters with a topic
// label (topic="" every topic), and, from the Snapshot, the remote log gauges
// (RemoteCopyLagBytes, RemoteLogSizeBytes, ...) of the partitions this broker leads and
// the remote log manager's RemoteLogManagerTasksAvgIdlePercent. Remote operations are
// per segment or per remote read, so the counters are looked up per call.

// remoteMetrics are the remote storage counters.
type remoteMetrics struct {
	perPartition                           bool
	copyBytes, copyRequests, copyErrors    *prometheus.CounterVec
	fetchBytes, fetchRequests, fetchErrors *prometheus.CounterVec
	deleteRequests, deleteErrors           *prometheus.CounterVec
}

func (m *remoteMetrics) init(reg *prometheus.Registry, perPartition bool) {
	m.perPartition = perPartition
	vec := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_" + name + "_total", Help: help}, []string{"topic"})
		reg.MustRegister(v)
		return v
	}
	m.copyBytes = vec("remotecopybytes", "Bytes of segments copied to remote storage, per topic (topic=\"\" is every topic): RemoteCopyBytesPerSec.")
	m.copyRequests = vec("remotecopyrequests", "Segment copies to remote storage attempted: RemoteCopyRequestsPerSec.")
	m.copyErrors = vec("remotecopyerrors", "Segment copies to remote storage that failed: RemoteCopyErrorsPerSec.")
	m.fetchBytes = vec("remotefetchbytes", "Bytes read from remote storage for fetches: RemoteFetchBytesPerSec.")
	m.fetchRequests = vec("remotefetchrequests", "Reads from remote storage for fetches: RemoteFetchRequestsPerSec.")
	m.fetchErrors = vec("remotefetcherrors", "Reads from remote storage for fetches that failed: RemoteFetchErrorsPerSec.")
	m.deleteRequests = vec("remotedeleterequests", "Remote segments whose objects a deletion was attempted for: RemoteDeleteRequestsPerSec.")
	m.deleteErrors = vec("remotedeleteerrors", "Remote segment deletions that failed: RemoteDeleteErrorsPerSec.")
}

// add adds n to v's broker-wide series and, with per-topic series on, topic's.
func (m *remoteMetrics) add(v *prometheus.CounterVec, topic string, n float64) {
	v.WithLabelValues("").Add(n)
	if m.perPartition && topic != "" {
		v.WithLabelValues(topic).Add(n)
	}
}

func (m *remoteMetrics) forget(topic string) {
	for _, v := range []*prometheus.CounterVec{m.copyBytes, m.copyRequests, m.copyErrors, m.fetchBytes,
		m.fetchRequests, m.fetchErrors, m.deleteRequests, m.deleteErrors} {
		v.DeleteLabelValues(topic)
	}
}

// RemoteCopyRequest counts a segment copy to remote storage started.
func (r *Registry) RemoteCopyRequest(topic string) { r.remote.add(r.remote.copyRequests, topic, 1) }

// RemoteCopied counts a segment of bytes copied to remote storage.
func (r *Registry) RemoteCopied(topic string, bytes int64) {
	r.remote.add(r.remote.copyBytes, topic, float64(bytes))
}

// RemoteCopyError counts a failed segment copy.
func (r *Registry) RemoteCopyError(topic string) { r.remote.add(r.remote.copyErrors, topic, 1) }

// RemoteFetchRequest counts a read from remote storage for a fetch (the remote read
// path calls it once per remote read).
func (r *Registry) RemoteFetchRequest(topic string) { r.remote.add(r.remote.fetchRequests, topic, 1) }

// RemoteFetched counts bytes a remote read returned.
func (r *Registry) RemoteFetched(topic string, bytes int64) {
	r.remote.add(r.remote.fetchBytes, topic, float64(bytes))
}

// RemoteFetchError counts a failed remote read.
func (r *Registry) RemoteFetchError(topic string) { r.remote.add(r.remote.fetchErrors, topic, 1) }

// RemoteDeleteRequest counts a remote segment deletion attempted.
func (r *Registry) RemoteDeleteRequest(topic string) { r.remote.add(r.remote.deleteRequests, topic, 1) }

// RemoteDeleteError counts a failed remote segment deletion.
func (r *Registry) RemoteDeleteError(topic string) { r.remote.add(r.remote.deleteErrors, topic, 1) }

// RemoteLogState is one led partition's remote log, read at scrape time.
type RemoteLogState struct {
	Topic     string
	Partition int32
	// CopyLagBytes and CopyLagSegments are the closed local segments not yet copied
	// (Kafka's RemoteCopyLagBytes and RemoteCopyLagSegments).
	CopyLagBytes    int64
	CopyLagSegments int
	// SizeBytes is the size of the copied remote segments (RemoteLogSizeBytes);
	// MetadataCount the remote segment records in any state (RemoteLogMetadataCount).
	SizeBytes     int64
	MetadataCount int
}

var (
	descRemoteCopyLagBytes = prometheus.NewDesc("kafka_server_brokertopicmetrics_remotecopylagbytes",
		"Bytes of closed local segments not yet copied to remote storage, partitions led here (topic=\"\" every topic): RemoteCopyLagBytes.", []string{"topic"}, nil)
	descRemoteCopyLagSegments = prometheus.NewDesc("kafka_server_brokertopicmetrics_remotecopylagsegments",
		"Closed local segments not yet copied to remote storage: RemoteCopyLagSegments.", []string{"topic"}, nil)
	descRemoteLogSize = prometheus.NewDesc("kafka_server_brokertopicmetrics_remotelogsizebytes",
		"Bytes of the copied remote segments of the partitions led here: RemoteLogSizeBytes.", []string{"topic"}, nil)
	descRemoteLogMetadataCount = prometheus.NewDesc("kafka_server_brokertopicmetrics_remotelogmetadatacount",
		"Remote segment metadata records of the partitions led here: RemoteLogMetadataCount.", []string{"topic"}, nil)
	descRemoteIdle = prometheus.NewDesc("kafka_log_remote_remotelogmanager_remotelogmanagertasksavgidlepercent",
		"Fraction of time the remote log manager's task was idle over its last interval (1 without remote storage): RemoteLogManagerTasksAvgIdlePercent.", nil, nil)
	remoteDescs = []*prometheus.Desc{descRemoteCopyLagBytes, descRemoteCopyLagSegments, descRemoteLogSize,
		descRemoteLogMetadataCount, descRemoteIdle}
)

// collectRemote reports the remote log gauges per topic and broker-wide (topic="").
func collectRemote(ch chan<- prometheus.Metric, logs []RemoteLogState, idle float64, perPartition bool) {
	type sums struct {
		lagBytes, size     int64
		lagSegments, count int
	}
	var all sums
	topics := map[string]*sums{}
	for _, l := range logs {
		all.lagBytes += l.CopyLagBytes
		all.lagSegments += l.CopyLagSegments
		all.size += l.SizeBytes
		all.count += l.MetadataCount
		if !perPartition {
			continue
		}
		s := topics[l.Topic]
		if s == nil {
			s = &sums{}
			topics[l.Topic] = s
		}
		s.lagBytes += l.CopyLagBytes
		s.lagSegments += l.CopyLagSegments
		s.size += l.SizeBytes
		s.count += l.MetadataCount
	}
	emit := func(topic string, s sums) {
		ch <- prometheus.MustNewConstMetric(descRemoteCopyLagBytes, prometheus.GaugeValue, float64(s.lagBytes), topic)
		ch <- prometheus.MustNewConstMetric(descRemoteCopyLagSegments, prometheus.GaugeValue, float64(s.lagSegments), topic)
		ch <- prometheus.MustNewConstMetric(descRemoteLogSize, prometheus.GaugeValue, float64(s.size), topic)
		ch <- prometheus.MustNewConstMetric(descRemoteLogMetadataCount, prometheus.GaugeValue, float64(s.count), topic)
	}
	emit("", all)
	for t, s := range topics {
		emit(t, *s)
	}
	ch <- prometheus.MustNewConstMetric(descRemoteIdle, prometheus.GaugeValue, idle)
}
