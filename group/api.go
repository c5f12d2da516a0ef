// Package group is Kafka's classic consumer-group protocol as a pure state machine.
//
// A Shard holds every group whose coordinator partition is one partition of
// __consumer_offsets. It never does I/O, never starts goroutines and never reads a
// clock: the current time is an argument of every call, and what a call wants done —
// records to write, responses to deliver, timers to set — comes back as Effects, which
// the caller (the coordinator runtime, through coordinator/groups.go) carries out.
//
// Concurrency: a Shard is not safe for concurrent use. The runtime calls it from one
// goroutine at a time (every method, Replay, Timeout and Committed callbacks alike).
//
// KIP-848 consumer groups (ConsumerGroupHeartbeat) are the ConsumerGroup of
// consumer_*.go, one per group id, pure in the same way: a heartbeat or an expiry
// returns the response and the state changes as ConsumerEvents to persist, and the
// server-side assignors of assignor*.go compute their target assignments. A Shard holds
// them beside its classic groups (consumer_shard.go): ConsumerGroupHeartbeat and
// ExpireConsumerGroups write their events as Kafka's records (consumer_records.go), and
// Replay rebuilds them from those records.
package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config holds Kafka's group coordinator settings; DefaultConfig gives Kafka's defaults.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound a member's session timeout
	// (group.min.session.timeout.ms 6000, group.max.session.timeout.ms 1800000);
	// outside them JoinGroup answers INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3000): the wait from
	// Empty for more members, extended while members arrive, up to the rebalance timeout.
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size; 0 means unlimited (Kafka's default is Int.MaxValue).
	MaxSize int
	// OffsetsRetention is offsets.retention.minutes (10080): committed offsets of an
	// empty group expire this long after the group became empty (a standalone
	// consumer's: after the commit).
	OffsetsRetention time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096): longer commit
	// metadata gets OFFSET_METADATA_TOO_LARGE.
	OffsetMetadataMaxBytes int
	// NewMemberID returns the unique part of a generated member id (clientId or
	// group.instance.id, "-", then this; Kafka uses a random UUID). The coordinator
	// supplies a random one; NewShard panics without it (the package draws no
	// randomness itself).
	NewMemberID func() string
	// Consumer configures the KIP-848 consumer groups; zero fields take Kafka's
	// defaults (DefaultConsumerConfig), and a nil Consumer.NewMemberID is NewMemberID.
	Consumer ConsumerConfig
	// ConsumerGroupConfig returns a consumer group's own configs (consumer_config.go),
	// read at each heartbeat of the group; nil means none. It must not block.
	ConsumerGroupConfig func(groupID string) ConsumerGroupConfig
	// MigrationPolicy is group.consumer.migration.policy (bidirectional, the zero
	// value): the online conversions between classic and consumer groups
	// (consumer_migrate.go).
	MigrationPolicy MigrationPolicy
	// ConsumerTopics returns the metadata image, for classic members of consumer
	// groups (consumer_classic.go): their JoinGroup computes the target assignment,
	// their SyncGroup names their partitions. Nil: a classic member cannot join a
	// consumer group (INCONSISTENT_GROUP_PROTOCOL). It must not block.
	ConsumerTopics func() ConsumerTopics
	// Share configures the share groups (share_group.go); zero fields take Kafka's
	// defaults (DefaultShareConfig).
	Share ShareConfig
	// ShareGroupConfig returns a share group's own share.session.timeout.ms and
	// share.heartbeat.interval.ms (zero fields: Share's), read at each heartbeat of the
	// group; nil means none. It must not block.
	ShareGroupConfig func(groupID string) ConsumerGroupConfig
	// OnShareInitialize, when set, is told of the share state a share group asks the
	// share coordinator to initialize (ShareInitialize); the answer comes back through
	// Shard.ShareGroupStateInitialized. It runs on the shard's goroutine and must not
	// block.
	OnShareInitialize func(ShareInitialize)
	// OnRebalance, when set, is told of each rebalance step of the shard's groups
	// (rebalances.go), for the broker's metrics. It runs on the shard's goroutine, in
	// the call that made the step, and must not block.
	OnRebalance func(Rebalance)
}

