package broker

// Internal topics: __consumer_offsets and __transaction_state. They are created
// only by the broker, on first need, through the controller; users cannot create,
// delete or produce to them; Metadata reports them with is_internal and never
// auto-creates them.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	offsetsTopic          = controller.OffsetsTopic
	transactionStateTopic = controller.TransactionStateTopic
)

func isInternalTopic(name string) bool { return controller.IsInternalTopic(name) }

// internalCreateKey marks a context whose CreateTopics may create internal topics: the
// broker's own requests (in process, or received from another broker).
type internalCreateKey struct{}

func allowInternalCreate(ctx context.Context) context.Context {
	return context.WithValue(ctx, internalCreateKey{}, true)
}

func internalCreateAllowed(ctx context.Context) bool {
	v, _ := ctx.Value(internalCreateKey{}).(bool)
	return v
}

// offsetsReplicationFactor is offsets.topic.replication.factor; unset, it is
// min(3, number of voters), or 1 for a one-voter node without --voters, so that a
// single node and `petrel dev --nodes N` work with no settings. Kafka's default is 3.
func (c *Config) offsetsReplicationFactor() int {
	return c.internalReplicationFactor("offsets.topic.replication.factor")
}

// transactionStateReplicationFactor is transaction.state.log.replication.factor, with
// the same rule when unset.
func (c *Config) transactionStateReplicationFactor() int {
	return c.internalReplicationFactor("transaction.state.log.replication.factor")
}

func (c *Config) internalReplicationFactor(property string) int {
	if _, ok := c.brokerValue(property); ok {
		return int(c.int64Value(property))
	}
	return max(1, min(3, len(c.Voters)))
}

// internalTopicCreator creates an internal topic once at a time.
type internalTopicCreator struct {
	running atomic.Bool
}

// internalTopicSpec is how an internal topic is created.
type internalTopicSpec struct {
	name       string
	partitions int32
	rf         int
	rfProperty string // for the log
	configs    [][2]string
	creator    *internalTopicCreator
}

// ensureOffsetsTopic creates __consumer_offsets when it does not exist and enough
// brokers are unfenced for its replication factor (Kafka never creates it with fewer
// replicas). It returns the image to answer from; the caller answers
// COORDINATOR_NOT_AVAILABLE if the topic is still missing.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) *metadata.Image {
	spec, _ := b.internalTopicSpecFor(offsetsTopic)
	return b.ensureInternalTopic(ctx, spec)
}

// ensureTransactionStateTopic creates __transaction_state by the same rule, with
// min.insync.replicas from transaction.state.log.min.isr.
func (b *Broker) ensureTransactionStateTopic(ctx context.Context) *metadata.Image {
	spec, _ := b.internalTopicSpecFor(transactionStateTopic)
	return b.ensureInternalTopic(ctx, spec)
}

// internalTopicSpecFor is how this broker creates an internal topic, from its own
// properties (offsets.topic.*, transaction.state.log.*): Kafka's partitions,
// replication factor and configs. The controller creates an internal topic only by
// this spec, whatever the request asked (canonicalInternalTopic), so no client can
// choose them.
func (b *Broker) internalTopicSpecFor(name string) (internalTopicSpec, bool) {
	switch name {
	case offsetsTopic:
		return internalTopicSpec{
			name: offsetsTopic, partitions: int32(b.cfg.int64Value("offsets.topic.num.partitions")),
			rf: b.cfg.offsetsReplicationFactor(), rfProperty: "offsets.topic.replication.factor",
			configs: [][2]string{
				{"cleanup.policy", "compact"},
				{"segment.bytes", itoa(b.cfg.int64Value("offsets.topic.segment.bytes"))},
				{"compression.type", "producer"},
			},
			creator: &b.offsetsCreator,
		}, true
	case transactionStateTopic:
		return internalTopicSpec{
			name: transactionStateTopic, partitions: int32(b.cfg.int64Value("transaction.state.log.num.partitions")),
			rf: b.cfg.transactionStateReplicationFactor(), rfProperty: "transaction.state.log.replication.factor",
			configs: [][2]string{
				{"cleanup.policy", "compact"},
				{"segment.bytes", itoa(b.cfg.int64Value("transaction.state.log.segment.bytes"))},
				{"compression.type", "producer"},
				{"min.insync.replicas", itoa(b.cfg.int64Value("transaction.state.log.min.isr"))},
				{"unclean.leader.election.enable", "false"},
			},
			creator: &b.txnStateCreator,
		}, true
	case shareStateTopic:
		return b.shareStateTopicSpec(), true
	}
	return internalTopicSpec{}, false
}

// canonicalInternalTopic replaces what a CreateTopics for an internal topic asks with
// this controller's spec: partitions, replication factor and configs.
func (b *Broker) canonicalInternalTopic(spec *controller.TopicSpec) {
	want, ok := b.internalTopicSpecFor(spec.Name)
	if !ok {
		return
	}
	spec.Partitions, spec.ReplicationFactor, spec.Assignment = want.partitions, int16(want.rf), nil
	spec.Configs = map[string]string{}
	for _, c := range want.configs {
		spec.Configs[c[0]] = c[1]
	}
}

func (b *Broker) ensureInternalTopic(ctx context.Context, spec internalTopicSpec) *metadata.Image {
	im := b.Image()
	if im.Topic(spec.name) != nil {
		return im
	}
	rf := spec.rf
	if len(im.PlacementBrokerIDs()) < rf {
		b.logger.Debug("not creating "+spec.name+": fewer unfenced, uncordoned brokers than its replication factor",
			"placeable", len(im.PlacementBrokerIDs()), spec.rfProperty, rf)
		return im
	}
	if !spec.creator.running.CompareAndSwap(false, true) {
		return im // another request is creating it
	}
	defer spec.creator.running.Store(false)
	cctx, cancel := b.waitTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = spec.name
	t.NumPartitions = spec.partitions
	t.ReplicationFactor = int16(rf)
	for _, c := range spec.configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = c[0], kmsg.StringPtr(c[1])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	resp, err := b.controllerCall(allowInternalCreate(cctx), req)
	if err != nil {
		b.logger.Warn("creating "+spec.name, "error", err)
		return b.Image()
	}
	for _, rt := range resp.(*kmsg.CreateTopicsResponse).Topics {
		switch rt.ErrorCode {
		case 0:
			b.logger.Info("created "+spec.name, "partitions", t.NumPartitions, "replication_factor", rf)
		case kerr.TopicAlreadyExists.Code:
		default:
			b.logger.Warn("creating "+spec.name, "error", kerr.ErrorForCode(rt.ErrorCode), "message", derefString(rt.ErrorMessage))
		}
	}
	for {
		changed := b.machine.Changed()
		im := b.Image()
		if im.Topic(spec.name) != nil {
			return im
		}
		select {
		case <-changed:
		case <-cctx.Done():
			return b.Image()
		}
	}
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
