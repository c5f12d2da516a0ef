package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Snapshot is the broker's state at scrape time.
type Snapshot struct {
	// NodeID and ClusterID identify the broker (petrel_broker_info).
	NodeID    int32
	ClusterID string
	// Partitions are the replicas open on this broker.
	Partitions []PartitionState
	// ActiveController reports whether this broker is the controller (the Raft leader).
	ActiveController bool
	// OfflinePartitions, GlobalPartitions and GlobalTopics are the controller's counts
	// of the cluster image; Kafka reports them on the active controller alone (0 on
	// every other broker), and so does Petrel.
	OfflinePartitions, GlobalPartitions, GlobalTopics int
	// FencedBrokers and ActiveBrokers count registered brokers (controller only).
	FencedBrokers, ActiveBrokers int
	// MaxLag is the largest lag in records of this broker's follower replicas behind
	// their leaders' high watermarks.
	MaxLag int64
	// Raft is the metadata quorum as this node sees it.
	Raft RaftState
	// Ready is the start-up readiness of /readyz.
	Ready bool
	// MetadataStoreOffline is set once this node's metadata store (raft.db) failed a
	// write and Raft stopped here.
	MetadataStoreOffline bool
	// OfflineLogDirs counts log directories that failed a write (0 or 1: one per node).
	OfflineLogDirs int
	// OfflineReplicas counts replicas assigned here that are offline (cannot be opened,
	// or their log directory is offline).
	OfflineReplicas int
	// LogDirFreeBytes is the free space of the log directory's file system (bytes
	// available to the broker), -1 when unknown; LogDirBelowMinFree is set while it is
	// below petrel.log.dir.min.free.bytes and Produce is refused.
	LogDirFreeBytes    int64
	LogDirBelowMinFree bool
	// GroupLags are the consumer lags of the groups this broker coordinates.
	GroupLags []GroupLag
	// Groups are the groups this broker coordinates (groups.go).
	Groups []GroupState
	// FetchSessions is the fetch session cache (fetch_sessions.go).
	FetchSessions FetchSessionState
	// ShareGroups are the share groups of the share partitions this broker leads
	// (share_groups.go).
	ShareGroups []ShareGroupState
	// RemoteLogs are the remote logs of the tiered partitions this broker leads
	// (remote.go); RemoteTasksIdle the remote log manager's idle fraction, 1 without one.
	RemoteLogs      []RemoteLogState
	RemoteTasksIdle float64
}

// PartitionState is one local replica.
type PartitionState struct {
	Topic           string
	Partition       int32
	Leader          bool
	UnderReplicated bool // leader only: ISR smaller than the replica set
	UnderMinISR     bool // leader only: ISR smaller than min.insync.replicas
	Size            int64
	Segments        int
	LogStartOffset  int64
	LogEndOffset    int64
}

// LeaderISR sets a leader replica's UnderReplicated (its ISR smaller than its replica
// set) and UnderMinISR (its ISR smaller than min.insync.replicas; 0 when unknown).
func (p *PartitionState) LeaderISR(isr, replicationFactor, minInsync int) {
	p.UnderReplicated = isr < replicationFactor
	p.UnderMinISR = isr < minInsync
}

// AddReplica adds a local replica's state and, for a follower, its lag in records.
func (s *Snapshot) AddReplica(p PartitionState, followerLag int64) {
	s.MaxLag = max(s.MaxLag, followerLag)
	s.Partitions = append(s.Partitions, p)
}

// CountPartition adds a partition of the cluster image to the controller's counts:
// offline when it has no leader (leader < 0). GlobalTopics is the caller's count.
func (s *Snapshot) CountPartition(leader int32) {
	s.GlobalPartitions++
	if leader < 0 {
		s.OfflinePartitions++
	}
}

// CountBroker adds a registered broker to the controller's counts.
func (s *Snapshot) CountBroker(fenced bool) {
	if fenced {
		s.FencedBrokers++
	} else {
		s.ActiveBrokers++
	}
}

// RaftState is hashicorp/raft's view of the metadata log (raft.Stats).
type RaftState struct {
	Term, CommitIndex, AppliedIndex, LastLogIndex uint64
	// LastContactSeconds is the time since the leader was last heard from; 0 on the
	// leader, -1 when never.
	LastContactSeconds float64
}

// GroupLag is one consumer group's lag on one partition: the partition's high
// watermark minus the group's committed offset.
type GroupLag struct {
	Group     string
	Topic     string
	Partition int32
	Lag       int64
}