// DefaultConfig returns Kafka's defaults; NewMemberID is left for the caller.
func DefaultConfig() Config {
	return Config{
		MinSessionTimeout:      6 * time.Second,
		MaxSessionTimeout:      30 * time.Minute,
		InitialRebalanceDelay:  3 * time.Second,
		OffsetsRetention:       7 * 24 * time.Hour,
		OffsetMetadataMaxBytes: 4096,
		Consumer:               DefaultConsumerConfig(),
		Share:                  DefaultShareConfig(),
	}
}

// Record is one __consumer_offsets record in Kafka's exact key and value schemas (see
// records.go). A nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Timer asks the runtime to call Shard.Timeout(now, Key) once at or after At. A Timer
// with the Key of a pending one replaces it; a zero At cancels the pending one.
type Timer struct {
	Key string
	At  time.Time
}

// Reply is a response ready to be sent: Send(Response) delivers it to the request that
// is waiting for it.
type Reply struct {
	Send     func(kmsg.Response)
	Response kmsg.Response
}

// Effects is what a call asks the runtime to do, in this order:
//  1. set or cancel Timers (at once);
//  2. append Records as one batch with acks=all semantics, if there are any;
//  3. when the write's fate in the log is known, call Committed with it — 0 when the
//     high watermark passed the batch, else a Kafka error code already translated for
//     coordinators (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, ...) when the batch is
//     not in the log or the partition was unloaded first; Committed may change the
//     error codes of the responses in Replies (they are pointers) and apply what was
//     waiting for the write, and returns further Effects, which the runtime carries out
//     the same way;
//  4. deliver Replies: after the write and Committed when there are Records, at once
//     otherwise.
//
// TimedOut, when set, is called instead of Committed for the answer when the write is
// not committed within offsets.commit.timeout.ms (COORDINATOR_NOT_AVAILABLE): it sets
// the responses' codes, Replies are delivered after it, and Committed follows when the
// write's fate is known — with 0 if the batch landed after all, which applies it as a
// load of the partition would. After TimedOut, Committed leaves the responses alone.
//
// The zero Effects does nothing.
//
// With Producer set (TxnOffsetCommit), Records are one transactional batch of that
// producer's transaction.
type Effects struct {
	Timers    []Timer
	Records   []Record
	Committed func(errorCode int16) Effects
	TimedOut  func(errorCode int16) Effects
	Replies   []Reply
	Producer  *Producer
}

// Producer names the transaction a write belongs to.
type Producer struct {
	ID    int64
	Epoch int16
	// Verification is the caller's, carried along untouched (coordinator.Verification:
	// the KIP-890 guard for the write).
	Verification any
}

// Client names the connection a request came from, for DescribeGroups.
type Client struct {
	ID   string // the request header's client id
	Host string // the client's address as Kafka prints it, "/127.0.0.1"
}

// Shard is the groups of one __consumer_offsets partition.
type Shard struct {
	cfg Config
	// The implementation's fields follow.

	// groups are the shard's groups by id, simple (standalone) consumers' included.
	groups map[string]*group
	// uuid is Config.NewMemberID; tests replace it.
	uuid func() string
	// epoch counts Unloads: write callbacks of an earlier load do nothing.
	epoch int
	// latest is the latest now passed in; a write's Committed, which has no now of its
	// own, acts at this time (or its call's, if later).
	latest time.Time
	// txnOffsets holds the pending transactional offsets per producer id, group and
	// partition until the transaction's marker (txn_offsets.go).
	txnOffsets map[int64]map[string]map[topicPartition]offsetValue
	// position is the log position of the last offset-commit record replayed or
	// written (nextPosition).
	position int64
	// consumerGroups are the KIP-848 consumer groups by id (consumer_shard.go).
	consumerGroups map[string]*ConsumerGroup
	// consumerDirty holds the consumer groups to resync after a failed write, with
	// the members the failed writes removed.
	consumerDirty map[string]map[string]bool
	// consumerDirtyRegexes holds, for groups in consumerDirty, the regular
	// expressions the failed writes deleted (consumer_regex_shard.go).
	consumerDirtyRegexes map[string]map[string]bool
	// consumerLegacyMetadata holds the groups with a deprecated
	// ConsumerGroupPartitionMetadata record in the log.
	consumerLegacyMetadata map[string]bool
	// classicRetired holds the groups converted from classic groups whose group
	// metadata tombstone failed to be written: their next write carries it again
	// (consumer_migrate.go).
	classicRetired map[string]bool
	// retiredConsumers holds the consumer groups replaced by classic groups whose
	// tombstones failed to be written: the group id's next write carries them again.
	retiredConsumers map[string]retiredConsumer
	// shareGroups are the KIP-932 share groups by id (share_shard.go); shareDirty the
	// share groups to resync after a failed write, with the members it removed.
	shareGroups map[string]*ShareGroup
	shareDirty  map[string]map[string]bool
	// rebalanceStarts holds when each rebalancing group began (rebalances.go).
	rebalanceStarts map[string]time.Time
}

