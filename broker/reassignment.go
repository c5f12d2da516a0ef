package broker

import (
	"context"

	"github.com/petrel-broker/petrel/metadata"
)

// completeReassignments is a controller duty: every reassignment whose adding
// replicas have all joined the ISR takes its last step (replicas = RAR, the leader
// moved into RAR if needed, removed replicas out). It reads only the image, so a new
// controller carries on any reassignment the previous one started.
func (b *Broker) completeReassignments(ctx context.Context) {
	records := metadata.CompleteReassignmentRecords(b.Image())
	if len(records) == 0 {
		return
	}
	if _, err := b.propose(ctx, records...); err != nil {
		b.logger.Warn("completing reassignments", "partitions", len(records), "error", err)
		return
	}
	b.logger.Info("reassignments completed", "partitions", len(records))
}
