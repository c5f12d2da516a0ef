package metrics

import (
	"sync"
	"time"

	gometrics "github.com/armon/go-metrics"
	gometricsprom "github.com/armon/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// hashicorp/raft reports through go-metrics' process-wide sink (armon/go-metrics in a
// default build). One Prometheus sink is installed per process, on a registry of its
// own that every node's /metrics also serves: with several nodes in one process
// (petrel dev, tests) their Raft series are shared.
var (
	raftOnce     sync.Once
	raftRegistry *prometheus.Registry
)

// RaftGatherer installs the go-metrics Prometheus sink once and returns its registry.
// Raft's metrics appear under petrel_raft_* (raft.commitTime as
// petrel_raft_commitTime, raft.leader.lastContact as petrel_raft_leader_lastContact,
// ...), as summaries in milliseconds.
func RaftGatherer() prometheus.Gatherer {
	raftOnce.Do(func() {
		raftRegistry = prometheus.NewRegistry()
		sink, err := gometricsprom.NewPrometheusSinkFrom(gometricsprom.PrometheusOpts{
			Registerer: raftRegistry,
			Expiration: time.Minute,
			Name:       "petrel_raft_sink",
		})
		if err != nil {
			return // the registry stays empty
		}
		cfg := gometrics.DefaultConfig("petrel")
		cfg.EnableHostname = false
		cfg.EnableHostnameLabel = false
		cfg.EnableRuntimeMetrics = false // the Go collector reports the runtime
		cfg.EnableServiceLabel = false
		_, _ = gometrics.NewGlobal(cfg, sink)
	})
	return raftRegistry
}
