package replication

import (
	"slices"

	"github.com/petrel-broker/petrel/segment"
)

// PrepareClean starts a cleaning pass of the log (segment.Log.PrepareClean) with what
// the partition knows of its producers: every active producer's last batch survives,
// empty if need be, and the aborted transactions' data is discarded. Build the plan
// without the lock, then CommitClean it.
func (p *Partition) PrepareClean(opts segment.CleanOptions) (*segment.CleanPlan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return nil, ErrPartitionStopped
	}
	opts.Producers = p.producers.lastRecords()
	opts.AbortedTxns = p.producers.Aborted()
	return p.log.PrepareClean(opts)
}

// CommitClean swaps a built plan in (segment.Log.CommitClean) and forgets the aborted
// transactions whose markers the pass removed: a read_committed fetch must not list a
// transaction whose marker is gone (the consumer would take the producer's later
// transactions for aborted ones).
func (p *Partition) CommitClean(plan *segment.CleanPlan) (segment.CleanResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		plan.Abandon()
		return segment.CleanResult{}, ErrPartitionStopped
	}
	res, err := p.log.CommitClean(plan)
	if err == nil {
		p.producers.forgetAborted(res.DroppedAbortedTxns)
	}
	return res, err
}

// StaleClean reports whether the log changed under a plan (segment.CleanPlan.Stale).
func (p *Partition) StaleClean(plan *segment.CleanPlan) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.role == Stopped || plan.Stale()
}

// lastRecords is the cleaner's view of the active producers
// (segment.CleanOptions.Producers).
func (s *ProducerStates) lastRecords() map[int64]segment.ProducerLastRecord {
	out := make(map[int64]segment.ProducerLastRecord, len(s.entries))
	for id, e := range s.entries {
		out[id] = segment.ProducerLastRecord{LastDataOffset: e.LastOffset(), ProducerEpoch: e.ProducerEpoch}
	}
	return out
}

// forgetAborted drops the aborted transactions whose markers are those of dropped.
func (s *ProducerStates) forgetAborted(dropped []AbortedTxn) {
	if len(dropped) == 0 {
		return
	}
	gone := make(map[int64]bool, len(dropped))
	for _, a := range dropped {
		gone[a.LastOffset] = true
	}
	s.aborted = slices.DeleteFunc(s.aborted, func(a AbortedTxn) bool { return gone[a.LastOffset] })
}
