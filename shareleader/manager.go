package shareleader

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/share"
)

// Replica is what the manager reads of a partition's local replica;
// *replication.Partition implements it. Its methods are safe for concurrent use.
type Replica interface {
	State() replication.State
	ReadIsolated(offset int64, maxBytes int, currentLeaderEpoch int32, scope replication.ReplicaScope, readCommitted bool) (replication.FetchResult, error)
	ListOffset(q replication.OffsetQuery) (replication.ListedOffset, error)
	Watch(w *replication.Waiter)
	Unwatch(w *replication.Waiter)
}

// Replicas finds the replicas this broker leads. Safe for concurrent use.
type Replicas interface {
	// Leader returns the local replica of (topicID, partition) when this broker leads
	// it; otherwise nil and the Kafka code to answer (UNKNOWN_TOPIC_ID,
	// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER).
	Leader(topicID [16]byte, partition int32) (Replica, int16)
}

// Config is what the broker gives the manager.
type Config struct {
	// Persister returns the share coordinators' Persister, read at every call (the
	// broker's field may be set after the manager starts).
	Persister func() Persister
	// Replicas finds the led replicas.
	Replicas Replicas
	// GroupConfig returns a share group's share.* settings.
	GroupConfig func(groupID string) GroupConfig
	// MaxShareSessions is group.share.max.share.sessions (Kafka's default 2000).
	MaxShareSessions int
	// WriteTimeout bounds a persister call made outside a request (lock expiry,
	// a closed connection's release) and a share partition's load; 30s when zero.
	WriteTimeout time.Duration
	// IdleTimeout unloads a share partition unused for that long with nothing in
	// flight (no lock held, no write queued), and forgets the metrics of a share
	// group with no share partition loaded: a deleted group's share partitions do
	// not stay loaded. DefaultIdleTimeout when zero.
	IdleTimeout time.Duration
	// RemoteRead, when set (remote.log.storage.system.enable), reads a replica from
	// remote storage at an offset below its local log start (KIP-405): whole batches up
	// to maxBytes, the first whole, with the aborted transactions of the range when
	// readCommitted; bounded by ctx. nil: such an offset acquires nothing this time.
	RemoteRead func(ctx context.Context, replica Replica, offset int64, maxBytes int, readCommitted bool) ([]byte, []replication.AbortedTxn, error)
	// Logger receives the manager's logs; nil discards them.
	Logger hclog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// DefaultMaxShareSessions is group.share.max.share.sessions' default.
const DefaultMaxShareSessions = 2000

// DefaultIdleTimeout is Config.IdleTimeout's default.
const DefaultIdleTimeout = 10 * time.Minute

// Manager is Kafka's SharePartitionManager: the share partitions of every (share
// group, topic-partition) this broker leads, created on a group's first ShareFetch,
// the share sessions, and the acquisition-lock timers. Safe for concurrent use.
//
// Locks: Manager.mu (the partition map) and sharePartition.mu (one share partition)
// are never held together; sharePartition.mu is held while taking Metrics.mu or
// Manager.runMu, leaves, and Manager.mu while taking Metrics.mu (idle.go);
// SessionCache.mu is taken alone. None is held across a Persister call, a log read, a
// replica's lock or a timer callback.
type Manager struct {
	cfg      Config
	log      hclog.Logger
	sessions *SessionCache
	metrics  *Metrics

	// ctx ends when the manager closes: the persister calls it makes on its own.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// partitions are the loaded (or loading) share partitions; guarded by mu.
	partitions map[share.Key]*sharePartition
	// avail is closed (and replaced) when records may have become Available
	// without a log change (release, lock expiry): parked fetches try again. Guarded
	// by mu.
	avail chan struct{}
	// closed: Close was called; guarded by mu.
	closed bool

	// runMu guards stopping; a leaf, taken under sharePartition.mu.
	runMu sync.Mutex
	// stopping: Close started; no goroutine is started any more. Guarded by runMu.
	stopping bool
	// running counts the goroutines the manager started (writers, loads, lock
	// timers, closed sessions' releases): Close waits for them.
	running sync.WaitGroup
}

// closeWait bounds how long Close waits for the manager's goroutines; they use the
// manager's context, which Close cancels, so they end promptly.
const closeWait = 10 * time.Second

// goTracked runs fn on a goroutine Close waits for; false (fn not run) once Close
// started.
func (m *Manager) goTracked(fn func()) bool {
	if !m.enter() {
		return false
	}
	go func() {
		defer m.running.Done()
		fn()
	}()
	return true
}

// runTracked runs fn (a timer's or a context's callback) unless Close started, with
// Close waiting for it.
func (m *Manager) runTracked(fn func()) {
	if !m.enter() {
		return
	}
	defer m.running.Done()
	fn()
}

// enter counts a goroutine in running unless Close started.
func (m *Manager) enter() bool {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	if m.stopping {
		return false
	}
	m.running.Add(1)
	return true
}

// New returns a running manager.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxShareSessions <= 0 {
		cfg.MaxShareSessions = DefaultMaxShareSessions
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.GroupConfig == nil {
		cfg.GroupConfig = func(string) GroupConfig { return GroupConfig{AutoOffsetReset: "latest"} }
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel,
		partitions: map[share.Key]*sharePartition{},
		avail:      make(chan struct{}),
		metrics:    newMetrics(),
	}
	m.sessions = newSessionCache(cfg.MaxShareSessions)
	m.goTracked(m.unloadIdle)
	return m
}