var (
	descUnderReplicated = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions this broker leads whose ISR is smaller than their replica set: UnderReplicatedPartitions.", nil, nil)
	descUnderMinISR = prometheus.NewDesc("kafka_server_replicamanager_underminisrpartitioncount",
		"Partitions this broker leads whose ISR is smaller than min.insync.replicas: UnderMinIsrPartitionCount.", nil, nil)
	descPartitionCount = prometheus.NewDesc("kafka_server_replicamanager_partitioncount",
		"Replicas open on this broker: PartitionCount.", nil, nil)
	descLeaderCount = prometheus.NewDesc("kafka_server_replicamanager_leadercount",
		"Partitions this broker leads: LeaderCount.", nil, nil)
	descActiveController = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller (the Raft leader), 0 elsewhere: ActiveControllerCount.", nil, nil)
	descOffline = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions without a leader (active controller only): OfflinePartitionsCount.", nil, nil)
	descGlobalPartitions = prometheus.NewDesc("kafka_controller_kafkacontroller_globalpartitioncount",
		"Partitions in the cluster (active controller only): GlobalPartitionCount.", nil, nil)
	descGlobalTopics = prometheus.NewDesc("kafka_controller_kafkacontroller_globaltopiccount",
		"Topics in the cluster (active controller only): GlobalTopicCount.", nil, nil)
	descFenced = prometheus.NewDesc("kafka_controller_kafkacontroller_fencedbrokercount",
		"Registered brokers that are fenced (active controller only): FencedBrokerCount.", nil, nil)
	descActiveBrokers = prometheus.NewDesc("kafka_controller_kafkacontroller_activebrokercount",
		"Registered brokers that are unfenced (active controller only): ActiveBrokerCount.", nil, nil)
	descMaxLag = prometheus.NewDesc("kafka_server_replicafetchermanager_maxlag",
		"Largest lag in records of a follower replica here behind its leader's high watermark: MaxLag.", []string{"clientid"}, nil)
	descLogSize = prometheus.NewDesc("kafka_log_log_size",
		"Bytes of a partition's log on this broker: Log Size.", []string{"topic", "partition"}, nil)
	descLogSegments = prometheus.NewDesc("kafka_log_log_numlogsegments",
		"Segments of a partition's log on this broker: NumLogSegments.", []string{"topic", "partition"}, nil)
	descLogStart = prometheus.NewDesc("kafka_log_log_logstartoffset",
		"A partition's log start offset on this broker: LogStartOffset.", []string{"topic", "partition"}, nil)
	descLogEnd = prometheus.NewDesc("kafka_log_log_logendoffset",
		"A partition's log end offset on this broker: LogEndOffset.", []string{"topic", "partition"}, nil)
	descRaftTerm = prometheus.NewDesc("petrel_raft_term",
		"The metadata quorum's current Raft term (the controller epoch).", nil, nil)
	descRaftCommit = prometheus.NewDesc("petrel_raft_commit_index",
		"The highest metadata log index known committed.", nil, nil)
	descRaftApplied = prometheus.NewDesc("petrel_raft_applied_index",
		"The highest metadata log index applied to this node's image.", nil, nil)
	descRaftLast = prometheus.NewDesc("petrel_raft_last_log_index",
		"The last index in this node's metadata log.", nil, nil)
	descRaftContact = prometheus.NewDesc("petrel_raft_last_contact_seconds",
		"Seconds since this node last heard from the Raft leader (0 on the leader, -1 never).", nil, nil)
	descInfo = prometheus.NewDesc("petrel_broker_info",
		"Always 1; the labels name the broker: node_id and cluster_id.", []string{"node_id", "cluster_id"}, nil)
	descReady = prometheus.NewDesc("petrel_broker_ready",
		"1 once the broker is ready (caught up with metadata, unfenced, replicas open): /readyz.", nil, nil)
	descMetadataStoreOffline = prometheus.NewDesc("petrel_metadata_store_offline",
		"1 once this node's metadata store (raft.db) failed a write: Raft stopped here, /readyz answers 503.", nil, nil)
	descOfflineLogDirs = prometheus.NewDesc("kafka_log_logmanager_offlinelogdirectorycount",
		"Log directories offline after a failed write: OfflineLogDirectoryCount.", nil, nil)
	descOfflineReplicas = prometheus.NewDesc("kafka_server_replicamanager_offlinereplicacount",
		"Replicas assigned here that are offline (cannot be opened or written): OfflineReplicaCount.", nil, nil)
	descLogDirFree = prometheus.NewDesc("petrel_log_dir_free_bytes",
		"Bytes available to the broker on the log directory's file system (-1 unknown).", nil, nil)
	descLogDirBelowMinFree = prometheus.NewDesc("petrel_log_dir_below_min_free",
		"1 while the log directory's free bytes are below petrel.log.dir.min.free.bytes: Produce is refused.", nil, nil)
	descGroupLag = prometheus.NewDesc("kafka_consumergroup_lag",
		"A consumer group's lag on a partition: high watermark minus committed offset (groups this broker coordinates).",
		[]string{"group", "topic", "partition"}, nil)
	descGroupLagSum = prometheus.NewDesc("kafka_consumergroup_lag_sum",
		"A consumer group's lag summed over its partitions (groups this broker coordinates).", []string{"group"}, nil)
)

