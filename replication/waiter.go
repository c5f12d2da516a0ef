package replication

// Waiter is woken when a watched partition's high watermark or log end offset moves or
// its role changes. Its channel has room for one wake-up; wake-ups coalesce.
type Waiter struct {
	C chan struct{}
}

// NewWaiter returns a waiter with an empty channel.
func NewWaiter() *Waiter { return &Waiter{C: make(chan struct{}, 1)} }

// Wake queues a wake-up unless one is already pending.
func (w *Waiter) Wake() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// Watch adds w to the partition's waiters.
func (p *Partition) Watch(w *Waiter) {
	p.mu.Lock()
	if p.watchers == nil { // allocated on first use: most replicas never have a waiter
		p.watchers = map[*Waiter]struct{}{}
	}
	p.watchers[w] = struct{}{}
	p.mu.Unlock()
}

// Unwatch removes w.
func (p *Partition) Unwatch(w *Waiter) {
	p.mu.Lock()
	delete(p.watchers, w)
	p.mu.Unlock()
}

// LeaderHighWatermark returns the high watermark while this replica leads and -1
// otherwise, without taking the partition lock: a produce waiting for acks=all checks it
// on every wake-up, and the lock may be held by an append's write. It is current as of
// the last wake-up of the partition's waiters.
func (p *Partition) LeaderHighWatermark() int64 { return p.leaderHighWatermarkNow.Load() }

func (p *Partition) notifyLocked() {
	if p.role == Leader {
		p.leaderHighWatermarkNow.Store(p.highWatermark)
	} else {
		p.leaderHighWatermarkNow.Store(-1)
	}
	for w := range p.watchers {
		w.Wake()
	}
}