// NewShard returns an empty shard. cfg.NewMemberID must be set.
func NewShard(cfg Config) *Shard {
	if cfg.NewMemberID == nil {
		panic("group: Config.NewMemberID is not set")
	}
	def := DefaultConsumerConfig()
	if cfg.Consumer.SessionTimeout <= 0 {
		cfg.Consumer.SessionTimeout = def.SessionTimeout
	}
	if cfg.Consumer.HeartbeatInterval <= 0 {
		cfg.Consumer.HeartbeatInterval = def.HeartbeatInterval
	}
	if len(cfg.Consumer.Assignors) == 0 {
		cfg.Consumer.Assignors, _ = Assignors(DefaultConsumerAssignors)
	}
	if cfg.Consumer.NewMemberID == nil {
		cfg.Consumer.NewMemberID = cfg.NewMemberID
	}
	s := &Shard{cfg: cfg, groups: map[string]*group{}, uuid: cfg.NewMemberID, txnOffsets: map[int64]map[string]map[topicPartition]offsetValue{}}
	s.resetConsumerGroups()
	s.resetShareGroups()
	return s
}

// Replay applies one record read from the partition while loading it, in offset order.
// A record this build cannot decode is an error (the caller logs it and skips it, as
// Kafka does for unknown key versions).
func (s *Shard) Replay(key, value []byte) error {
	return s.replay(s.position+1, -1, false, key, value)
}

// ReplayRecord is Replay for a record at offset of a batch of producerID (-1 for the
// coordinator's own writes): the records of a transactional batch are the producer's
// pending offsets until its marker (ReplayMarker).
func (s *Shard) ReplayRecord(offset, producerID int64, transactional bool, key, value []byte) error {
	return s.replay(offset, producerID, transactional, key, value)
}

// Loaded is called once after the last Replay: it starts the timers the replayed state
// needs (session timeouts of the members of Stable groups, offset expiry).
func (s *Shard) Loaded(now time.Time) Effects {
	s.observe(now)
	return s.loaded(now)
}

// Unload answers every parked request with NOT_COORDINATOR and forgets the state: the
// partition's leadership moved. Pending timers are dropped by the runtime.
func (s *Shard) Unload() Effects { return s.unload() }

// Timeout is a timer's firing (see Timer).
func (s *Shard) Timeout(now time.Time, key string) Effects {
	s.observe(now)
	_, id, _ := parseTimerKey(key)
	return s.withConsumerDeadline(id, s.withRetiredConsumer(id, s.timeout(now, key)))
}

// JoinGroup (key 11, v0-9). The response may be parked until the rebalance completes:
// it is sent through send, now or in the Effects of a later call.
func (s *Shard) JoinGroup(now time.Time, c Client, req *kmsg.JoinGroupRequest, send func(kmsg.Response)) Effects {
	s.observe(now)
	return s.withConsumerDeadline(req.Group, s.withRetiredConsumer(req.Group, s.joinGroup(now, c, req, send)))
}

// SyncGroup (key 14, v0-5). Followers' responses are parked until the leader's arrives.
func (s *Shard) SyncGroup(now time.Time, req *kmsg.SyncGroupRequest, send func(kmsg.Response)) Effects {
	s.observe(now)
	if g := s.consumerGroups[req.Group]; g != nil {
		return s.withConsumerDeadline(req.Group, s.classicSyncToConsumer(now, g, req, send)) // consumer_classic.go
	}
	return s.withRetiredConsumer(req.Group, s.syncGroup(now, req, send))
}

