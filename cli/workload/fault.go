package workload

import (
	"context"
	"time"
)

// faults starts the fault hook at its moments, one fault at a time, in the order of
// Config.Faults. Its methods are called from Run's goroutine only; the hook itself runs
// on a goroutine of its own and reports on results.
type faults struct {
	r       *runner
	start   time.Time
	next    int              // index of the next fault to start
	running bool             // a fault has started and not reported
	results chan FaultResult // the running fault's result (buffered: 1)
	ran     []FaultResult    // faults that ran, in order
}

// startDue starts the next fault if it is due and none is running.
func (f *faults) startDue(ctx context.Context, fraction float64, elapsed time.Duration) {
	if f.running || f.next >= len(f.r.cfg.Faults) || ctx.Err() != nil {
		return
	}
	p := f.r.cfg.Faults[f.next]
	if (p.Fraction > 0 && fraction < p.Fraction) || (p.Fraction == 0 && elapsed < p.After) {
		return
	}
	if f.results == nil {
		f.results = make(chan FaultResult, 1)
	}
	f.next++
	f.running = true
	n := f.next
	go func() {
		began := time.Now()
		out, err := f.r.cfg.Fault(ctx, n)
		f.results <- FaultResult{N: n, Point: p, At: began.Sub(f.start), Took: time.Since(began), Output: out, Err: err}
	}()
}

// done records a finished fault.
func (f *faults) done(res FaultResult) {
	f.running = false
	f.ran = append(f.ran, res)
	if f.r.cfg.OnFault != nil {
		f.r.cfg.OnFault(res)
	}
}

// finish waits for a running fault (its hook is bounded by its own timeout and by the
// run's context) and returns the faults that ran and the number never started.
func (f *faults) finish(r *runner) ([]FaultResult, int) {
	if f.running {
		f.done(<-f.results)
	}
	return f.ran, len(r.cfg.Faults) - f.next
}
