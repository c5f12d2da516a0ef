package broker

// Internal topics: __consumer_offsets (and later __transaction_state). They are created
// only by the broker, on first need, through the controller; users cannot create,
// delete or produce to them; Metadata reports them with is_internal and never
// auto-creates them.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// offsetsTopic holds committed offsets and group metadata (Kafka's name).
	offsetsTopic = "__consumer_offsets"
	// transactionStateTopic is reserved for the transaction coordinator.
	transactionStateTopic = "__transaction_state"
)

// ErrInternalTopic refuses a user's create, delete or produce on an internal topic.
var ErrInternalTopic = errors.New("broker: internal topic")

func isInternalTopic(name string) bool {
	return name == offsetsTopic || name == transactionStateTopic
}

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
	if _, ok := c.brokerValue("offsets.topic.replication.factor"); ok {
		return int(c.int64Value("offsets.topic.replication.factor"))
	}
	return max(1, min(3, len(c.Voters)))
}

// offsetsTopicCreator creates __consumer_offsets once at a time.
type offsetsTopicCreator struct {
	running atomic.Bool
}

// ensureOffsetsTopic creates __consumer_offsets when it does not exist and enough
// brokers are unfenced for its replication factor (Kafka never creates it with fewer
// replicas). It returns the image to answer from; the caller answers
// COORDINATOR_NOT_AVAILABLE if the topic is still missing.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) *metadata.Image {
	im := b.Image()
	if im.Topic(offsetsTopic) != nil {
		return im
	}
	rf := b.cfg.offsetsReplicationFactor()
	if len(im.UnfencedBrokerIDs()) < rf {
		b.logger.Debug("not creating "+offsetsTopic+": fewer unfenced brokers than its replication factor",
			"unfenced", len(im.UnfencedBrokerIDs()), "offsets.topic.replication.factor", rf)
		return im
	}
	if !b.offsetsCreator.running.CompareAndSwap(false, true) {
		return im // another request is creating it
	}
	defer b.offsetsCreator.running.Store(false)
	cctx, cancel := b.waitTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = offsetsTopic
	t.NumPartitions = int32(b.cfg.int64Value("offsets.topic.num.partitions"))
	t.ReplicationFactor = int16(rf)
	for _, c := range [][2]string{
		{"cleanup.policy", "compact"},
		{"segment.bytes", itoa(b.cfg.int64Value("offsets.topic.segment.bytes"))},
		{"compression.type", "producer"},
	} {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = c[0], kmsg.StringPtr(c[1])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	resp, err := b.controllerCall(allowInternalCreate(cctx), req)
	if err != nil {
		b.logger.Warn("creating "+offsetsTopic, "error", err)
		return b.Image()
	}
	for _, rt := range resp.(*kmsg.CreateTopicsResponse).Topics {
		switch rt.ErrorCode {
		case 0:
			b.logger.Info("created "+offsetsTopic, "partitions", t.NumPartitions, "replication_factor", rf)
		case kerr.TopicAlreadyExists.Code:
		default:
			b.logger.Warn("creating "+offsetsTopic, "error", kerr.ErrorForCode(rt.ErrorCode), "message", derefString(rt.ErrorMessage))
		}
	}
	for {
		changed := b.machine.Changed()
		im := b.Image()
		if im.Topic(offsetsTopic) != nil {
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

// internalTopicError refuses a user operation on an internal topic.
func internalTopicError(op, name string) error {
	return fmt.Errorf("%w: cannot %s internal topic %s", ErrInternalTopic, op, name)
}
