package controller

// Eligible leader replicas (KIP-966): every entry the controller writes passes through
// metadata.WithELR while eligible.leader.replicas.version is at least 1 (metadata/elr.go
// and elr_last_known.go hold the rules); a registration after an unclean shutdown takes
// the broker out of every ELR, and its unfencing elects it where it is the partition's
// last known leader with the ISR and ELR empty.

import (
	"context"
	"slices"

	"github.com/petrel-broker/petrel/metadata"
)

// elrNotes carries, from a decision's plan to runOp, the brokers the plan found to have
// shut down uncleanly. The plan runs on the controller goroutine before runOp reads it.
type elrNotes struct {
	uncleanShutdown []int32
}

type elrNotesKey struct{}

// withELRNotes returns ctx carrying fresh notes for one decision.
func withELRNotes(ctx context.Context) (context.Context, *elrNotes) {
	n := &elrNotes{}
	return context.WithValue(ctx, elrNotesKey{}, n), n
}

// elrEnabled reports whether the ELR rules apply to entries planned against im.
func (c *Controller) elrEnabled(im *metadata.Image) bool {
	if c.cfg.ELREnabled != nil {
		return c.cfg.ELREnabled(im)
	}
	return metadata.ELREnabled(im)
}

// withELR rewrites an entry planned against im by the ELR rules (none while they are
// off) and logs the leaders it elects from an ELR or as a last known leader.
func (c *Controller) withELR(ctx context.Context, im *metadata.Image, records []metadata.Record) []metadata.Record {
	if !c.elrEnabled(im) {
		return records
	}
	in := c.elrInputs(im)
	if n, ok := ctx.Value(elrNotesKey{}).(*elrNotes); ok {
		in.UncleanShutdown = n.uncleanShutdown
	}
	out := metadata.WithELR(im, records, in)
	for _, r := range out {
		pc, ok := r.(metadata.PartitionChangeRecord)
		if !ok || pc.Leader == nil || *pc.Leader < 0 {
			continue
		}
		t := im.TopicByID(pc.TopicID)
		if t == nil || int(pc.PartitionID) >= len(t.Partitions) {
			continue
		}
		p := t.Partitions[pc.PartitionID]
		switch {
		case slices.Contains(p.ELR, *pc.Leader) && !slices.Contains(p.ISR, *pc.Leader):
			c.log.Info("leader elected from the eligible leader replicas (clean: it left the ISR while the ISR was below min.insync.replicas)",
				"topic", t.Name, "partition", pc.PartitionID, "leader", *pc.Leader, "elr", p.ELR)
		case pc.Unclean && p.Leader == -1 && len(p.ISR) == 0 && len(p.ELR) == 0 && slices.Equal(p.LastKnownELR, []int32{*pc.Leader}):
			c.log.Warn("last known leader elected (KIP-966 balanced recovery): the ISR and ELR are empty since its unclean shutdown; "+
				"records it had not flushed before it may be lost",
				"topic", t.Name, "partition", pc.PartitionID, "leader", *pc.Leader)
		}
	}
	return out
}

// elrInputs are WithELR's inputs from the topics' configs in im.
func (c *Controller) elrInputs(im *metadata.Image) metadata.ELRInputs {
	in := metadata.ELRInputs{MinISR: func(string) int { return 1 }}
	if c.cfg.MinISR != nil {
		in.MinISR = c.cfg.MinISR(im)
	}
	if c.cfg.UncleanAllowed != nil {
		in.Unclean = c.cfg.UncleanAllowed(im)
	}
	return in
}

// noteUncleanShutdown records, for the decision running with ctx, that broker id
// registered after an unclean shutdown: its PreviousBrokerEpoch (the epoch its clean
// shutdown recorded, -1 without one) is not the epoch it is registered at.
func noteUncleanShutdown(ctx context.Context, id int32) {
	if n, ok := ctx.Value(elrNotesKey{}).(*elrNotes); ok {
		n.uncleanShutdown = append(n.uncleanShutdown, id)
	}
}
