// Package controller is the quorum controller: the one goroutine of the Raft leader
// that decides metadata changes against the latest image, one decision at a time
// (Kafka's single-threaded controller), and proposes them as Raft entries. It keeps
// broker registrations and sessions, fences brokers whose session expired or that the
// evidence of their peers shows dead, finishes controlled shutdowns, completes
// reassignments and rebalances leaders.
//
// It holds its own state (decisions queue, sessions, evidence, shutdown finishers)
// and reaches Raft only through Quorum, which the broker implements: this package does
// not import hashicorp/raft, and it answers no Kafka request itself (the broker's
// handlers decode, ask it, and encode).
package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/metadata"
)

// slowOp is how long one decision may hold the controller before it is logged at WARN:
// every other metadata change waits behind it. Kafka's
// controller.performance.always.log.threshold.ms default (2000): a Raft commit of
// 0.5-0.9 s is routine on a loaded 2-core machine and no cause for a warning.
const slowOp = 2 * time.Second

// tickInterval is how often the controller's duties run while it is active.
const tickInterval = 100 * time.Millisecond

// Quorum is the metadata quorum as the controller sees it (the broker implements it
// over hashicorp/raft). Its methods are safe for concurrent use.
type Quorum interface {
	// IsLeader reports whether this node is the quorum leader.
	IsLeader() bool
	// LeaderID returns the leader's node id, or -1 when none is known.
	LeaderID() int32
	// Term returns the current term: the controller epoch.
	Term() uint64
	// LeaderChanged returns a channel closed at the next observed leader change.
	LeaderChanged() <-chan struct{}
	// Barrier waits until every committed entry is applied to this node's image.
	Barrier(timeout time.Duration) error
	// LastContact is when this node last heard from the leader (zero if never).
	LastContact() time.Time
	// Apply writes data (encoded records) as one entry and waits until it is applied,
	// returning the image after it and the apply's domain error. An error meaning
	// leadership moved wraps ErrNotController.
	Apply(data []byte, timeout time.Duration) (*metadata.Image, error)
}

// Config holds a Controller's dependencies. Every func is required unless said.
type Config struct {
	// NodeID is this node's id.
	NodeID int32
	// Quorum writes to the metadata log.
	Quorum Quorum
	// Image returns the current metadata image of this node.
	Image func() *metadata.Image
	// Logger logs the controller's decisions.
	Logger hclog.Logger
	// Stop is closed when the node stops: the loop ends, waits end.
	Stop <-chan struct{}
	// Go runs fn on a goroutine the node waits for as it stops.
	Go func(name string, fn func())
	// SessionTimeout is broker.session.timeout.ms.
	SessionTimeout time.Duration
	// ShutdownEntryRecords bounds an entry of a controlled shutdown (0:
	// metadata.MaxRecordsPerShutdownEntry).
	ShutdownEntryRecords int
	// ELREnabled reports whether eligible leader replicas (KIP-966) are on for im (nil:
	// metadata.ELREnabled, the finalized feature level).
	ELREnabled func(im *metadata.Image) bool
	// MinISR returns min.insync.replicas per topic of im (elr.go).
	MinISR func(im *metadata.Image) func(topic string) int
	// UncleanAllowed returns unclean.leader.election.enable per topic of im.
	UncleanAllowed func(im *metadata.Image) func(topic string) bool
	// Probe connects to br's inter-broker listener and closes the connection.
	Probe func(br *metadata.Broker) ProbeResult
	// ShuttingDown reports whether this node is stopping.
	ShuttingDown func() bool
	// BeforeOp, when set, runs before each decision (a test seam that stalls it).
	BeforeOp func()
	// Rebalance is the automatic leader rebalance (rebalance.go).
	Rebalance Rebalance
	// TopicDefaults are num.partitions and default.replication.factor (topics.go).
	TopicDefaults TopicDefaults
	// DeleteTopicEnable is delete.topic.enable.
	DeleteTopicEnable bool
	// Properties are this node's static broker properties (Kafka's names), under the
	// dynamic configs when a config's current value is resolved (configs.go).
	Properties map[string]string
}

