package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Replica verification (broker/replica_verifier.go, docs/verify.md): the divergences a
// follower found between its committed log and its leader's, per topic, and how many
// partitions are divergent now; /readyz lists them (ReadyDetails) without failing.

// replicaVerification are the replica verification series.
type replicaVerification struct {
	divergences *prometheus.CounterVec
	divergent   prometheus.Gauge
	scanned     prometheus.Counter
	// details lists the divergent partitions for /readyz; nil until set.
	details atomic.Pointer[func() []string]
}

func (m *replicaVerification) init(reg *prometheus.Registry) {
	m.divergences = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "petrel_replica_divergence_total",
		Help: "Divergences found by replica verification between this follower's committed log and its leader's, per topic (topic=\"\" is every topic)."}, []string{"topic"})
	m.divergent = prometheus.NewGauge(prometheus.GaugeOpts{Name: "petrel_replica_divergent_partitions",
		Help: "Partitions this broker follows whose last verification found a divergence from the leader."})
	m.scanned = prometheus.NewCounter(prometheus.CounterOpts{Name: "petrel_replica_verification_bytes_total",
		Help: "Bytes of this broker's committed log that replica verification digested."})
	reg.MustRegister(m.divergences, m.divergent, m.scanned)
	m.divergences.WithLabelValues("") // the broker-wide series is served from the start, at 0
}

// ReplicaDivergence counts a divergence found in a partition of topic, in the topic's
// series and the broker-wide one (topic="").
func (r *Registry) ReplicaDivergence(topic string) {
	r.verify.divergences.WithLabelValues("").Inc()
	r.verify.divergences.WithLabelValues(topic).Inc()
}

// SetDivergentPartitions sets how many followed partitions are divergent now.
func (r *Registry) SetDivergentPartitions(n int) { r.verify.divergent.Set(float64(n)) }

// ReplicaVerified counts bytes digested by replica verification.
func (r *Registry) ReplicaVerified(bytes int64) { r.verify.scanned.Add(float64(bytes)) }

// SetReadyDetails sets what /readyz adds to its body, one line each, whatever its status.
func (r *Registry) SetReadyDetails(f func() []string) { r.verify.details.Store(&f) }

// readyDetails are SetReadyDetails' lines, none before it is called.
func (r *Registry) readyDetails() []string {
	if f := r.verify.details.Load(); f != nil {
		return (*f)()
	}
	return nil
}