// Close stops every lock timer and drops every share partition, cancels the share
// state calls in progress and waits (at most closeWait) for the manager's goroutines
// to end; later calls fail with ErrClosed. Idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	parts := m.partitions
	m.partitions = map[share.Key]*sharePartition{}
	m.mu.Unlock()
	m.runMu.Lock()
	m.stopping = true
	m.runMu.Unlock()
	for _, sp := range parts {
		sp.drop()
	}
	m.cancel()
	done := make(chan struct{})
	go func() {
		m.running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeWait):
		m.log.Warn("share partition goroutines still running after close", "waited", closeWait)
	}
	return nil
}

// Sessions is the share session cache.
func (m *Manager) Sessions() *SessionCache { return m.sessions }

// Metrics is the manager's per share group counters.
func (m *Manager) Metrics() *Metrics { return m.metrics }

func (m *Manager) nowMs() int64 { return m.cfg.Now().UnixMilli() }

// availChan returns the channel closed at the next release or expiry.
func (m *Manager) availChan() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.avail
}

// notifyAvailable wakes the parked fetches: records may be Available again.
func (m *Manager) notifyAvailable() {
	m.mu.Lock()
	close(m.avail)
	m.avail = make(chan struct{})
	m.mu.Unlock()
}

// partition returns the share partition of key, loading it on first use: the replica
// must be led here; a share partition loaded in an older leader epoch (leadership
// moved away and back) is dropped and loaded again. The load runs on its own, bounded
// by WriteTimeout (a leaderless __share_group_state fails it with
// COORDINATOR_NOT_AVAILABLE); the caller waits for it until ctx ends or, when wait is
// above 0, for wait at most (a fetch's MaxWait): then errLoading.
func (m *Manager) partition(ctx context.Context, key share.Key, wait time.Duration) (*sharePartition, error) {
	replica, code := m.cfg.Replicas.Leader(key.TopicID, key.Partition)
	if replica == nil {
		return nil, &codeError{code: code, what: "share partition not led here"}
	}
	epoch := replica.State().LeaderEpoch
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		sp := m.partitions[key]
		if sp != nil && (sp.leaderEpoch != epoch || sp.replica != replica) {
			delete(m.partitions, key)
			m.mu.Unlock()
			sp.drop()
			continue
		}
		loading := sp == nil
		if loading {
			sp = newSharePartition(m, key, replica, epoch)
			m.partitions[key] = sp
		}
		m.mu.Unlock()
		if loading && !m.goTracked(func() { m.load(sp) }) {
			sp.loadErr = ErrClosed // the manager closed: those waiting for it give up
			close(sp.loaded)
			m.forget(sp)
			return nil, ErrClosed
		}
		var timeout <-chan time.Time
		if wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-sp.loaded:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout:
			return nil, fmt.Errorf("%w: %s", errLoading, sp)
		}
		if sp.loadErr != nil {
			m.forget(sp)
			return nil, sp.loadErr
		}
		return sp, nil
	}
}

// load loads sp within WriteTimeout, then wakes the parked fetches: its records may be
// acquired, or its failure answered.
func (m *Manager) load(sp *sharePartition) {
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.WriteTimeout)
	defer cancel()
	sp.load(ctx)
	if sp.loadErr != nil {
		m.log.Log(stateLogLevel(sp.loadErr), "share partition not loaded", "partition", sp.String(), "error", sp.loadErr)
	}
	m.notifyAvailable()
}

// forget removes sp from the map (if it is still there) and stops it: the next use
// loads the durable state again.
func (m *Manager) forget(sp *sharePartition) {
	m.mu.Lock()
	if m.partitions[sp.key] == sp {
		delete(m.partitions, sp.key)
	}
	m.mu.Unlock()
	sp.drop()
}

// DropNotLed drops the share partitions whose replica this broker no longer leads in
// the epoch they were loaded in (leadership moved, the replica was removed): the new
// leader reloads their durable state. The broker calls it after each metadata change.
func (m *Manager) DropNotLed() {
	m.mu.Lock()
	held := make([]*sharePartition, 0, len(m.partitions))
	for _, sp := range m.partitions {
		held = append(held, sp)
	}
	m.mu.Unlock()
	for _, sp := range held { // no manager lock while the replicas are asked
		st := sp.replica.State()
		replica, _ := m.cfg.Replicas.Leader(sp.key.TopicID, sp.key.Partition)
		if replica != sp.replica || st.Role != replication.Leader || st.LeaderEpoch != sp.leaderEpoch {
			m.forget(sp)
		}
	}
}

// Loaded reports the number of share partitions held (tests, metrics).
func (m *Manager) Loaded() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.partitions)
}

// InFlight describes a share partition held here (nil, false when none): tests and
// describe tools.
func (m *Manager) InFlight(key share.Key) ([]share.InFlight, int64, bool) {
	m.mu.Lock()
	sp := m.partitions[key]
	m.mu.Unlock()
	if sp == nil {
		return nil, 0, false
	}
	select {
	case <-sp.loaded:
	default:
		return nil, 0, false
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p == nil {
		return nil, 0, false
	}
	return sp.p.InFlight(), sp.p.StartOffset(), true
}
