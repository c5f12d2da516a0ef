package broker

// The wiring of the coordinators on a coordinator.Runtime (coordinator/groups.go for
// __consumer_offsets, coordinator/transactions.go for __transaction_state): their
// configuration from the broker's properties, and their partitions loaded and unloaded
// as this broker gains and loses leadership.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newGroupCoordinator configures the group coordinator from the group.* and offsets.*
// properties, and each consumer group's own configs from the metadata image.
func newGroupCoordinator(b *Broker) *coordinator.GroupCoordinator {
	c := &b.cfg
	consumerImage := &consumerImageCache{}
	cfg := group.DefaultConfig()
	cfg.MinSessionTimeout = c.durationMs("group.min.session.timeout.ms")
	cfg.MaxSessionTimeout = c.durationMs("group.max.session.timeout.ms")
	cfg.InitialRebalanceDelay = c.durationMs("group.initial.rebalance.delay.ms")
	if n := c.int64Value("group.max.size"); n < 1<<31-1 {
		cfg.MaxSize = int(n)
	}
	cfg.OffsetsRetention = time.Duration(c.int64Value("offsets.retention.minutes")) * time.Minute
	cfg.OffsetMetadataMaxBytes = int(c.int64Value("offset.metadata.max.bytes"))
	cfg.Consumer = consumerGroupsConfig(c)
	cfg.ConsumerGroupConfig = b.consumerGroupConfig
	policy, _ := c.brokerValue("group.consumer.migration.policy")
	cfg.MigrationPolicy, _ = group.ParseMigrationPolicy(policy) // valid: checked at start
	cfg.ConsumerTopics = func() group.ConsumerTopics { return consumerTopics{im: b.Image(), cache: consumerImage} }
	cfg.OnRebalance = b.observeRebalance
	cfg.Share = shareGroupsConfig(c)                 // share_group_configs.go
	cfg.ShareGroupConfig = b.shareGroupSessionConfig // share_group_configs.go
	cfg.OnShareInitialize = b.onShareInitialize      // share_wiring.go
	return coordinator.NewGroupCoordinator(coordinator.GroupConfig{
		Runtime:               b.coordinatorRuntimeConfig(offsetsTopic, "group-coordinator"),
		Group:                 cfg,
		ExpireInterval:        c.durationMs("offsets.retention.check.interval.ms"),
		Partitions:            b.partitionCount(offsetsTopic),
		DeleteShareGroupState: b.deleteShareGroupState, // share_wiring.go
	})
}

// consumerGroupsConfig is the KIP-848 consumer groups' configuration from the
// group.consumer.* properties (checked at start by config.CheckGroupCoordinatorProperties).
func consumerGroupsConfig(c *Config) group.ConsumerConfig {
	out := group.DefaultConsumerConfig()
	out.SessionTimeout = c.durationMs("group.consumer.session.timeout.ms")
	out.HeartbeatInterval = c.durationMs("group.consumer.heartbeat.interval.ms")
	if n := c.int64Value("group.consumer.max.size"); n < 1<<31-1 {
		out.MaxSize = int(n)
	}
	out.Assignors, _ = group.Assignors(config.ConsumerAssignorNames(c.Properties)) // valid: checked at start
	return out
}

// markerRequestTimeout bounds one WriteTxnMarkers round trip.
const markerRequestTimeout = 15 * time.Second

