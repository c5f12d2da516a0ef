package broker

// The broker's side of the quorum controller (controller/): its wiring to this node's
// Raft, image, configuration and network. The controller's decisions, sessions and
// evidence are its own; the handlers ask b.ctrl.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/fsm"
	"github.com/petrel-broker/petrel/metadata"
)

// shutdownEntryRecords bounds an entry of a controlled shutdown
// (controller.Config.ShutdownEntryRecords): metadata.MaxRecordsPerShutdownEntry; tests
// lower it before a cluster starts.
var shutdownEntryRecords atomic.Int32

func init() { shutdownEntryRecords.Store(metadata.MaxRecordsPerShutdownEntry) }

// newController builds this node's controller over its Raft node.
func (b *Broker) newController() *controller.Controller {
	return controller.New(controller.Config{
		NodeID:               b.cfg.NodeID,
		Quorum:               raftQuorum{b},
		Image:                b.Image,
		Logger:               b.logger,
		Stop:                 b.stop,
		Go:                   b.goLoop,
		SessionTimeout:       b.cfg.durationMs("broker.session.timeout.ms"),
		ShutdownEntryRecords: int(shutdownEntryRecords.Load()),
		UncleanAllowed:       b.uncleanAllowed,
		ELREnabled:           b.elrEnabled,
		MinISR:               b.minISR,
		Probe:                b.probeBroker,
		ShuttingDown:         b.shuttingDown.Load,
		BeforeOp:             func() { runStallHook(&b.stalls.controllerOp) },
		Rebalance: controller.Rebalance{
			Enabled:             b.cfg.boolValue("auto.leader.rebalance.enable"),
			Interval:            time.Duration(b.cfg.int64Value("leader.imbalance.check.interval.seconds")) * time.Second,
			ImbalancePercentage: int(b.cfg.int64Value("leader.imbalance.per.broker.percentage")),
			MaxRecords:          controller.MaxRecordsPerUserOp,
		},
		TopicDefaults: controller.TopicDefaults{
			NumPartitions:     int32(b.cfg.int64Value("num.partitions")),
			ReplicationFactor: int16(b.cfg.int64Value("default.replication.factor")),
		},
		DeleteTopicEnable: b.cfg.boolValue("delete.topic.enable"),
		Properties:        b.cfg.Properties,
	})
}

// LeaderRebalanceChecks returns how many automatic leader-balance checks this node has
// run as controller (for tests and logs).
func (b *Broker) LeaderRebalanceChecks() uint64 { return b.ctrl.LeaderRebalanceChecks() }

// raftQuorum is controller.Quorum over this node's hashicorp/raft.
type raftQuorum struct{ b *Broker }

func (q raftQuorum) IsLeader() bool                 { return q.b.IsController() }
func (q raftQuorum) LeaderID() int32                { return q.b.ControllerID() }
func (q raftQuorum) Term() uint64                   { return q.b.ControllerEpoch() }
func (q raftQuorum) LeaderChanged() <-chan struct{} { return q.b.leaders.changed() }
func (q raftQuorum) Barrier(timeout time.Duration) error {
	return q.b.raft.raft.Barrier(timeout).Error()
}
func (q raftQuorum) LastContact() time.Time { return q.b.raft.raft.LastContact() }

// Apply writes data as one Raft entry and waits until it is applied. A failure that
// means this node is not, or stops being, the leader wraps controller.ErrNotController.
// So does this node stopping (its requests drained, only the controller's own duties
// left waiting): when the whole cluster stops, the entry may never commit, and the
// node's stop would otherwise wait until Raft steps down for want of a quorum.
func (q raftQuorum) Apply(data []byte, timeout time.Duration) (*metadata.Image, error) {
	f := q.b.raft.raft.Apply(data, timeout)
	applied := make(chan error, 1)
	go func() { applied <- f.Error() }()
	var err error
	select {
	case err = <-applied:
	case <-q.b.stop:
		return nil, fmt.Errorf("%w: broker %d is stopping", controller.ErrNotController, q.b.cfg.NodeID)
	}
	if err != nil {
		if ferr := q.b.metadataStoreFailure(); ferr != nil {
			// Not written: this node stops being the controller (metadata_store.go), and
			// the request is sent again to the next one.
			return nil, fmt.Errorf("%w: %w", controller.ErrNotController, ferr)
		}
		if raftLeadershipMoving(err) {
			return nil, fmt.Errorf("%w: %v", controller.ErrNotController, err)
		}
		return nil, err
	}
	q.b.raft.nudgeCommit()
	res := f.Response().(fsm.ApplyResult)
	return res.Image, res.Err
}

