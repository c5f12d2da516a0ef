package broker

// Automatic leader rebalance (auto.leader.rebalance.enable): every
// leader.imbalance.check.interval.seconds the controller finds each broker whose share
// of preferred partitions (those whose first replica it is) that it does not lead
// exceeds leader.imbalance.per.broker.percentage, and runs preferred elections for
// those of them whose preferred replica is in the ISR (metadata.ImbalancedPartitions).
// The first check of a term comes one interval after it starts. Kafka's KRaft
// controller ignores the percentage; Petrel honours it, as the ZooKeeper-era controller
// did.

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// leaderRebalance is the controller's rebalance schedule. term and next are used only
// on the controller goroutine.
type leaderRebalance struct {
	term   uint64    // the controller term the schedule belongs to
	next   time.Time // the next check
	checks atomic.Uint64
}

// LeaderRebalanceChecks returns how many automatic leader-balance checks this node has
// run as controller (for tests and logs).
func (b *Broker) LeaderRebalanceChecks() uint64 { return b.rebalance.checks.Load() }

// maybeRebalanceLeaders runs one balance check when it is due. It runs on the controller
// goroutine.
func (b *Broker) maybeRebalanceLeaders(ctx context.Context, now time.Time) {
	if !b.cfg.boolValue("auto.leader.rebalance.enable") {
		return
	}
	interval := time.Duration(b.cfg.int64Value("leader.imbalance.check.interval.seconds")) * time.Second
	r := &b.rebalance
	if term := b.ControllerEpoch(); term != r.term {
		r.term, r.next = term, now.Add(interval)
		return
	}
	if now.Before(r.next) {
		return
	}
	r.next = now.Add(interval)
	defer r.checks.Add(1)
	percentage := int(b.cfg.int64Value("leader.imbalance.per.broker.percentage"))
	candidates := metadata.ImbalancedPartitions(b.Image(), percentage)
	if len(candidates) > maxRecordsPerUserOp {
		candidates = candidates[:maxRecordsPerUserOp] // the rest at the next check
	}
	if len(candidates) == 0 {
		return
	}
	var records []metadata.Record
	im := b.Image()
	for _, tp := range candidates {
		if change, err := planElection(im, tp, electionPreferred); err == nil {
			records = append(records, change)
		} else if !errors.Is(err, metadata.ErrElectionNotNeeded) {
			b.logger.Debug("automatic rebalance skips a partition", "topic", tp.Topic, "partition", tp.Partition, "error", err)
		}
	}
	if len(records) == 0 {
		return
	}
	if _, err := b.ctrl.Propose(ctx, records...); err != nil {
		b.logger.Warn("automatic leader rebalance", "error", err)
		return
	}
	b.logger.Info("automatic leader rebalance: preferred leaders elected", "partitions", len(records),
		"imbalance_percentage", percentage)
}
