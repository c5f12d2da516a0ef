package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/fsm"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/metrics"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/shareleader"
)

// Broker is one Petrel node: the Kafka listener, the Raft member with its metadata
// image, and the partition replicas placed on it.
//
// Lock order: Broker.mu → replication.Partition locks. No lock is held across network
// I/O or Raft calls.
type Broker struct {
	cfg    Config
	logger hclog.Logger

	machine  *fsm.FSM
	raft     *raftNode
	server   *rpc.Server
	listener net.Listener // the first of listeners
	// listeners are the Kafka listeners with their security (listeners.go).
	listeners []boundListener
	// interBroker dials other brokers' inter-broker listener with this broker's
	// credentials; authFailures delays failed authentication answers (sasl.go).
	interBroker  *interBrokerDialer
	authFailures *authFailureLimiter

	incarnation metadata.Uuid // random per process start
	// dataDir is the data directory's lock (data_dir_lock.go), taken first by Start and
	// released last by Shutdown and Kill.
	dataDir *dataDirLock
	// previousIncarnation is the incarnation the previous process on this data
	// directory registered (registration_file.go), named in this process's
	// registration; zero when unknown. Set in Start.
	previousIncarnation metadata.Uuid
	// persistedEpoch is the broker epoch last recorded in the registration file;
	// lifecycle goroutine only.
	persistedEpoch int64

	partitions *partitionManager
	segFiles   *segment.FileCache // bounds the open segment files of every replica (filecache.go)
	offline    *offlineReplicas   // replicas that cannot be opened (offline_replicas.go)
	// remoteLogs copies segments to remote storage (remote_log_manager.go); nil unless
	// remote.log.storage.system.enable.
	remoteLogs *remoteLogManager
	logSpace   *logDirSpace                  // the log directory's free space and its floor (log_dir_space.go)
	cleaner    atomic.Pointer[logCleaner]    // nil when log.cleaner.enable is false
	fetchers   *replication.Fetchers         // follower fetchers, one per leader
	groups     *coordinator.GroupCoordinator // the __consumer_offsets partitions this broker leads
	txns       *coordinator.TxnCoordinator   // the __transaction_state partitions this broker leads
	verifier   *coordinator.Verifier         // KIP-890 verification with the transaction coordinators (txn_verify.go)
	peers      *peerClients                  // kept connections to the other brokers (txn verification, markers)
	// verifyPeers are replica verification's own connections to the other brokers, so
	// that its ReplicaDigests (MiBs read per request) never queue ahead of peers' calls.
	verifyPeers *peerClients
	// unreadable bounds the ERROR lines of ReplicaDigests answers that find a replica
	// unreadable (unreadable_reports.go).
	unreadable unreadableReports

	// shareStates are the __share_group_state partitions this broker leads
	// (share_coordinator.go); sharePersister reaches every share coordinator
	// (share_persister.go), set before the broker serves; share_wiring.go reads it
	// under sharePersisterMu (tests replace it with setPersister).
	shareStates      *coordinator.ShareCoordinator
	sharePersister   shareleader.Persister
	sharePersisterMu sync.RWMutex
	// shareStateCreator creates __share_group_state (share_coordinator.go).
	shareStateCreator internalTopicCreator
	// shares is the share-partition leader of KIP-932 share groups (share_partitions.go).
	shares *shareleader.Manager

	// fetchSessions are the KIP-227 fetch sessions of the consumers and followers that
	// fetch from this broker (replication.FetchSessionCache).
	fetchSessions *replication.FetchSessionCache
	// fetches answers Fetch from the local replicas (01_fetch.go).
	fetches *replication.FetchServer

	offsetsCreator  internalTopicCreator
	txnStateCreator internalTopicCreator
	records         *recordValidator // walks the records of produced batches
	metrics         *metrics.Registry
	clientTelemetry *clientTelemetry // KIP-714 (client_telemetry.go)
	metricsServer   *metrics.Server  // nil without a metrics listener

	ctrl         *controller.Controller   // the quorum controller, active while this node is the Raft leader (controller.go)
	refusals     *controller.Refusals     // refused connections to peers, to report and hold answers for (controller/peer_refusals.go)
	leaderProbes *controller.LeaderProbes // Metadata's probes of the leaders it names (controller/leader_probes.go)
	controllers  controllerClients        // connection to the current controller
	heartbeats   controllerClients        // the controller connection of registrations and heartbeats only (controllerChannel)
	isrChanges   isrBatcher               // this broker's AlterPartition requests, batched (alter_partition_batch.go)
	stalls       stallHooks               // tests only (stall_hooks.go)
	leaders      *leaderWatch             // closed at each Raft leader change (forwarding.go)
	brokerEpoch  atomic.Int64             // this broker's epoch; -1 until registered
	producerIDs  *coordinator.ProducerIDs
	dial         rpc.DialFunc         // outgoing connections (tests inject faults)
	throttles    replicationThrottles // KIP-73 replication quotas (throttle.go)
	authz        authorization        // ACL authorizer (authorize.go)
	quotas       clientQuotas         // client quotas (quotas.go)

	// previousBrokerEpoch is the epoch the last clean shutdown recorded (-1: none),
	// sent as BrokerRegistration's PreviousBrokerEpoch (clean_shutdown_epoch.go).
	previousBrokerEpoch atomic.Int64

	draining chan struct{} // closed when shutdown starts: parked fetches answer at once
	// drainCtx is cancelled with draining closing: the purgatory's parked fetches
	// answer at once.
	drainCtx    context.Context
	drainCancel context.CancelFunc
	// clusterStopCtx is cancelled when the controller lets this broker stop because
	// every broker is stopping (controller.ControlledShutdown): no follower fetches
	// again, so parked acks=all writes are answered at once by the timeout rule
	// (replication.Purgatory.ExpireAcksAllWhen) instead of in the drain's last seconds.
	clusterStopCtx    context.Context
	clusterStopCancel context.CancelFunc
	// purgatory parks the delayed requests: acks=all produces, WriteTxnMarkers'
	// waits for the high watermark, consumers' and followers' fetches
	// (replication.Purgatory).
	purgatory *replication.Purgatory
	// shuttingDown is set when Shutdown starts: from then on heartbeats only ask for a
	// controlled shutdown (a plain heartbeat would get the broker unfenced again).
	shuttingDown atomic.Bool
	stop         chan struct{} // closed once requests are drained: loops end
	// ready is set, and readyCh closed, once start-up readiness is reached
	// (readiness.go); startedAt is when Start began, for its log line.
	ready     atomic.Bool
	readyCh   chan struct{}
	startedAt time.Time
	// readyTimes is set by markReady, before readyCh closes (readiness.go).
	readyTimes readyTimes
	trace      startupTrace // startup_trace.go
	wg         sync.WaitGroup
	shutOnce   sync.Once
	shutErr    error
}