// raftLeadershipMoving reports a Raft Apply error that means this node is not, or is
// ceasing to be, the leader: the request belongs to the next controller
// (NOT_CONTROLLER, which brokers and clients retry), not UNKNOWN_SERVER_ERROR. A
// leadership transfer in progress is a clean stop handing the controller over.
func raftLeadershipMoving(err error) bool {
	for _, e := range []error{raft.ErrNotLeader, raft.ErrLeadershipLost, raft.ErrLeadershipTransferInProgress, raft.ErrRaftShutdown} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// IsController reports whether this node is the Raft leader.
func (b *Broker) IsController() bool { return b.raft.raft.State() == raft.Leader }

// ControllerID returns the Raft leader's node id, or -1.
func (b *Broker) ControllerID() int32 {
	if b.metadataStoreFailure() != nil {
		// Raft is stopped here (metadata_store.go): no controller is known, so no
		// heartbeat is sent and the controller fences this broker when its session ends.
		return -1
	}
	_, id := b.raft.raft.LeaderWithID()
	n, err := strconv.Atoi(string(id))
	if err != nil {
		return -1
	}
	return int32(n)
}

// ControllerEpoch is the Raft term.
func (b *Broker) ControllerEpoch() uint64 { return b.raft.raft.CurrentTerm() }

// uncleanAllowed returns unclean.leader.election.enable per topic of im.
func (b *Broker) uncleanAllowed(im *metadata.Image) func(topic string) bool {
	return perTopic(func(topic string) bool {
		cfgs := b.topicConfigsFor(im, topic)
		return cfgs["unclean.leader.election.enable"].Value == "true"
	})
}

// perTopic memoizes f, a pure function of a topic name (its value under one image),
// for the life of the returned function: a controller decision asks once per
// partition, and resolving a topic's configs is a few maps per call (at 33,334
// partitions, a third of the controller's CPU while a whole cluster starts). Safe for
// concurrent use.
func perTopic[T any](f func(topic string) T) func(topic string) T {
	var mu sync.Mutex
	memo := map[string]T{}
	return func(topic string) T {
		mu.Lock()
		v, ok := memo[topic]
		mu.Unlock()
		if ok {
			return v
		}
		v = f(topic)
		mu.Lock()
		memo[topic] = v
		mu.Unlock()
		return v
	}
}

// probeBroker connects to br's inter-broker listener and closes the connection at once
// (no byte is sent: the broker closes it as an ordinary client end).
func (b *Broker) probeBroker(br *metadata.Broker) controller.ProbeResult {
	addr, ok := b.interBrokerAddr(br)
	if !ok {
		return controller.ProbeUnanswered
	}
	ctx, cancel := b.waitTimeout(context.Background(), controller.PeerProbeTimeout)
	defer cancel()
	nc, err := b.dial(ctx, "tcp", addr)
	switch {
	case err == nil:
		nc.Close()
		return controller.ProbeConnected
	case isConnectionRefused(err):
		return controller.ProbeRefused
	}
	return controller.ProbeUnanswered
}

// minISR returns min.insync.replicas per topic (eligible leader replicas, KIP-966).
func (b *Broker) minISR(im *metadata.Image) func(topic string) int {
	return perTopic(func(topic string) int {
		n, err := strconv.Atoi(b.topicConfigsFor(im, topic)["min.insync.replicas"].Value)
		if err != nil || n < 1 {
			return 1
		}
		return n
	})
}

// elrEnabled reports whether eligible leader replicas are on: the finalized
// eligible.leader.replicas.version.
func (b *Broker) elrEnabled(im *metadata.Image) bool { return metadata.ELREnabled(im) }
