package controller

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// duties runs at every tick of an active term, on the controller goroutine: it writes
// the cluster id once, fences brokers whose session expired, finishes controlled
// shutdowns a previous controller left, completes reassignments that are ready and
// rebalances leaders when a check is due.
func (c *Controller) duties() {
	ctx, cancel := c.bounded(context.Background(), 5*time.Second)
	defer cancel()
	if !c.ensureClusterID() {
		return
	}
	im := c.cfg.Image()
	for _, id := range c.sessions.expired(im, time.Now(), c.cfg.SessionTimeout) {
		records := metadata.FenceBrokerRecords(c.cfg.Image(), id, c.cfg.UncleanAllowed(c.cfg.Image()))
		if len(records) == 0 {
			continue
		}
		before := c.cfg.Image()
		if _, err := c.propose(ctx, records...); err != nil {
			c.log.Warn("fencing broker", "broker", id, "error", err)
			continue
		}
		c.LogUncleanElections(before, records)
		if c.absentSinceStart(id) {
			c.notStarted.fenced(id, im.Brokers[id].Epoch, time.Now())
			c.log.Info("broker not started yet: its session expired, fenced until it registers; removed from every ISR, leaders re-elected",
				"broker", id, "partition_changes", len(records)-1)
			continue
		}
		c.log.Warn("broker session expired: fenced, removed from every ISR, leaders re-elected", "broker", id,
			"partition_changes", len(records)-1)
	}
	c.warnNotStarted(c.cfg.Image(), time.Now())
	c.finishFencedBrokers(c.cfg.Image())
	c.completeReassignments(ctx)
	c.maybeRebalanceLeaders(ctx, time.Now())
}

// completeReassignments is a controller duty: every reassignment whose adding
// replicas have all joined the ISR takes its last step (replicas = RAR, the leader
// moved into RAR if needed, removed replicas out). It reads only the image, so a new
// controller carries on any reassignment the previous one started.
func (c *Controller) completeReassignments(ctx context.Context) {
	records := metadata.CompleteReassignmentRecords(c.cfg.Image())
	if len(records) == 0 {
		return
	}
	if _, err := c.propose(ctx, records...); err != nil {
		c.log.Warn("completing reassignments", "partitions", len(records), "error", err)
		return
	}
	c.log.Info("reassignments completed", "partitions", len(records))
}

// LogUncleanElections logs every leader records elect from outside the ISR of before:
// the records the old ISR had above the new leader's log end offset may be lost, and
// the new leader's epoch start (logged by the partition when it leads) says from where.
func (c *Controller) LogUncleanElections(before *metadata.Image, records []metadata.Record) {
	if c.elrEnabled(before) {
		// As written: an eligible leader replica may have replaced the unclean choice.
		records = metadata.WithELR(before, records, c.elrInputs(before))
	}
	for _, r := range records {
		ch, ok := r.(metadata.PartitionChangeRecord)
		if !ok || !ch.Unclean || ch.Leader == nil {
			continue
		}
		t := before.TopicByID(ch.TopicID)
		if t == nil {
			continue
		}
		p := t.Partitions[ch.PartitionID]
		c.log.Warn("UNCLEAN leader election: records committed by the old ISR but missing on the new leader will be lost",
			"topic", t.Name, "partition", p.ID, "new_leader", *ch.Leader, "old_isr", p.ISR, "old_leader_epoch", p.LeaderEpoch)
	}
}