// Start opens the node's data, joins or bootstraps Raft, starts the Kafka listener and
// the background loops, and returns once the listener accepts connections.
func Start(cfg Config) (*Broker, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Properties == nil {
		cfg.Properties = map[string]string{}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Before any port, store or file of the data directory is opened.
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			lock.release()
		}
	}()
	warnings, err := cfg.checkProperties()
	if err != nil {
		return nil, err
	}
	if err := cfg.checkInterBrokerIdentity(); err != nil {
		return nil, err
	}
	for _, w := range warnings {
		cfg.Logger.Warn(w)
	}
	b := &Broker{cfg: cfg, logger: cfg.Logger, machine: fsm.New(), stop: make(chan struct{}), draining: make(chan struct{}),
		refusals: controller.NewRefusals(),
		leaders:  newLeaderWatch(), dial: cfg.Dial,
		readyCh: make(chan struct{}), startedAt: time.Now(), dataDir: lock}
	b.leaderProbes = newLeaderProbes(b)
	b.drainCtx, b.drainCancel = context.WithCancel(context.Background())
	b.ctrl = b.newController()
	b.purgatory = replication.NewPurgatory(b.drainCtx)
	b.clusterStopCtx, b.clusterStopCancel = context.WithCancel(context.Background())
	b.purgatory.ExpireAcksAllWhen(b.clusterStopCtx)
	b.brokerEpoch.Store(-1)
	b.previousBrokerEpoch.Store(-1)
	b.isrChanges.b = b
	b.producerIDs = newProducerIDs(b)
	b.records = newRecordValidator(cfg.int64Value(decompressedLimitProperty))
	b.segFiles = newSegmentFileCache(&b.cfg)
	b.fetchSessions = replication.NewFetchSessionCache(int(cfg.int64Value("max.incremental.fetch.session.cache.slots")),
		cfg.int64Value("min.incremental.fetch.session.eviction.ms"))
	b.fetches = &replication.FetchServer{Sessions: b.fetchSessions, Purgatory: b.purgatory, Source: fetchSource{b}, Leader: &b.throttles.Leader,
		ReadReplica: b.readReplicaSelector()}
	b.offline = newOfflineReplicas()
	b.logSpace = newLogDirSpace(cfg.logsDir(), cfg.int64Value(config.MinFreeBytesProperty))
	b.clientTelemetry = newClientTelemetry(&b.cfg)
	b.metrics = b.newMetrics()
	if b.dial == nil {
		var d net.Dialer
		b.dial = d.DialContext
	}
	var inc [16]byte
	if _, err := rand.Read(inc[:]); err != nil {
		return nil, err
	}
	b.incarnation = metadata.UuidFromBytes(inc)
	b.loadPreviousIncarnation()
	if err := ensureDir(cfg.logsDir()); err != nil {
		return nil, err
	}
	if b.remoteLogs, err = newRemoteLogManager(b); err != nil { // remote_log_manager.go
		return nil, err
	}
	if b.remoteLogs != nil {
		b.fetches.Remote = b.remoteLogs.reads
	}
	b.fetchers = replication.NewFetchers(replication.FetcherConfig{
		BrokerID:         cfg.NodeID,
		MaxWait:          cfg.durationMs("replica.fetch.wait.max.ms"),
		MaxBytes:         int32(cfg.int64Value("replica.fetch.max.bytes")),
		ResponseMaxBytes: int32(cfg.int64Value("replica.fetch.response.max.bytes")),
		Backoff:          max(cfg.durationMs("replica.fetch.backoff.ms"), time.Millisecond),
		Connect:          b.connectFetcher, // fetcher_conn.go
		// Fetch v15 (KIP-903): topics by id, and this incarnation's broker epoch.
		BrokerEpoch: b.brokerEpoch.Load,
		Throttled: func(topic string, partition int32) bool {
			rate := b.ownFollowerThrottle(topic, partition)
			return rate >= 0 && b.throttles.Follower.Exceeded(rate, time.Now())
		},
		Fetched: func(topic string, partition int32, n int) {
			if rate := b.ownFollowerThrottle(topic, partition); rate >= 0 {
				b.throttles.Follower.Record(rate, n, time.Now())
			}
		},
		Logger: b.logger.Named("fetcher"),
	})
	b.groups = newGroupCoordinator(b)
	b.peers = newPeerClients(b)
	b.verifyPeers = newPeerClients(b)
	b.txns = newTxnCoordinator(b)
	b.shareStates = newShareCoordinator(b)
	b.sharePersister = newSharePersister(b)
	b.shares = newShareManager(b)
	b.verifier = newVerifier(b)
	// The replicas' checkpoints (one line per replica) are read while Raft starts
	// (its snapshot restore): neither needs the other until the reconciler runs.
	type pmResult struct {
		pm  *partitionManager
		err error
	}
	pmCh := make(chan pmResult, 1)
	go func() {
		pm, err := newPartitionManager(b)
		b.trace.mark("replica_checkpoints_read")
		pmCh <- pmResult{pm, err}
	}()
	b.authFailures = newAuthFailureLimiter(cfg.durationMs("connection.failed.authentication.delay.ms"))
	listenErr := b.openListeners()
	if listenErr == nil {
		b.trace.mark("raft_start")
		if b.raft, err = startRaft(&b.cfg, b.machine, b.dial, b.logger.Named("raft")); err != nil {
			b.closeListeners()
		}
	}
	res := <-pmCh
	switch {
	case listenErr != nil || err != nil || res.err != nil:
		if listenErr == nil && err == nil {
			b.raft.close()
			b.closeListeners()
		}
		if res.pm != nil {
			res.pm.abandon() // a failed start writes no checkpoint and no marker (checkpoints.go)
		}
		return nil, errors.Join(listenErr, err, res.err)
	}
	pm := res.pm
	b.partitions = pm
	b.traceRaftStarted()
	b.server = rpc.NewServer(rpc.ServerConfig{
		MaxRequestBytes:       int32(cfg.int64Value("socket.request.max.bytes")),
		QueuedMaxRequestBytes: cfg.int64Value("queued.max.request.bytes"),
		IdleTimeout:           cfg.durationMs("connections.max.idle.ms"),
		Logger:                b.logger,
		ObserveRequest:        b.observeRequest,
	}, b.newRegistry())
	if err := b.startMetricsServer(); err != nil {
		b.server.Close()
		b.closeListeners()
		b.raft.close()
		pm.abandon()
		return nil, err
	}
	b.serveListeners()
	b.goLoop("leader watch", b.watchLeader)
	b.goLoop("controller", b.ctrl.Run)
	b.goLoop("broker lifecycle", b.lifecycleLoop)
	b.goLoop("start-up trace", b.traceReplay)
	b.goLoop("metadata snapshots", b.metadataSnapshotLoop)
	if b.isObserver() {
		b.goLoop("join", b.joinLoop)
	}
	b.goLoop("reconciler", b.partitions.reconcileLoop)
	if b.remoteLogs != nil {
		b.goLoop("remote log manager", b.remoteLogs.run)
		b.remoteLogs.reads.start()
	}
	b.goLoop("log maintenance", b.partitions.maintenanceLoop)
	if cfg.boolValue("petrel.replica.verification.enable") {
		b.goLoop("replica verification", newReplicaVerifier(b).run) // replica_verifier.go
	}
	b.goLoop("offline replica reports", b.offlineReportLoop)
	if b.raft.meta != nil {
		b.goLoop("metadata store watch", b.watchMetadataStore) // metadata_store.go
	}
	if cfg.boolValue("log.cleaner.enable") {
		c := newLogCleaner(b.partitions, b.stop)
		b.cleaner.Store(c)
		c.start(b)
	}
	b.logger.Info("broker started", "node_id", cfg.NodeID, "listeners", b.listenersValue(false),
		"raft", string(b.raft.transport.LocalAddr()), "data_dir", cfg.DataDir)
	started = true
	return b, nil
}

