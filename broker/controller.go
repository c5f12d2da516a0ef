package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/fsm"
	"github.com/petrel-broker/petrel/metadata"
)

// Broker errors mapped to Kafka codes in errors.go.
var (
	// ErrNotController means this node is not the Raft leader.
	ErrNotController = errors.New("broker: not the controller")
	// ErrTopicDeletionDisabled means delete.topic.enable is false.
	ErrTopicDeletionDisabled = errors.New("broker: topic deletion is disabled")
)

// slowControllerOp is how long one decision may hold the controller before it is
// logged: every other metadata change waits behind it.
const slowControllerOp = 500 * time.Millisecond

// controllerOp is one controller decision: plan records from the current image, then
// they are proposed as one Raft entry. plan returning no records proposes nothing.
type controllerOp struct {
	plan   func(im *metadata.Image) ([]metadata.Record, error)
	result chan controllerResult
	ctx    context.Context
}

type controllerResult struct {
	image *metadata.Image
	err   error
}

// controllerDo runs plan on the controller goroutine, which handles one decision at a
// time against the latest image (Kafka's single-threaded controller), and waits for the
// records to be applied. It fails with ErrNotController on a node that is not the leader.
func (b *Broker) controllerDo(ctx context.Context, plan func(im *metadata.Image) ([]metadata.Record, error)) (*metadata.Image, error) {
	if !b.IsController() {
		return nil, ErrNotController
	}
	op := controllerOp{plan: plan, result: make(chan controllerResult, 1), ctx: ctx}
	select {
	case b.controllerOps <- op:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.stop:
		return nil, ErrNotController
	}
	select {
	case r := <-op.result:
		return r.image, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// propose writes records as one Raft entry and waits until it is applied. Only the
// controller goroutine calls it.
func (b *Broker) propose(ctx context.Context, records ...metadata.Record) (*metadata.Image, error) {
	data, err := metadata.EncodeRecords(records...)
	if err != nil {
		return nil, err
	}
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	f := b.raft.raft.Apply(data, timeout)
	if err := f.Error(); err != nil {
		if ferr := b.metadataStoreFailure(); ferr != nil {
			// Not written: this node stops being the controller (metadata_store.go), and
			// the request is sent again to the next one.
			return nil, fmt.Errorf("%w: %w", ErrNotController, ferr)
		}
		if raftLeadershipMoving(err) {
			return nil, fmt.Errorf("%w: %v", ErrNotController, err)
		}
		return nil, err
	}
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

// controllerLoop is the controller goroutine. While this node is the Raft leader it
// runs decisions one at a time, keeps broker sessions, fences brokers whose session
// expired, and writes the cluster id once. A new term starts with a Raft barrier (every
// committed entry applied), a fresh session for every registered broker but the
// previous controller (activateSessions), which is fenced at once unless its listener
// accepts a connection (fencePreviousController).
func (b *Broker) controllerLoop() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var activeTerm uint64
	previous := int32(-1) // the last other node seen as Raft leader
	// activate reports whether this node is the active controller of the current term,
	// starting the term (barrier, sessions) when it has just become the Raft leader.
	activate := func() bool {
		if !b.IsController() {
			activeTerm = 0
			if id := b.ControllerID(); id >= 0 && id != b.cfg.NodeID {
				previous = id
			}
			return false
		}
		if term := b.ControllerEpoch(); term != activeTerm {
			if err := b.raft.raft.Barrier(5 * time.Second).Error(); err != nil {
				return false
			}
			activeTerm = b.ControllerEpoch()
			b.activateSessions(previous, time.Now())
			b.logger.Info("controller active", "epoch", activeTerm)
			// Before any decision of the term: a dead previous controller's broker
			// leads nothing and gets no new replica (peer_evidence.go).
			b.fencePreviousController(previous)
			// Before any decision of the term: a broker's registration then always
			// lands after the cluster id, so no broker serves Metadata without it.
			b.ensureClusterID()
		}
		return true
	}
	for {
		leaderChanged := b.leaders.changed()
		select {
		case <-b.stop:
			return
		case op := <-b.controllerOps:
			// A decision that arrives before the tick noticed a new term starts it.
			if !activate() {
				op.result <- controllerResult{err: ErrNotController}
				continue
			}
			op.result <- b.runControllerOp(op)
		case <-leaderChanged:
			activate() // at once: forwarded requests are waiting for this term
		case <-tick.C:
			if activate() {
				b.controllerDuties()
			}
		}
	}
}

// activateSessions starts the sessions of a new controller term. Every registered
// broker gets a fresh session (Kafka's rule), except the previous controller: its broker
// heartbeats went to itself, and this node has heard nothing from it since its last Raft
// contact, so its session counts from that moment. A previous controller that crashed is
// thus fenced broker.session.timeout.ms after it went silent, not that long after the
// election; one that is alive heartbeats this controller within an interval. Fencing early
// is always safe for data (the ISR keeps a last member), only a leadership move.
func (b *Broker) activateSessions(previous int32, now time.Time) {
	b.sessions.activate(b.Image(), now)
	b.evidence.reset()
	if previous < 0 || previous == b.cfg.NodeID {
		return
	}
	if last := b.raft.raft.LastContact(); !last.IsZero() && last.Before(now) {
		b.sessions.heardAt(previous, last)
		b.logger.Info("previous controller's session counts from its last Raft contact", "broker", previous,
			"silent_for", now.Sub(last).Round(time.Millisecond).String())
	}
}

func (b *Broker) runControllerOp(op controllerOp) controllerResult {
	if err := op.ctx.Err(); err != nil {
		return controllerResult{err: err}
	}
	runStallHook(&b.stalls.controllerOp)
	start := time.Now()
	records, err := op.plan(b.Image())
	if err != nil || len(records) == 0 {
		return controllerResult{image: b.Image(), err: err}
	}
	planned := time.Now()
	ctx, cancel := b.waitTimeout(op.ctx, 10*time.Second)
	defer cancel()
	im, err := b.propose(ctx, records...)
	if took := time.Since(start); took > slowControllerOp {
		// While this node stops, a slow commit is the other voters stopping too (the
		// whole cluster stopped at once): INFO.
		level := hclog.Warn
		if b.shuttingDown.Load() {
			level = hclog.Info
		}
		b.logger.Log(level, "slow controller operation", "records", len(records), "plan", planned.Sub(start), "propose", time.Since(planned))
	}
	return controllerResult{image: im, err: err}
}

// ensureClusterID writes the cluster id when the image has none yet (a new cluster's
// first controller term) and reports whether the image has one now.
func (b *Broker) ensureClusterID() bool {
	if b.Image().ClusterID != "" {
		return true
	}
	ctx, cancel := b.waitTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return false
	}
	if _, err := b.propose(ctx, metadata.ClusterRecord{ClusterID: metadata.UuidFromBytes(raw).String()}); err != nil {
		b.logger.Warn("writing the cluster id", "error", err)
		return false
	}
	return b.Image().ClusterID != ""
}

// controllerDuties writes the cluster id once, fences brokers whose session expired
// and completes reassignments that are ready.
func (b *Broker) controllerDuties() {
	ctx, cancel := b.waitTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !b.ensureClusterID() {
		return
	}
	im := b.Image()
	for _, id := range b.sessions.expired(im, time.Now(), b.cfg.durationMs("broker.session.timeout.ms")) {
		records := metadata.FenceBrokerRecords(b.Image(), id, b.uncleanAllowed(b.Image()))
		if len(records) == 0 {
			continue
		}
		before := b.Image()
		if _, err := b.propose(ctx, records...); err != nil {
			b.logger.Warn("fencing broker", "broker", id, "error", err)
			continue
		}
		logUncleanElections(b, before, records)
		b.logger.Warn("broker session expired: fenced, removed from every ISR, leaders re-elected", "broker", id,
			"partition_changes", len(records)-1)
	}
	b.finishFencedBrokers(b.Image())
	b.completeReassignments(ctx)
	b.maybeRebalanceLeaders(ctx, time.Now())
}

// logUncleanElections logs every leader elected from outside the ISR: the records the
// old ISR had above the new leader's log end offset may be lost, and the new leader's
// epoch start (logged by the partition when it leads) says from where.
func logUncleanElections(b *Broker, before *metadata.Image, records []metadata.Record) {
	for _, r := range records {
		c, ok := r.(metadata.PartitionChangeRecord)
		if !ok || !c.Unclean || c.Leader == nil {
			continue
		}
		t := before.TopicByID(c.TopicID)
		if t == nil {
			continue
		}
		p := t.Partitions[c.PartitionID]
		b.logger.Warn("UNCLEAN leader election: records committed by the old ISR but missing on the new leader will be lost",
			"topic", t.Name, "partition", p.ID, "new_leader", *c.Leader, "old_isr", p.ISR, "old_leader_epoch", p.LeaderEpoch)
	}
}

// uncleanAllowed returns unclean.leader.election.enable per topic.
func (b *Broker) uncleanAllowed(im *metadata.Image) func(topic string) bool {
	return func(topic string) bool {
		cfgs := b.topicConfigsFor(im, topic)
		return cfgs["unclean.leader.election.enable"].Value == "true"
	}
}
