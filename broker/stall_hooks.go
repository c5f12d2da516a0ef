package broker

import "sync/atomic"

// stallHooks are test seams that make a broker busy: each, when set, runs (and may
// block) before a unit of metadata work. Production code never sets them.
type stallHooks struct {
	reconcile    atomic.Pointer[func()] // before each reconciliation of an image
	controllerOp atomic.Pointer[func()] // before each controller decision
}

// runStallHook calls the hook in p, if one is set.
func runStallHook(p *atomic.Pointer[func()]) {
	if f := p.Load(); f != nil {
		(*f)()
	}
}
