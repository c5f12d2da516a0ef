package controller

// Eligible leader replicas (KIP-966): every entry the controller writes passes through
// metadata.WithELR while eligible.leader.replicas.version is at least 1 (metadata/elr.go
// and elr_last_known.go hold the rules); a registration after an unclean shutdown takes
// the broker out of every ELR, and its unfencing elects it where it is the partition's
// last known leader with the ISR and ELR empty.

import (
	"context"
	"fmt"
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
	var fromELR, lastKnown electionNotes
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
			fromELR.add(t.Name, pc.PartitionID, *pc.Leader)
		case pc.Unclean && p.Leader == -1 && len(p.ISR) == 0 && len(p.ELR) == 0 && slices.Equal(p.LastKnownELR, []int32{*pc.Leader}):
			lastKnown.add(t.Name, pc.PartitionID, *pc.Leader)
		}
	}
	// One line per decision, not per partition: a whole-cluster start elects leaders for
	// every partition at once.
	if fromELR.count > 0 {
		c.log.Info("leaders elected from the eligible leader replicas (clean: each left the ISR while the ISR was below min.insync.replicas)",
			"partitions", fromELR.count, "first", fromELR.first)
	}
	if lastKnown.count > 0 {
		c.log.Warn("last known leaders elected (KIP-966 balanced recovery): the ISR and ELR were empty since their unclean shutdown; "+
			"records a leader had not flushed before it may be lost",
			"partitions", lastKnown.count, "first", lastKnown.first)
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

// electionNotes gathers the partitions of one kind of election in a decision for one
// log line: how many, and the first few as topic-partition@leader.
type electionNotes struct {
	count int
	first []string
}

// maxElectionNotes is how many partitions an election log line names.
const maxElectionNotes = 20

func (n *electionNotes) add(topic string, partition, leader int32) {
	n.count++
	if len(n.first) < maxElectionNotes {
		n.first = append(n.first, fmt.Sprintf("%s-%d@%d", topic, partition, leader))
	}
}
