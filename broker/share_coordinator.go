package broker

// The share coordinator's wiring (coordinator/share_state.go, KIP-932): its
// configuration from the share.coordinator.* properties, the __share_group_state
// topic it keeps share-partition state in (created on first need, internal_topics.go),
// and its partitions loaded and unloaded with leadership by reconcileCoordinators.

import (
	"context"
	"reflect"

	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/shareleader"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const shareStateTopic = controller.ShareGroupStateTopic

// newShareCoordinator configures the share coordinator from the share.coordinator.*
// properties; reads and writes of a topic-partition missing from the image are
// UNKNOWN_TOPIC_OR_PARTITION.
func newShareCoordinator(b *Broker) *coordinator.ShareCoordinator {
	c := &b.cfg
	rt := b.coordinatorRuntimeConfig(shareStateTopic, "share-coordinator")
	rt.WriteTimeout = c.durationMs("share.coordinator.write.timeout.ms")
	rt.LoadReadBytes = int(c.int64Value("share.coordinator.load.buffer.size"))
	return coordinator.NewShareCoordinator(coordinator.ShareStateConfig{
		Runtime:               rt,
		SnapshotUpdateRecords: int(c.int64Value("share.coordinator.snapshot.update.records.per.snapshot")),
		Partitions:            b.partitionCount(shareStateTopic),
		PartitionExists: func(topicID [16]byte, partition int32) bool {
			t := b.Image().TopicByID(metadata.Uuid(topicID))
			return t != nil && partition >= 0 && int(partition) < len(t.Partitions)
		},
	})
}

// shareStateReplicationFactor is share.coordinator.state.topic.replication.factor,
// min(3, number of voters) when unset, as offsets.topic.replication.factor.
func (c *Config) shareStateReplicationFactor() int {
	return c.internalReplicationFactor("share.coordinator.state.topic.replication.factor")
}

// shareStateTopicSpec is how __share_group_state is created: Kafka's
// ShareCoordinatorService.shareGroupStateTopicConfigs (cleanup.policy delete, as
// KIP-932 defines it, kept forever: the share coordinator's own pruning is what would
// trim it), min.insync.replicas from share.coordinator.state.topic.min.isr.
func (b *Broker) shareStateTopicSpec() internalTopicSpec {
	return internalTopicSpec{
		name: shareStateTopic, partitions: int32(b.cfg.int64Value("share.coordinator.state.topic.num.partitions")),
		rf: b.cfg.shareStateReplicationFactor(), rfProperty: "share.coordinator.state.topic.replication.factor",
		configs: [][2]string{
			{"cleanup.policy", "delete"},
			{"retention.ms", "-1"},
			{"segment.bytes", itoa(b.cfg.int64Value("share.coordinator.state.topic.segment.bytes"))},
			{"compression.type", "producer"},
			{"min.insync.replicas", itoa(b.cfg.int64Value("share.coordinator.state.topic.min.isr"))},
		},
		creator: &b.shareStateCreator,
	}
}

// ensureShareStateTopic creates __share_group_state when it does not exist, by the
// rule of __consumer_offsets (ensureOffsetsTopic).
func (b *Broker) ensureShareStateTopic(ctx context.Context) *metadata.Image {
	return b.ensureInternalTopic(ctx, b.shareStateTopicSpec())
}

// SharePersister is this broker's share-state Persister (share_persister.go): the
// share coordinators' API for the group coordinator and the share-partition leaders.
func (b *Broker) SharePersister() shareleader.Persister { return b.sharePersister }

// fillShareError answers every partition of a share coordinator request (keys 83–87)
// with code and cause's text (apiOpts.fillError).
func fillShareError(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	var message *string
	if cause != nil {
		m := cause.Error()
		message = &m
	}
	built := coordinator.ShareResponse(req, func(_ int, _ coordinator.SharePart, entry coordinator.ShareEntry) {
		entry.SetError(code, message)
	})
	reflect.ValueOf(resp).Elem().Set(reflect.ValueOf(built).Elem())
}
