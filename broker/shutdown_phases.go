package broker

import "time"

// shutdownPhases times the steps of a clean shutdown for its closing log line
// ("broker shut down controlled_shutdown=… drain=… replicas_closed=… raft_closed=…"),
// which is how the stop row of docs/bench/partitions.sh is broken down. controlled_shutdown
// includes a controller's hand-over of the quorum; Raft stops while the replicas close,
// so raft_closed is only what its stop took beyond replicas_closed.
type shutdownPhases struct {
	last time.Time
	kv   []any
}

// newShutdownPhases starts timing at now.
func newShutdownPhases() *shutdownPhases { return &shutdownPhases{last: time.Now()} }

// mark ends the phase called name, started at the previous mark.
func (p *shutdownPhases) mark(name string) {
	now := time.Now()
	p.kv = append(p.kv, name, now.Sub(p.last).Round(time.Millisecond).String())
	p.last = now
}

// fields returns the phases as hclog key/value pairs.
func (p *shutdownPhases) fields() []any { return p.kv }