// newTxnCoordinator configures the transaction coordinator from the transaction.*
// properties.
func newTxnCoordinator(b *Broker) *coordinator.TxnCoordinator {
	c := &b.cfg
	cfg := txn.DefaultConfig()
	cfg.MaxTimeout = c.durationMs("transaction.max.timeout.ms")
	return coordinator.NewTxnCoordinator(coordinator.TxnConfig{
		Runtime:        b.coordinatorRuntimeConfig(transactionStateTopic, "txn-coordinator"),
		Txn:            cfg,
		AbortInterval:  c.durationMs("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		IDExpiration:   c.durationMs("transactional.id.expiration.ms"),
		ExpireInterval: c.durationMs("transaction.remove.expired.transaction.cleanup.interval.ms"),
		Partitions:     b.partitionCount(transactionStateTopic),
		Net:            markerNet{b},
	})
}

// markerNet is the transaction coordinator's way to the partitions' leaders.
type markerNet struct{ b *Broker }

func (n markerNet) LeaderOf(topic string, partition int32) (int32, bool) {
	t := n.b.Image().Topic(topic)
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return -1, false
	}
	return t.Partitions[partition].Leader, true
}

// WriteTxnMarkers sends req to leader: in process when it is this broker.
func (n markerNet) WriteTxnMarkers(leader int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	b := n.b
	ctx, cancel := b.waitTimeout(context.Background(), markerRequestTimeout)
	defer cancel()
	if leader == b.cfg.NodeID {
		return b.writeTxnMarkers(ctx, req), nil
	}
	resp, err := b.peers.do(ctx, leader, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}

func (n markerNet) Go(name string, fn func(stop <-chan struct{})) {
	n.b.goLoop(name, func() { fn(n.b.stop) })
}

// coordinatorRuntimeConfig is the runtime configuration of an internal topic's
// coordinator.
func (b *Broker) coordinatorRuntimeConfig(topic, logger string) coordinator.Config {
	return coordinator.Config{
		Name:          topic,
		WriteTimeout:  b.cfg.durationMs("offsets.commit.timeout.ms"),
		LoadReadBytes: int(b.cfg.int64Value("offsets.load.buffer.size")),
		Logger:        b.logger.Named(logger),
	}
}

// partitionCount returns topic's partition count in the current image (0: no topic).
func (b *Broker) partitionCount(topic string) func() int32 {
	return func() int32 {
		if t := b.Image().Topic(topic); t != nil {
			return int32(len(t.Partitions))
		}
		return 0
	}
}

// coordinatorRouter is what reconcileCoordinator needs of a coordinator.Router.
type coordinatorRouter interface {
	Reconcile(leading map[int32]int32, spec func(partition int32) (coordinator.LoadSpec, bool))
}

// reconcileCoordinators loads the internal topics' partitions this broker leads (in the
// leader epoch of im) and unloads the others. The reconciler calls it after applying im.
func (b *Broker) reconcileCoordinators(im *metadata.Image) {
	b.reconcileCoordinator(b.groups, offsetsTopic, im)
	b.reconcileCoordinator(b.txns, transactionStateTopic, im)
	b.reconcileCoordinator(b.shareStates, shareStateTopic, im)
}

// reconcileCoordinator is reconcileCoordinators for one internal topic.
func (b *Broker) reconcileCoordinator(r coordinatorRouter, topic string, im *metadata.Image) {
	leading := map[int32]int32{}
	if t := im.Topic(topic); t != nil {
		for _, p := range t.Partitions {
			if p.Leader == b.cfg.NodeID {
				leading[p.ID] = p.LeaderEpoch
			}
		}
	}
	r.Reconcile(leading, func(partition int32) (coordinator.LoadSpec, bool) {
		lp := b.partitions.get(topic, partition)
		if lp == nil {
			return coordinator.LoadSpec{}, false
		}
		return coordinator.LoadSpec{
			Log: lp.Partition,
			MinInsync: func() int {
				return replication.EffectiveMinISR(lp.settings.Load().minInsync, int(lp.replicationFactor.Load()))
			},
		}, true
	})
}

// clientOf names the connection of req for DescribeGroups.
func clientOf(req *rpc.Request) group.Client {
	c := group.Client{}
	if req.ClientID != nil {
		c.ID = *req.ClientID
	}
	if req.Conn != nil && req.Conn.RemoteAddr != nil {
		host, _ := splitHostPort(req.Conn.RemoteAddr.String())
		c.Host = "/" + host
	}
	return c
}