func (b *Broker) goLoop(name string, fn func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn()
		b.logger.Debug("loop stopped", "loop", name)
	}()
}

// Addr is the bound Kafka listener address.
func (b *Broker) Addr() net.Addr { return b.listener.Addr() }

// RaftAddr is the bound Raft transport address.
func (b *Broker) RaftAddr() string { return string(b.raft.transport.LocalAddr()) }

// NodeID is this node's id.
func (b *Broker) NodeID() int32 { return b.cfg.NodeID }

// Image is the current metadata image.
func (b *Broker) Image() *metadata.Image { return b.machine.Image() }

// connectToBroker dials another broker's inter-broker listener (follower fetches).
func (b *Broker) connectToBroker(ctx context.Context, id int32) (*rpc.Client, error) {
	addr, ok := b.interBrokerAddr(b.Image().Brokers[id])
	if !ok {
		return nil, fmt.Errorf("broker %d has no known address", id)
	}
	return b.dialBroker(ctx, addr, fmt.Sprintf("%s%d", forwardedClientPrefix, b.cfg.NodeID))
}

// Snapshot forces a Raft snapshot of the metadata image (tests and operators).
func (b *Broker) Snapshot() error { return b.raft.raft.Snapshot().Error() }

// RaftServers returns the Raft configuration: node ids with their suffrage.
func (b *Broker) RaftServers() (voters, nonvoters []int32, err error) {
	f := b.raft.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, nil, err
	}
	for _, s := range f.Configuration().Servers {
		id, err := strconv.Atoi(string(s.ID))
		if err != nil {
			continue
		}
		if s.Suffrage == raft.Voter {
			voters = append(voters, int32(id))
		} else {
			nonvoters = append(nonvoters, int32(id))
		}
	}
	return voters, nonvoters, nil
}

