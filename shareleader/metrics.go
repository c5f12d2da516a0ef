package shareleader

import (
	"sort"
	"sync"

	"github.com/petrel-broker/petrel/share"
)

// Metrics counts, per share group, what the share partitions led here did: records
// acquired, redelivered (acquired again, delivery count above 1) and archived when a
// lock expired at the delivery-count limit. Safe for concurrent use.
type Metrics struct {
	mu     sync.Mutex
	groups map[string]*GroupCounts // guarded by mu
}

// GroupCounts are one share group's counters since the broker started, or since the
// group's share partitions were last unloaded here (Config.IdleTimeout).
type GroupCounts struct {
	Acquired    int64
	Redelivered int64
	// ArchivedAtDeliveryLimit counts records archived because their lock expired on
	// their last permitted delivery (group.share.delivery.count.limit).
	ArchivedAtDeliveryLimit int64
}

// GroupSample is one share group's counters and its in-flight records here.
type GroupSample struct {
	GroupID string
	GroupCounts
	// InFlight counts the in-flight records (SPEO - SPSO + 1) of the group's share
	// partitions led here.
	InFlight int64
}

func newMetrics() *Metrics { return &Metrics{groups: map[string]*GroupCounts{}} }

func (m *Metrics) group(id string) *GroupCounts {
	g := m.groups[id]
	if g == nil {
		g = &GroupCounts{}
		m.groups[id] = g
	}
	return g
}

// forgetExcept drops the counters of the share groups not in keep (no share
// partition loaded here any more).
func (m *Metrics) forgetExcept(keep map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.groups {
		if !keep[id] {
			delete(m.groups, id)
		}
	}
}

// acquired counts an acquisition's records.
func (m *Metrics) acquired(group string, out []share.AcquiredRecords) {
	if len(out) == 0 {
		return
	}
	m.mu.Lock()
	g := m.group(group)
	for _, r := range out {
		n := r.LastOffset - r.FirstOffset + 1
		g.Acquired += n
		if r.DeliveryCount > 1 {
			g.Redelivered += n
		}
	}
	m.mu.Unlock()
}

// expiring counts the records whose lock expires at nowMs on their last permitted
// delivery: Expire archives them. Called before Expire.
func (m *Metrics) expiring(group string, inFlight []share.InFlight, nowMs int64, cfg share.Config) {
	limit := cfg.DeliveryCountLimit
	if limit <= 0 {
		limit = share.DefaultDeliveryCountLimit
	}
	var n int64
	for _, r := range inFlight {
		if r.State == share.Acquired && r.DeadlineMs <= nowMs && r.DeliveryCount >= limit {
			n += r.LastOffset - r.FirstOffset + 1
		}
	}
	if n == 0 {
		return
	}
	m.mu.Lock()
	m.group(group).ArchivedAtDeliveryLimit += n
	m.mu.Unlock()
}

// Samples returns every share group's counters with the in-flight records of its
// share partitions loaded in mgr, by group id.
func (mgr *Manager) Samples() []GroupSample {
	inFlight := map[string]int64{}
	mgr.mu.Lock()
	parts := make([]*sharePartition, 0, len(mgr.partitions))
	for _, sp := range mgr.partitions {
		parts = append(parts, sp)
	}
	mgr.mu.Unlock()
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.p != nil {
			inFlight[sp.key.GroupID] += sp.p.InFlightRecords()
		}
		sp.mu.Unlock()
	}
	m := mgr.metrics
	m.mu.Lock()
	out := make([]GroupSample, 0, len(m.groups))
	for id, g := range m.groups {
		out = append(out, GroupSample{GroupID: id, GroupCounts: *g, InFlight: inFlight[id]})
		delete(inFlight, id)
	}
	m.mu.Unlock()
	for id, n := range inFlight {
		out = append(out, GroupSample{GroupID: id, InFlight: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupID < out[j].GroupID })
	return out
}