// stateCollector turns a Snapshot into metrics at scrape time.
type stateCollector struct {
	snapshot     func() Snapshot
	perPartition bool
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUnderReplicated, descUnderMinISR, descPartitionCount, descLeaderCount,
		descActiveController, descOffline, descGlobalPartitions, descGlobalTopics, descFenced, descActiveBrokers,
		descMaxLag, descLogSize, descLogSegments, descLogStart, descLogEnd, descRaftTerm, descRaftCommit,
		descRaftApplied, descRaftLast, descRaftContact, descInfo, descReady, descGroupLag, descGroupLagSum,
		descMetadataStoreOffline, descOfflineLogDirs, descOfflineReplicas, descLogDirFree, descLogDirBelowMinFree} {
		ch <- d
	}
	for _, d := range fetchSessionDescs {
		ch <- d
	}
	for _, d := range groupDescs {
		ch <- d
	}
	for _, d := range shareGroupDescs {
		ch <- d
	}
	for _, d := range remoteDescs {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	var under, underMin, leaders int
	for _, p := range s.Partitions {
		if p.Leader {
			leaders++
		}
		if p.UnderReplicated {
			under++
		}
		if p.UnderMinISR {
			underMin++
		}
		if c.perPartition {
			part := strconv.Itoa(int(p.Partition))
			gauge(descLogSize, float64(p.Size), p.Topic, part)
			gauge(descLogSegments, float64(p.Segments), p.Topic, part)
			gauge(descLogStart, float64(p.LogStartOffset), p.Topic, part)
			gauge(descLogEnd, float64(p.LogEndOffset), p.Topic, part)
		}
	}
	gauge(descUnderReplicated, float64(under))
	gauge(descUnderMinISR, float64(underMin))
	gauge(descPartitionCount, float64(len(s.Partitions)))
	gauge(descLeaderCount, float64(leaders))
	gauge(descActiveController, b2f(s.ActiveController))
	gauge(descOffline, float64(s.OfflinePartitions))
	gauge(descGlobalPartitions, float64(s.GlobalPartitions))
	gauge(descGlobalTopics, float64(s.GlobalTopics))
	gauge(descFenced, float64(s.FencedBrokers))
	gauge(descActiveBrokers, float64(s.ActiveBrokers))
	gauge(descMaxLag, float64(s.MaxLag), "Replica")
	gauge(descRaftTerm, float64(s.Raft.Term))
	gauge(descRaftCommit, float64(s.Raft.CommitIndex))
	gauge(descRaftApplied, float64(s.Raft.AppliedIndex))
	gauge(descRaftLast, float64(s.Raft.LastLogIndex))
	gauge(descRaftContact, s.Raft.LastContactSeconds)
	gauge(descReady, b2f(s.Ready))
	gauge(descMetadataStoreOffline, b2f(s.MetadataStoreOffline))
	gauge(descOfflineLogDirs, float64(s.OfflineLogDirs))
	gauge(descOfflineReplicas, float64(s.OfflineReplicas))
	gauge(descLogDirFree, float64(s.LogDirFreeBytes))
	gauge(descLogDirBelowMinFree, b2f(s.LogDirBelowMinFree))
	gauge(descInfo, 1, strconv.Itoa(int(s.NodeID)), s.ClusterID)
	collectFetchSessions(ch, s.FetchSessions)
	collectGroups(ch, s.Groups)
	collectShareGroups(ch, s.ShareGroups)
	collectRemote(ch, s.RemoteLogs, s.RemoteTasksIdle, c.perPartition)
	sums := map[string]int64{}
	for _, l := range s.GroupLags {
		sums[l.Group] += l.Lag
		if c.perPartition {
			gauge(descGroupLag, float64(l.Lag), l.Group, l.Topic, strconv.Itoa(int(l.Partition)))
		}
	}
	for g, v := range sums {
		gauge(descGroupLagSum, float64(v), g)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