// Controller is the quorum controller of one node. It is active only while the node
// is the quorum leader; Do fails with ErrNotController elsewhere.
type Controller struct {
	cfg Config
	log hclog.Logger
	// ops are the decisions for the controller goroutine (Run).
	ops chan op
	// sessions are the brokers' heartbeats this term.
	sessions *Sessions
	// evidence is the brokers' refused connections and this controller's probes this
	// term (evidence.go).
	evidence *peerEvidence
	// finishers are the controlled shutdowns whose ISR removals are being written.
	finishers shutdownFinishers
	// rebalance is the automatic leader rebalance's schedule (rebalance.go).
	rebalance leaderRebalance
	// hadTerm says this node was the active controller before (Run's goroutine only).
	hadTerm bool
	// firstTerm says the active term is this node's first since it started, with no
	// other leader seen before it (absentSinceStart); written by Run's goroutine, read
	// by the probes'.
	firstTerm atomic.Bool
	// notStarted are the brokers fenced as not started yet (not_started.go).
	notStarted notStartedBrokers
}

// op is one decision: plan records from the current image, then they are proposed as
// one Raft entry. plan returning no records proposes nothing.
type op struct {
	plan   func(im *metadata.Image) ([]metadata.Record, error)
	result chan opResult
	ctx    context.Context
}

type opResult struct {
	image *metadata.Image
	err   error
}

// New returns a controller; Run is its goroutine.
func New(cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.ShutdownEntryRecords <= 0 {
		cfg.ShutdownEntryRecords = metadata.MaxRecordsPerShutdownEntry
	}
	return &Controller{cfg: cfg, log: cfg.Logger, ops: make(chan op), sessions: newSessions(), evidence: newPeerEvidence()}
}

// Sessions are the brokers' sessions this term (meaningful on the active controller).
func (c *Controller) Sessions() *Sessions { return c.sessions }

