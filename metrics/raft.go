package metrics

import (
	"strconv"
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

// RaftStateFromStats reads hashicorp/raft's Stats() map: the term and indexes (0 when
// absent or not a number) and last_contact ("never": -1, "0" on the leader, else a
// duration).
func RaftStateFromStats(stats map[string]string) RaftState {
	num := func(k string) uint64 { n, _ := strconv.ParseUint(stats[k], 10, 64); return n }
	rs := RaftState{Term: num("term"), CommitIndex: num("commit_index"), AppliedIndex: num("applied_index"),
		LastLogIndex: num("last_log_index"), LastContactSeconds: -1}
	switch c := stats["last_contact"]; c {
	case "never", "":
	case "0":
		rs.LastContactSeconds = 0
	default:
		if d, err := time.ParseDuration(c); err == nil {
			rs.LastContactSeconds = d.Seconds()
		}
	}
	return rs
}