// Heartbeat (key 12, v0-4).
func (s *Shard) Heartbeat(now time.Time, req *kmsg.HeartbeatRequest, send func(kmsg.Response)) Effects {
	s.observe(now)
	if g := s.consumerGroups[req.Group]; g != nil {
		return s.withConsumerDeadline(req.Group, s.classicHeartbeatToConsumer(now, g, req, send))
	}
	return s.heartbeat(now, req, send)
}

// LeaveGroup (key 13, v0-5; batched members from v3).
func (s *Shard) LeaveGroup(now time.Time, req *kmsg.LeaveGroupRequest, send func(kmsg.Response)) Effects {
	s.observe(now)
	if g := s.consumerGroups[req.Group]; g != nil {
		return s.withConsumerDeadline(req.Group, s.classicLeaveToConsumer(now, g, req, send))
	}
	return s.withRetiredConsumer(req.Group, s.leaveGroup(now, req, send))
}

// OffsetCommit (key 8, v0-10; v10's topic ids resolved to names by the caller) for
// one group. The caller has already answered, and
// removed from req, the partitions of topics that do not exist
// (UNKNOWN_TOPIC_OR_PARTITION); resp holds those answers and the shard appends its own.
func (s *Shard) OffsetCommit(now time.Time, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, send func(kmsg.Response)) Effects {
	s.observe(now)
	return s.offsetCommit(now, req, resp, send)
}

// OffsetFetch answers one group of an OffsetFetch request (key 9; OffsetFetchMember
// for v9+, which names a member): topics nil
// means every committed partition. requireStable (v7+) answers UNSTABLE_OFFSET_COMMIT
// for partitions with a commit being written.
func (s *Shard) OffsetFetch(groupID string, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	return s.offsetFetch(groupID, topics, requireStable)
}

// DescribeGroup answers one group of DescribeGroups (key 15, v0-6) in version: an
// unknown group, or a consumer group, is described as Dead with no members, as Kafka
// does, and from v6 with GROUP_ID_NOT_FOUND and its message.
func (s *Shard) DescribeGroup(groupID string, version int16, includeAuthorizedOperations bool) kmsg.DescribeGroupsResponseGroup {
	return s.describeGroup(groupID, version, includeAuthorizedOperations)
}

// ListGroups lists this shard's groups (key 16): states and types filter when not
// empty (v4+, v5+). Classic groups have type "classic", KIP-848 consumer groups
// "consumer".
func (s *Shard) ListGroups(states, types []string) []kmsg.ListGroupsResponseGroup {
	return s.listGroups(states, types)
}

// DeleteGroup deletes one group (key 42): NON_EMPTY_GROUP when it has members,
// GROUP_ID_NOT_FOUND when unknown; otherwise it writes tombstones for the group and its
// offsets and answers through send once they are committed.
func (s *Shard) DeleteGroup(now time.Time, groupID string, send func(errorCode int16)) Effects {
	s.observe(now)
	return s.withRetiredConsumer(groupID, s.deleteGroup(now, groupID, send))
}

// OffsetDelete (key 47): deletes committed offsets of partitions the group is not
// subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).
func (s *Shard) OffsetDelete(now time.Time, req *kmsg.OffsetDeleteRequest, send func(kmsg.Response)) Effects {
	s.observe(now)
	return s.offsetDelete(now, req, send)
}

// ExpireOffsets removes committed offsets past offsets.retention.minutes and empty
// groups left with no offsets, writing their tombstones; the runtime calls it every
// offsets.retention.check.interval.ms (600000). A consumer group's offsets expire by
// its own rule (consumer_offsets.go): never while a member subscribes to the topic.
func (s *Shard) ExpireOffsets(now time.Time) Effects {
	s.observe(now)
	return s.expireOffsets(now)
}

// PartitionFor is the __consumer_offsets partition of groupID:
// abs(javaStringHashCode(groupID)) % partitions, with abs(MinInt32) = 0 as Kafka
// computes it (Utils.abs).
func PartitionFor(groupID string, partitions int32) int32 {
	return partitionFor(groupID, partitions)
}
