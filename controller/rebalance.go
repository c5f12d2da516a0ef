package controller

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
	"fmt"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// Rebalance configures the automatic leader rebalance.
type Rebalance struct {
	// Enabled is auto.leader.rebalance.enable.
	Enabled bool
	// Interval is leader.imbalance.check.interval.seconds.
	Interval time.Duration
	// ImbalancePercentage is leader.imbalance.per.broker.percentage.
	ImbalancePercentage int
	// MaxRecords bounds the elections of one check, one entry (Kafka's
	// MAX_RECORDS_PER_USER_OP); the rest wait for the next check.
	MaxRecords int
}

// leaderRebalance is the controller's rebalance schedule. term and next are used only
// on the controller goroutine.
type leaderRebalance struct {
	term   uint64    // the controller term the schedule belongs to
	next   time.Time // the next check
	checks atomic.Uint64
}

// LeaderRebalanceChecks returns how many automatic leader-balance checks this node has
// run as controller (for tests and logs).
func (c *Controller) LeaderRebalanceChecks() uint64 { return c.rebalance.checks.Load() }

// maybeRebalanceLeaders runs one balance check when it is due. It runs on the controller
// goroutine.
func (c *Controller) maybeRebalanceLeaders(ctx context.Context, now time.Time) {
	if !c.cfg.Rebalance.Enabled {
		return
	}
	interval := c.cfg.Rebalance.Interval
	r := &c.rebalance
	if term := c.cfg.Quorum.Term(); term != r.term {
		r.term, r.next = term, now.Add(interval)
		return
	}
	if now.Before(r.next) {
		return
	}
	r.next = now.Add(interval)
	defer r.checks.Add(1)
	percentage := c.cfg.Rebalance.ImbalancePercentage
	candidates := metadata.ImbalancedPartitions(c.cfg.Image(), percentage)
	if limit := c.cfg.Rebalance.MaxRecords; limit > 0 && len(candidates) > limit {
		candidates = candidates[:limit] // the rest at the next check
	}
	if len(candidates) == 0 {
		return
	}
	var records []metadata.Record
	im := c.cfg.Image()
	for _, tp := range candidates {
		if change, err := preferredElection(im, tp); err == nil {
			records = append(records, change)
		} else if !errors.Is(err, metadata.ErrElectionNotNeeded) {
			c.log.Debug("automatic rebalance skips a partition", "topic", tp.Topic, "partition", tp.Partition, "error", err)
		}
	}
	if len(records) == 0 {
		return
	}
	if _, err := c.propose(ctx, records...); err != nil {
		c.log.Warn("automatic leader rebalance", "error", err)
		return
	}
	c.log.Info("automatic leader rebalance: preferred leaders elected", "partitions", len(records),
		"imbalance_percentage", percentage)
}

// preferredElection plans the election of tp's preferred replica.
func preferredElection(im *metadata.Image, tp metadata.TopicPartitionID) (metadata.PartitionChangeRecord, error) {
	t := im.Topic(tp.Topic)
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return metadata.PartitionChangeRecord{}, fmt.Errorf("%w: %s-%d", metadata.ErrUnknownPartition, tp.Topic, tp.Partition)
	}
	return metadata.PreferredLeaderChange(im, t, t.Partitions[tp.Partition])
}
