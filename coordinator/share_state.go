package coordinator

// The share coordinator (KIP-932, Kafka 4.2's ShareCoordinatorService): a Runtime for
// __share_group_state whose shards are ShareStateShards (share_state_shard.go),
// loaded and unloaded by the broker's reconciler like the group and transaction
// coordinators'. A share partition's key "groupId:topicId:partition" routes to the
// partition abs(javaStringHashCode(key)) % partitions; the requests' fan-out over
// keys is share_state_requests.go.

import (
	"encoding/base64"
	"strconv"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/share"
)

// ShareStateConfig configures a ShareCoordinator.
type ShareStateConfig struct {
	// Runtime configures the runtime (Name is the topic, __share_group_state;
	// WriteTimeout share.coordinator.write.timeout.ms; LoadReadBytes
	// share.coordinator.load.buffer.size).
	Runtime Config
	// SnapshotUpdateRecords is share.coordinator.snapshot.update.records.per.snapshot.
	SnapshotUpdateRecords int
	// Partitions returns __share_group_state's partition count now (0: no topic yet).
	Partitions func() int32
	// PartitionExists reports whether a topic id's partition is in the metadata image
	// now (nil: every one is); reads and writes of others are UNKNOWN_TOPIC_OR_PARTITION.
	PartitionExists func(topicID [16]byte, partition int32) bool
}

// ShareCoordinator runs the __share_group_state partitions this broker leads.
type ShareCoordinator struct {
	*Router[*ShareStateShard, Result]
	cfg ShareStateConfig
}

// NewShareCoordinator returns a share coordinator with nothing loaded.
func NewShareCoordinator(cfg ShareStateConfig) *ShareCoordinator {
	if cfg.SnapshotUpdateRecords <= 0 {
		cfg.SnapshotUpdateRecords = share.DefaultSnapshotUpdateRecords
	}
	sc := &ShareCoordinator{cfg: cfg}
	sc.Router = &Router[*ShareStateShard, Result]{
		rt:          New(cfg.Runtime),
		partitions:  cfg.Partitions,
		partitionOf: ShareStatePartitionFor,
		newShard: func(int32, int32) Shard {
			return newShareStateShard(cfg.SnapshotUpdateRecords, cfg.PartitionExists)
		},
		unwrap: func(s Shard) (*ShareStateShard, func(Result) Result) {
			return s.(*ShareStateShard), func(r Result) Result { return r }
		},
	}
	return sc
}

// Shard makes ShareStateShard a runtime Shard.
var _ Shard = (*ShareStateShard)(nil)

// ShareCoordinatorKey is a share partition's coordinator key, Kafka's
// SharePartitionKey.asCoordinatorKey: "groupId:topicId:partition" with the topic id
// as Kafka prints a Uuid (URL-safe base64, no padding). FindCoordinator key type 2
// (SHARE) names it.
func ShareCoordinatorKey(groupID string, topicID [16]byte, partition int32) string {
	return groupID + ":" + base64.RawURLEncoding.EncodeToString(topicID[:]) + ":" + strconv.Itoa(int(partition))
}

// ShareStatePartitionFor is the __share_group_state partition of a coordinator key
// (ShareCoordinatorService.partitionFor): abs(javaStringHashCode(key)) % partitions,
// the rule of group ids.
func ShareStatePartitionFor(key string, partitions int32) int32 {
	return group.PartitionFor(key, partitions)
}

// submitKey runs call on the shard of k; failed gets the code when the shard is not
// served here.
func (sc *ShareCoordinator) submitKey(k share.Key, call func(now time.Time, s *ShareStateShard) Result, failed func(code int16)) {
	sc.Submit(ShareCoordinatorKey(k.GroupID, k.TopicID, k.Partition), call, failed)
}
