package broker

import "time"

// shutdownPhases times the steps of a clean shutdown for its closing log line
// ("broker shut down controlled_shutdown=… drain=… replicas_closed=… raft_closed=…"),
// which is how the stop row of docs/bench/partitions.sh is broken down.
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
