package broker

// Metrics: the broker's side of metrics/. Hot-path counters are resolved once (per
// topic on each local replica, per API at start) and updated per request or batch;
// state is read into a metrics.Snapshot at scrape time, never kept up to date.

import (
	"errors"
	"net"
	"time"

	"github.com/petrel-broker/petrel/metrics"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// perPartitionMetricsProperty turns the per-topic and per-partition series on or off.
const perPartitionMetricsProperty = "petrel.metrics.per.partition.enable"

// newMetrics builds the broker's registry and names every served API for the request
// metrics.
func (b *Broker) newMetrics() *metrics.Registry {
	extra := []metrics.Gatherer{metrics.RaftGatherer()}
	if b.clientTelemetry != nil {
		extra = append(extra, b.clientTelemetry.registry)
	}
	reg := metrics.New(metrics.Options{
		PerPartition: b.cfg.boolValue(perPartitionMetricsProperty),
		Snapshot:     b.metricsSnapshot,
		Extra:        extra,
	})
	reg.RegisterAPI(int16(kmsg.ApiVersions), kmsg.NameForKey(int16(kmsg.ApiVersions)))
	for _, a := range apis {
		reg.RegisterAPI(int16(a.key), rpc.NameForKey(int16(a.key)))
	}
	return reg
}

// startMetricsServer serves /metrics, /healthz and /readyz when configured.
func (b *Broker) startMetricsServer() error {
	srv, err := metrics.Start(b.cfg.MetricsListener, b.cfg.MetricsListen, b.metrics, b.readiness)
	if err != nil || srv == nil {
		return err
	}
	b.metricsServer = srv
	b.logger.Info("metrics listener started", "address", srv.Addr().String())
	return nil
}

// MetricsAddr is the bound metrics listener address, nil when there is none.
func (b *Broker) MetricsAddr() net.Addr {
	if b.metricsServer == nil {
		return nil
	}
	return b.metricsServer.Addr()
}

// metricsListenerValue is the bound metrics listener address, "" when there is none.
func (b *Broker) metricsListenerValue() string {
	if a := b.MetricsAddr(); a != nil {
		return a.String()
	}
	return ""
}

// closeMetricsServer stops the metrics listener, if any.
func (b *Broker) closeMetricsServer() error {
	if b.metricsServer == nil {
		return nil
	}
	return b.metricsServer.Close()
}

// readyForClients is /readyz answering 200 (readiness).
func (b *Broker) readyForClients() bool { return b.readiness() == nil }

// readiness is /readyz: nil when the broker serves client requests — start-up
// readiness reached (readiness.go), not stopping, its metadata store writable
// (metadata_store.go) — else why not.
func (b *Broker) readiness() error {
	switch {
	case b.shuttingDown.Load():
		return errors.New("shutting down")
	case b.metadataStoreFailure() != nil:
		return b.metadataStoreFailure()
	case !b.Ready():
		return errors.New("catching up with the metadata log, fenced, or opening replicas")
	}
	return nil
}

// observeRequest feeds the request metrics from the Kafka listener.
func (b *Broker) observeRequest(key int16, t rpc.RequestTiming) {
	b.metrics.ObserveRequest(key, metrics.RequestTiming(t))
}

// testHookFsynced, when set by a test, runs after every fsync of a replica's log, on the
// goroutine that fsynced, before the replica takes the result.
var testHookFsynced func()

// replicaMetricsOptions are a local replica's metric hooks.
func (b *Broker) replicaMetricsOptions(opts replication.Options) replication.Options {
	opts.ObserveFsync = func(d time.Duration) {
		b.metrics.Fsynced(d.Seconds())
		if testHookFsynced != nil {
			testHookFsynced()
		}
	}
	opts.ObserveFollowerAppend = b.metrics.ReplicationIn
	return opts
}

// metricsSnapshot reads the broker's state for a scrape: each local replica's state
// (one lock of its own at a time) and the image.
func (b *Broker) metricsSnapshot() metrics.Snapshot {
	s := metrics.Snapshot{NodeID: b.cfg.NodeID, ClusterID: b.Image().ClusterID, ActiveController: b.IsController(),
		Ready: b.readyForClients(), Raft: metrics.RaftStateFromStats(b.raft.raft.Stats()), FetchSessions: metrics.FetchSessionState(b.fetchSessions.State()),
		MetadataStoreOffline: b.metadataStoreFailure() != nil, OfflineReplicas: b.offline.count()}
	if b.offline.dirFailure() != nil {
		s.OfflineLogDirs = 1
	}
	s.LogDirFreeBytes, s.LogDirBelowMinFree = b.logSpace.Fresh(time.Now())
	for _, lp := range b.partitions.all() {
		st := lp.State()
		ps := metrics.PartitionState{Topic: lp.Topic, Partition: lp.ID, Leader: st.Role == replication.Leader,
			LogStartOffset: st.LogStartOffset, LogEndOffset: st.LogEndOffset}
		if ps.Leader {
			minInsync := 0
			if set := lp.settings.Load(); set != nil {
				minInsync = set.minInsync
			}
			ps.LeaderISR(len(st.ISR), int(lp.replicationFactor.Load()), minInsync)
		}
		_ = lp.WithLog(func(l *segment.Log) error {
			ps.Size, ps.Segments = l.Size(), len(l.Segments())
			return nil
		})
		s.AddReplica(ps, st.FollowerLag)
	}
	if s.ActiveController {
		im := b.Image()
		s.GlobalTopics = len(im.Topics)
		for _, t := range im.Topics {
			for _, p := range t.Partitions {
				s.CountPartition(p.Leader)
			}
		}
		for _, br := range im.Brokers {
			s.CountBroker(br.Fenced)
		}
	}
	s.GroupLags = b.groupLags()
	s.Groups = b.groupStates()
	s.ShareGroups = b.shareGroupStates()
	s.RemoteLogs, s.RemoteTasksIdle = b.remoteLogStates(), b.remoteLogs.idleFraction()
	return s
}
