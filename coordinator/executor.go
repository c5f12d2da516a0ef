package coordinator

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

const (
	stateLoading int32 = iota
	stateServing
	stateStopped
)

// task is one queued op, or a timer's firing (timer set).
type task struct {
	op    Op
	fail  func(error)
	timer *timerEntry
}

type timerEntry struct {
	key  string
	fire Op
	t    *time.Timer
}

// pendingWrite is an appended batch waiting for the high watermark. It stays pending,
// in append (log) order, until the high watermark passes it or the partition is
// unloaded: a write answered at its deadline (timedOut) is still applied once it lands.
type pendingWrite struct {
	end       int64 // the high watermark must reach this
	deadline  time.Time
	minInsync int
	committed func(now time.Time, errorCode int16) Result
	timedOut  func(now time.Time, errorCode int16) Result
	answered  bool // timedOut has run
}

// executor is one loaded partition: its goroutine loads the log, then runs tasks one at
// a time and completes writes as the high watermark moves.
type executor struct {
	rt        *Runtime
	partition int32
	epoch     int32
	log       Log
	minInsync func() int
	shard     Shard

	state atomic.Int32
	mu    sync.Mutex // guards queue and the stopping transition
	queue []task
	wake  chan struct{}
	stop  chan struct{}
	once  sync.Once

	// The executor goroutine's own.
	timers  map[string]*timerEntry
	pending []pendingWrite
	// timedOut counts the writes of pending already answered by their TimedOut
	// (bounded by Config.MaxTimedOutWrites).
	timedOut int
	waiter   *replication.Waiter
	loaded   bool
}

func newExecutor(rt *Runtime, spec LoadSpec) *executor {
	return &executor{rt: rt, partition: spec.Partition, epoch: spec.LeaderEpoch, log: spec.Log,
		minInsync: spec.MinInsync, shard: spec.Shard, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		timers: map[string]*timerEntry{}, waiter: replication.NewWaiter()}
}

func (e *executor) currentState() int32 { return e.state.Load() }

func (e *executor) submit(t task) error {
	e.mu.Lock()
	switch e.state.Load() {
	case stateLoading:
		if t.timer == nil {
			e.mu.Unlock()
			return ErrLoadInProgress
		}
	case stateStopped:
		e.mu.Unlock()
		return ErrNotCoordinator
	}
	e.queue = append(e.queue, t)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return nil
}

// stopAsync marks the executor stopped; its goroutine fails what waits and exits.
func (e *executor) stopAsync() {
	e.once.Do(func() {
		e.mu.Lock()
		e.state.Store(stateStopped)
		e.mu.Unlock()
		close(e.stop)
	})
}

func (e *executor) stopped() bool { return e.state.Load() == stateStopped }

func (e *executor) run() {
	e.log.Watch(e.waiter)
	defer e.log.Unwatch(e.waiter)
	defer e.shutdown()
	logger := e.rt.cfg.Logger.With("partition", e.partition, "leader_epoch", e.epoch)
	start := time.Now()
	records, ok := e.load()
	if !ok {
		return
	}
	e.mu.Lock()
	if e.state.Load() == stateStopped {
		e.mu.Unlock()
		return
	}
	e.state.Store(stateServing)
	e.mu.Unlock()
	logger.Info("coordinator partition loaded", "topic", e.rt.cfg.Name, "records", records, "took", time.Since(start).Round(time.Millisecond))
	e.loaded = true
	if !e.runTask(task{op: func(now time.Time, s Shard) Result { return s.Loaded(now) }}) {
		return
	}
	if !e.runTask(task{op: func(time.Time, Shard) Result { e.checkPending(); return Result{} }}) {
		return
	}
	deadline := time.NewTimer(time.Hour)
	defer deadline.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-e.wake:
		case <-e.waiter.C:
		case <-deadline.C:
		}
		e.drain()
		if !e.runTask(task{op: func(time.Time, Shard) Result { e.checkPending(); return Result{} }}) {
			return
		}
		if p := e.nextDeadline(); p != nil {
			deadline.Reset(max(p.deadline.Sub(e.rt.cfg.Now()), time.Millisecond))
		}
	}
}

