package shareleader

import "time"

// unloadIdle runs until the manager closes: every half IdleTimeout it unloads the
// share partitions idle for IdleTimeout (sharePartition.dropIfIdle) and forgets the
// metrics of the share groups left without a loaded share partition. Memory is so
// bounded by the share partitions in use, not by every group ever used here: a
// deleted share group's share partitions go within IdleTimeout of its last use.
func (m *Manager) unloadIdle() {
	t := time.NewTicker(max(m.cfg.IdleTimeout/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.sweepIdle()
		}
	}
}

// sweepIdle is one pass of unloadIdle.
func (m *Manager) sweepIdle() {
	m.mu.Lock()
	held := make([]*sharePartition, 0, len(m.partitions))
	for _, sp := range m.partitions {
		held = append(held, sp)
	}
	m.mu.Unlock()
	cutoff := m.nowMs() - m.cfg.IdleTimeout.Milliseconds()
	for _, sp := range held {
		select {
		case <-sp.loaded:
		default:
			continue // loading
		}
		if sp.dropIfIdle(cutoff) {
			m.forget(sp)
		}
	}
	m.mu.Lock() // no share partition is added while the metrics are pruned
	defer m.mu.Unlock()
	loaded := map[string]bool{}
	for k := range m.partitions {
		loaded[k.GroupID] = true
	}
	m.metrics.forgetExcept(loaded)
}