// Do runs plan on the controller goroutine, which handles one decision at a time
// against the latest image, and waits for the records to be applied. It fails with
// ErrNotController on a node that is not the leader.
func (c *Controller) Do(ctx context.Context, plan func(im *metadata.Image) ([]metadata.Record, error)) (*metadata.Image, error) {
	if !c.cfg.Quorum.IsLeader() {
		return nil, ErrNotController
	}
	o := op{plan: plan, result: make(chan opResult, 1), ctx: ctx}
	select {
	case c.ops <- o:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.cfg.Stop:
		return nil, ErrNotController
	}
	select {
	case r := <-o.result:
		return r.image, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// propose writes records as one Raft entry and waits until it is applied. Only the
// controller goroutine calls it, with records planned against the current image; they
// pass through the eligible leader replica rules first (elr.go).
func (c *Controller) propose(ctx context.Context, records ...metadata.Record) (*metadata.Image, error) {
	records = c.withELR(ctx, c.cfg.Image(), records)
	data, err := metadata.EncodeRecords(records...)
	if err != nil {
		return nil, err
	}
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	return c.cfg.Quorum.Apply(data, timeout)
}

// Run is the controller goroutine; it returns when Config.Stop closes. While this node
// is the quorum leader it runs decisions one at a time, keeps broker sessions, fences
// brokers whose session expired, and writes the cluster id once. A new term starts
// with a barrier (every committed entry applied), a fresh session for every
// registered broker but the previous controller (activateSessions), which is fenced at
// once unless its listener accepts a connection (fencePreviousController).
func (c *Controller) Run() {
	tick := time.NewTicker(tickInterval)
	defer tick.Stop()
	var activeTerm uint64
	previous := int32(-1) // the last other node seen as leader
	q := c.cfg.Quorum
	// activate reports whether this node is the active controller of the current term,
	// starting the term (barrier, sessions) when it has just become the leader.
	activate := func() bool {
		if !q.IsLeader() {
			activeTerm = 0
			if id := q.LeaderID(); id >= 0 && id != c.cfg.NodeID {
				previous = id
			}
			return false
		}
		if term := q.Term(); term != activeTerm {
			if err := q.Barrier(5 * time.Second); err != nil {
				return false
			}
			activeTerm = q.Term()
			c.activateSessions(previous, time.Now())
			c.log.Info("controller active", "epoch", activeTerm)
			// Before any decision of the term: a dead previous controller's broker
			// leads nothing and gets no new replica (evidence.go).
			c.fencePreviousController(previous)
			// Before any decision of the term: a broker's registration then always
			// lands after the cluster id, so no broker serves Metadata without it.
			c.ensureClusterID()
		}
		return true
	}
	for {
		leaderChanged := q.LeaderChanged()
		select {
		case <-c.cfg.Stop:
			return
		case o := <-c.ops:
			// A decision that arrives before the tick noticed a new term starts it.
			if !activate() {
				o.result <- opResult{err: ErrNotController}
				continue
			}
			o.result <- c.runOp(o)
		case <-leaderChanged:
			activate() // at once: forwarded requests are waiting for this term
		case <-tick.C:
			if activate() {
				c.duties()
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
func (c *Controller) activateSessions(previous int32, now time.Time) {
	c.sessions.activate(c.cfg.Image(), now)
	c.evidence.reset()
	c.firstTerm.Store(!c.hadTerm && previous < 0)
	c.hadTerm = true
	if previous < 0 || previous == c.cfg.NodeID {
		return
	}
	if last := c.cfg.Quorum.LastContact(); !last.IsZero() && last.Before(now) {
		c.sessions.heardAt(previous, last)
		c.log.Info("previous controller's session counts from its last Raft contact", "broker", previous,
			"silent_for", now.Sub(last).Round(time.Millisecond).String())
	}
}

func (c *Controller) runOp(o op) opResult {
	if err := o.ctx.Err(); err != nil {
		return opResult{err: err}
	}
	if c.cfg.BeforeOp != nil {
		c.cfg.BeforeOp()
	}
	start := time.Now()
	records, err := o.plan(c.cfg.Image())
	if err != nil || len(records) == 0 {
		return opResult{image: c.cfg.Image(), err: err}
	}
	planned := time.Now()
	ctx, cancel := c.bounded(o.ctx, 10*time.Second)
	defer cancel()
	im, err := c.propose(ctx, records...)
	if took := time.Since(start); took > slowOp {
		// While this node stops, a slow commit is the other voters stopping too (the
		// whole cluster stopped at once): INFO.
		level := hclog.Warn
		if c.cfg.ShuttingDown() {
			level = hclog.Info
		}
		c.log.Log(level, "slow controller operation", "records", len(records), "plan", planned.Sub(start), "propose", time.Since(planned))
	}
	return opResult{image: im, err: err}
}

// ensureClusterID writes the cluster id when the image has none yet (a new cluster's
// first controller term) and reports whether the image has one now.
func (c *Controller) ensureClusterID() bool {
	if c.cfg.Image().ClusterID != "" {
		return true
	}
	ctx, cancel := c.bounded(context.Background(), 5*time.Second)
	defer cancel()
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return false
	}
	// A new cluster is formed at this release's feature levels (features.go), in the
	// entry of its cluster id: an existing cluster never gets them this way.
	records := append([]metadata.Record{metadata.ClusterRecord{ClusterID: metadata.UuidFromBytes(raw).String()}},
		metadata.BootstrapFeatureRecords()...)
	if _, err := c.propose(ctx, records...); err != nil {
		// A node stopping as its first term starts (a routine stop right after a start)
		// is no fault: the next controller writes the id. Anything else is.
		level := hclog.Warn
		if c.cfg.ShuttingDown() || errors.Is(err, ErrNotController) {
			level = hclog.Info
		}
		c.log.Log(level, "writing the cluster id", "error", err)
		return false
	}
	return c.cfg.Image().ClusterID != ""
}

// bounded returns a context for an internal wait bounded by d and by Config.Stop.
func (c *Controller) bounded(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, d)
	go func() {
		select {
		case <-c.cfg.Stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