// load replays the partition from its log start up to the high watermark, and returns
// once the high watermark has reached the log end (nothing uncommitted left), or false
// when stopped first.
func (e *executor) load() (int, bool) {
	offset := e.log.State().LogStartOffset
	records := 0
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		if e.stopped() {
			return records, false
		}
		st := e.log.State()
		wait := false
		switch {
		case st.Role != replication.Leader || st.LeaderEpoch != e.epoch:
			wait = true // the broker unloads us, or leads again in this epoch
		case offset < st.LogStartOffset:
			offset = st.LogStartOffset
			continue
		case offset < st.HighWatermark:
			res, err := e.log.Read(offset, e.rt.cfg.LoadReadBytes, -1, replication.LeaderOnly)
			if err != nil {
				e.rt.cfg.Logger.Warn("reading a coordinator partition", "topic", e.rt.cfg.Name, "partition", e.partition, "offset", offset, "error", err)
				wait = true
				break
			}
			next, err := decodeBatches(res.Records, func(offset int64, batch BatchInfo, key, value []byte) {
				records++
				if err := e.replayRecord(offset, batch, key, value); err != nil {
					e.rt.cfg.Logger.Warn("skipping a record that cannot be replayed", "topic", e.rt.cfg.Name, "partition", e.partition, "error", err)
				}
			}, func(m Marker) {
				if err := e.replayMarker(m); err != nil {
					e.rt.cfg.Logger.Warn("skipping a transaction marker that cannot be replayed", "topic", e.rt.cfg.Name, "partition", e.partition, "offset", m.Offset, "error", err)
				}
			})
			if err != nil {
				e.rt.cfg.Logger.Error("skipping an unreadable batch", "topic", e.rt.cfg.Name, "partition", e.partition, "offset", offset, "error", err)
			}
			if next > offset {
				offset = next
				continue
			}
			wait = true
		case st.HighWatermark >= st.LogEndOffset:
			return records, true
		default:
			wait = true // the high watermark has not reached the log end yet
		}
		if wait {
			retry.Reset(100 * time.Millisecond)
			select {
			case <-e.stop:
				return records, false
			case <-e.waiter.C:
			case <-retry.C:
			}
		}
	}
}

// replayRecord replays one record: TransactionalShard.ReplayRecord, or Shard.Replay
// for the records of non-transactional batches of other shards. A panic becomes an
// error (the record is skipped).
func (e *executor) replayRecord(offset int64, batch BatchInfo, key, value []byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("coordinator: replay panicked: %v", v)
		}
	}()
	if ts, ok := e.shard.(TransactionalShard); ok {
		return ts.ReplayRecord(offset, batch, key, value)
	}
	if batch.Transactional {
		return fmt.Errorf("coordinator: a transactional batch of producer %d at %d in a partition without transactions", batch.ProducerID, offset)
	}
	return e.shard.Replay(key, value)
}

// replayMarker replays a transaction marker on a TransactionalShard (others skip it),
// with a panic turned into an error.
func (e *executor) replayMarker(m Marker) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("coordinator: marker replay panicked: %v", v)
		}
	}()
	if ts, ok := e.shard.(TransactionalShard); ok {
		return ts.ReplayMarker(m)
	}
	return nil
}

// drain runs the queued tasks in order.
func (e *executor) drain() {
	e.mu.Lock()
	queue := e.queue
	e.queue = nil
	e.mu.Unlock()
	for i, t := range queue {
		if e.stopped() {
			e.failTasks(queue[i:])
			return
		}
		if !e.runTask(t) {
			e.failTasks(queue[i+1:])
			return
		}
	}
}

// runTask runs one task. A panic in the shard is a bug: it is logged, the task's
// request fails with NOT_COORDINATOR and the partition stops serving (its state may be
// inconsistent) until its leadership changes; runTask then reports false.
func (e *executor) runTask(t task) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			e.rt.cfg.Logger.Error("coordinator shard panicked; the partition stops serving", "topic", e.rt.cfg.Name,
				"partition", e.partition, "panic", v, "stack", string(debug.Stack()))
			if t.fail != nil {
				t.fail(ErrNotCoordinator)
			}
			e.loaded = false // Unloaded would call into the broken shard
			e.stopAsync()
			ok = false
		}
	}()
	now := e.rt.cfg.Now()
	if t.timer != nil {
		if e.timers[t.timer.key] != t.timer {
			return true // replaced or cancelled
		}
		delete(e.timers, t.timer.key)
		e.carryOut(now, t.timer.fire(now, e.shard))
		return true
	}
	e.carryOut(now, t.op(now, e.shard))
	return true
}

