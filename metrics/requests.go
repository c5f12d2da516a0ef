package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RequestTiming is one request's life on a connection, split as Kafka's RequestMetrics
// split it: queue (read until its handler starts), local (the handler), remote (waiting
// on other replicas or a timer: long-poll fetches, acks=all produces, group joins),
// response queue (until the connection's writer takes it, after earlier responses) and
// response send (writing it).
type RequestTiming struct {
	Received    time.Time // the request's frame was read
	Started     time.Time // its handler started
	Handled     time.Time // its handler returned
	Ready       time.Time // its response existed (Handled, unless answered later)
	WriteStart  time.Time // the writer began writing the response
	WriteFinish time.Time // the response was written
}

// maxAPIKey bounds the API keys with request metrics.
const maxAPIKey = 128

type apiMetrics struct {
	requests                                             prometheus.Counter
	total, queue, local, remote, responseQueue, response prometheus.Observer
}

// requestMetrics are kafka.network:type=RequestMetrics, per API.
type requestMetrics struct {
	requests                                             *prometheus.CounterVec
	total, queue, local, remote, responseQueue, response *prometheus.HistogramVec
	names                                                [maxAPIKey]string
	apis                                                 [maxAPIKey]atomic.Pointer[apiMetrics]
}

func (m *requestMetrics) init(reg *prometheus.Registry) {
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_requests_total",
		Help: "Requests answered, per API (request=\"Produce\", ...): RequestsPerSec.",
	}, []string{"request"})
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBucketsMs}, []string{"request"})
	}
	m.total = hist("kafka_network_requestmetrics_totaltimems", "Request time from read to response written, in milliseconds: TotalTimeMs.")
	m.queue = hist("kafka_network_requestmetrics_requestqueuetimems", "Time from the request read until its handler started, in milliseconds: RequestQueueTimeMs.")
	m.local = hist("kafka_network_requestmetrics_localtimems", "Time in the request's handler, in milliseconds: LocalTimeMs.")
	m.remote = hist("kafka_network_requestmetrics_remotetimems", "Time waiting on other brokers or timers (acks=all, long-poll fetch, group joins), in milliseconds: RemoteTimeMs.")
	m.responseQueue = hist("kafka_network_requestmetrics_responsequeuetimems", "Time from the response being ready until its write began (earlier responses first), in milliseconds: ResponseQueueTimeMs.")
	m.response = hist("kafka_network_requestmetrics_responsesendtimems", "Time writing the response, in milliseconds: ResponseSendTimeMs.")
	reg.MustRegister(m.requests, m.total, m.queue, m.local, m.remote, m.responseQueue, m.response)
}

// RegisterAPI names an API key for the request metrics; requests of unnamed keys are
// not counted. Call it before requests arrive. An API's series appear with its first
// request, so that APIs never used cost nothing in a scrape.
func (r *Registry) RegisterAPI(key int16, name string) {
	if key < 0 || int(key) >= maxAPIKey {
		return
	}
	r.requests.names[key] = name
}

// api returns the metrics of an API, creating its series on first use.
func (m *requestMetrics) api(key int16) *apiMetrics {
	if a := m.apis[key].Load(); a != nil {
		return a
	}
	name := m.names[key]
	if name == "" {
		return nil
	}
	m.apis[key].CompareAndSwap(nil, &apiMetrics{
		requests: m.requests.WithLabelValues(name),
		total:    m.total.WithLabelValues(name), queue: m.queue.WithLabelValues(name),
		local: m.local.WithLabelValues(name), remote: m.remote.WithLabelValues(name),
		responseQueue: m.responseQueue.WithLabelValues(name), response: m.response.WithLabelValues(name),
	})
	return m.apis[key].Load()
}

// ObserveRequest records one answered request of an API.
func (r *Registry) ObserveRequest(key int16, t RequestTiming) {
	if key < 0 || int(key) >= maxAPIKey {
		return
	}
	a := r.requests.api(key)
	if a == nil {
		return
	}
	a.requests.Inc()
	a.total.Observe(ms(t.WriteFinish.Sub(t.Received)))
	a.queue.Observe(ms(t.Started.Sub(t.Received)))
	a.local.Observe(ms(t.Handled.Sub(t.Started)))
	a.remote.Observe(ms(t.Ready.Sub(t.Handled)))
	a.responseQueue.Observe(ms(t.WriteStart.Sub(t.Ready)))
	a.response.Observe(ms(t.WriteFinish.Sub(t.WriteStart)))
}

func ms(d time.Duration) float64 { return max(float64(d), 0) / float64(time.Millisecond) }