// BrokerEpoch is this broker's epoch from its registration, or -1.
func (b *Broker) BrokerEpoch() int64 { return b.brokerEpoch.Load() }

// WaitReady blocks until this broker has reached start-up readiness (it serves client
// requests: readiness.go) and is registered, unfenced and visible in its own metadata
// now, or ctx ends.
func (b *Broker) WaitReady(ctx context.Context) error {
	select {
	case <-b.readyCh:
	case <-ctx.Done():
		return fmt.Errorf("broker %d not ready: %w", b.cfg.NodeID, ctx.Err())
	case <-b.stop:
		return errors.New("broker stopped")
	}
	return b.waitUnfenced(ctx)
}

// waitUnfenced blocks until this process's registration is unfenced in its own image,
// or ctx ends.
func (b *Broker) waitUnfenced(ctx context.Context) error {
	for {
		changed := b.machine.Changed()
		if br, ok := b.Image().Brokers[b.cfg.NodeID]; ok && !br.Fenced && br.IncarnationID == b.incarnation {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("broker %d not ready: %w", b.cfg.NodeID, ctx.Err())
		case <-b.stop:
			return errors.New("broker stopped")
		}
	}
}

// Shutdown stops gracefully: stop accepting and reading requests, finish the ones in
// flight (bounded by ctx), stop the loops, flush and close every log, write the
// checkpoints and the clean-shutdown marker, and stop Raft.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.shutOnce.Do(func() {
		b.logger.Info("broker shutting down")
		b.shuttingDown.Store(true)
		b.raft.beginStop()
		phases := newShutdownPhases()
		led := b.Image().LeaderCount(b.cfg.NodeID) > 0
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		moved, clusterStopping := b.controlledShutdown(cctx)
		// A stopping controller hands the quorum over now rather than after the drain:
		// the next controller writes this broker's remaining ISR removals (invariant
		// 39) while this node drains, and the other brokers' controller requests go
		// there instead of waiting in this node's drain. When the whole cluster is
		// stopping, every voter is, and a transfer would only wait for one of them.
		if clusterStopping {
			b.clusterStopCancel()
		} else {
			b.raft.resign()
		}
		b.lingerForHints(cctx, led && moved) // leader_hint_linger.go
		cancel()
		phases.mark("controlled_shutdown")
		close(b.draining)
		b.drainCancel()
		b.groups.Close() // parked group requests answer NOT_COORDINATOR before the drain
		b.txns.Close()
		b.shareStates.Close()
		b.shares.Close()
		b.peers.close()
		b.verifyPeers.close()
		errs := []error{b.server.Shutdown(ctx)}
		close(b.stop)
		b.wg.Wait()
		b.controllers.close()
		b.heartbeats.close()
		b.fetchers.Close()
		phases.mark("drain")
		// Nothing reads the metadata any more: Raft stops while the replicas close,
		// instead of applying the next controller's entries on this node's cores.
		raftClosed := make(chan error, 1)
		go func() {
			if clusterStopping {
				raftClosed <- b.raft.close()
			} else {
				raftClosed <- b.raft.shutdown()
			}
		}()
		errs = append(errs, b.partitions.close())
		phases.mark("replicas_closed")
		errs = append(errs, <-raftClosed)
		phases.mark("raft_closed") // what Raft's stop took beyond the replicas' close
		errs = append(errs, b.closeMetricsServer())
		b.dataDir.release() // last: another process may take the directory now
		b.shutErr = errors.Join(errs...)
		b.logger.Info("broker shut down", phases.fields()...)
	})
	return b.shutErr
}

// Kill stops the node abruptly, as a crash would: connections and Raft are cut, logs are
// neither flushed nor checkpointed and no clean-shutdown marker is written. Tests use it.
func (b *Broker) Kill() {
	b.shutOnce.Do(func() {
		b.closeMetricsServer()
		b.server.Close()
		close(b.draining)
		b.drainCancel()
		b.groups.Close()
		b.txns.Close()
		b.shareStates.Close()
		b.shares.Close()
		b.peers.close()
		b.verifyPeers.close()
		close(b.stop)
		b.wg.Wait()
		b.controllers.close()
		b.heartbeats.close()
		b.fetchers.Close()
		b.partitions.abandon()
		b.raft.close()
		b.dataDir.release() // as a crash's end of process would
		b.shutErr = errors.New("killed")
	})
}

// waitTimeout returns a context for an internal wait bounded by d and by shutdown.
func (b *Broker) waitTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, d)
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func removeAllQuiet(path string) { _ = os.RemoveAll(path) }