func (e *executor) failTasks(tasks []task) {
	for _, t := range tasks {
		if t.fail != nil {
			t.fail(ErrNotCoordinator)
		}
	}
}

// carryOut does what res asks: timers, the write, Committed. now is the time the
// shard saw when it produced res: the write's deadline and res's timers count from it,
// so a clock that moves while the shard runs does not stretch them.
func (e *executor) carryOut(now time.Time, res Result) {
	for _, tm := range res.Timers {
		e.setTimer(tm, now)
	}
	if len(res.Records) == 0 && res.Marker == nil {
		if res.Committed != nil {
			e.carryOut(now, res.Committed(now, 0))
		}
		return
	}
	minInsync := e.minInsync()
	var info segment.AppendInfo
	var err error
	switch {
	case e.timedOut >= e.rt.cfg.MaxTimedOutWrites:
		// The high watermark has stood still for a while: refuse rather than hold
		// more (not appended, so applied nowhere; the client retries).
		err = errTooManyTimedOut
	case len(res.Records) == 0:
		m := res.Marker
		info, err = e.log.AppendMarkerAsLeaderInEpoch(EncodeMarker(m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch, now), e.epoch, minInsync, m.TransactionVersion)
		if err == nil {
			res.Committed = e.replayingMarker(Marker{Offset: info.FirstOffset, ProducerID: m.ProducerID,
				ProducerEpoch: m.ProducerEpoch, Commit: m.Commit}, res.Committed)
		}
	case res.Producer != nil:
		p := res.Producer
		info, err = e.log.AppendTransactionalAsCoordinator(EncodeTransactionalBatch(res.Records, p.ID, p.Epoch, now), e.epoch, minInsync, p.Verify, p.Guard)
	default:
		info, err = e.log.AppendAsLeaderInEpoch(EncodeBatch(res.Records, now), e.epoch, minInsync)
	}
	if err != nil {
		code := translateAppendError(err)
		if code == codeUnknownServerError {
			e.rt.cfg.Logger.Error("coordinator write failed", "topic", e.rt.cfg.Name, "partition", e.partition, "error", err)
		}
		if res.Committed != nil {
			e.carryOut(now, res.Committed(now, code))
		}
		return
	}
	committed := res.Committed
	if committed == nil {
		committed = func(time.Time, int16) Result { return Result{} }
	}
	// checkPending, which runs after every task, completes it.
	e.pending = append(e.pending, pendingWrite{end: info.LastOffset + 1, deadline: now.Add(e.rt.cfg.WriteTimeout),
		minInsync: minInsync, committed: committed, timedOut: res.TimedOut})
}

// replayingMarker wraps the Committed of a marker write: once committed, the marker is
// replayed on the shard as a load would, then committed runs.
func (e *executor) replayingMarker(m Marker, committed func(time.Time, int16) Result) func(time.Time, int16) Result {
	return func(now time.Time, code int16) Result {
		if code == 0 {
			if ts, ok := e.shard.(TransactionalShard); ok {
				if err := ts.ReplayMarker(m); err != nil {
					e.rt.cfg.Logger.Warn("replaying a written transaction marker", "topic", e.rt.cfg.Name, "partition", e.partition, "error", err)
				}
			}
		}
		if committed == nil {
			return Result{}
		}
		return committed(now, code)
	}
}

