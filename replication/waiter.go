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
	p.watchers[w] = struct{}{}
	p.mu.Unlock()
}

// Unwatch removes w.
func (p *Partition) Unwatch(w *Waiter) {
	p.mu.Lock()
	delete(p.watchers, w)
	p.mu.Unlock()
}

func (p *Partition) notifyLocked() {
	for w := range p.watchers {
		w.Wake()
	}
}