// checkPending completes, in order, the writes the high watermark has passed
// (Committed with 0, also for a write already answered by TimedOut), answers through
// TimedOut those still short of it at their deadline, and fails with NOT_COORDINATOR
// those that can no longer complete (leadership moved, or the log failed: Kafka maps
// KAFKA_STORAGE_ERROR to NOT_COORDINATOR; the new leader's load decides what they
// became). A write stays pending after its TimedOut so that, if it lands, the
// shard applies it in log order, after every write before it and before every write
// after it, as a load would.
func (e *executor) checkPending() {
	for len(e.pending) > 0 {
		st := e.log.State()
		p := e.pending[0]
		now := e.rt.cfg.Now()
		// The acks=all rule, plus the runtime's own fence: the log's leader epoch must
		// still be the one this executor loaded at (a new epoch is a new load).
		switch o := replication.AcksAllOutcome(st.WakeState(), p.end, p.minInsync); {
		case o == replication.OutcomeNotLeader || o == replication.OutcomeStorageError || st.LeaderEpoch != e.epoch:
			e.pending = e.pending[1:]
			if p.answered {
				e.timedOut--
			}
			e.carryOut(now, p.committed(now, codeNotCoordinator))
		case o != replication.OutcomeWaiting:
			e.pending = e.pending[1:]
			if p.answered {
				e.timedOut--
			}
			if o == replication.OutcomeNotEnoughReplicasAfterAppend && !p.answered {
				// NOT_ENOUGH_REPLICAS_AFTER_APPEND: the client gets the error, but the
				// batch is committed, so the shard applies it.
				e.answer(&p, now)
			}
			e.carryOut(now, p.committed(now, 0))
		default:
			e.answerTimedOut(now)
			return
		}
	}
}

// answerTimedOut runs TimedOut, in order, for the pending writes whose deadline has
// passed (COORDINATOR_NOT_AVAILABLE, Kafka's translation of REQUEST_TIMED_OUT). It
// walks by index: a TimedOut's own writes are appended behind.
func (e *executor) answerTimedOut(now time.Time) {
	for i := 0; i < len(e.pending); i++ {
		p := &e.pending[i]
		if p.answered {
			continue
		}
		if now.Before(p.deadline) {
			return
		}
		e.timedOut++
		e.answer(p, now)
	}
}

// answer marks p answered and carries out its TimedOut, if any.
func (e *executor) answer(p *pendingWrite, now time.Time) {
	p.answered = true
	if p.timedOut != nil {
		res := p.timedOut(now, codeCoordinatorNotAvailable)
		e.carryOut(now, res)
	}
}

// nextDeadline is the first pending write not yet answered, or nil.
func (e *executor) nextDeadline() *pendingWrite {
	for i := range e.pending {
		if !e.pending[i].answered {
			return &e.pending[i]
		}
	}
	return nil
}

func (e *executor) setTimer(tm Timer, now time.Time) {
	if old := e.timers[tm.Key]; old != nil {
		old.t.Stop()
		delete(e.timers, tm.Key)
	}
	if tm.At.IsZero() || tm.Fire == nil {
		return
	}
	entry := &timerEntry{key: tm.Key, fire: tm.Fire}
	entry.t = time.AfterFunc(max(tm.At.Sub(now), 0), func() { _ = e.submit(task{timer: entry}) })
	e.timers[tm.Key] = entry
}

// shutdown runs on the executor goroutine when it stops: pending writes and the shard's
// waiting requests are answered NOT_COORDINATOR, queued ops fail, timers stop.
func (e *executor) shutdown() {
	e.stopAsync()
	for _, t := range e.timers {
		t.t.Stop()
	}
	e.timers = nil
	now := e.rt.cfg.Now()
	for _, p := range e.pending {
		e.discard(p.committed(now, codeNotCoordinator), now)
	}
	e.pending, e.timedOut = nil, 0
	if e.loaded {
		func() {
			defer func() {
				if v := recover(); v != nil {
					e.rt.cfg.Logger.Error("coordinator shard panicked while unloading", "topic", e.rt.cfg.Name, "partition", e.partition, "panic", v)
				}
			}()
			e.discard(e.shard.Unloaded(now), now)
		}()
	}
	e.mu.Lock()
	queue := e.queue
	e.queue = nil
	e.mu.Unlock()
	e.failTasks(queue)
}

// discard follows a Result without writing: its Committed callbacks get NOT_COORDINATOR.
func (e *executor) discard(res Result, now time.Time) {
	for res.Committed != nil {
		res = res.Committed(now, codeNotCoordinator)
	}
}
