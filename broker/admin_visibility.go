package broker

import (
	"context"
	"time"
)

// Read-your-writes across brokers. Once an admin change is answered, every live
// broker's answers reflect it: the controller answers an admin request only once every
// registered, unfenced broker with a live session has applied the metadata log up to the
// change (its heartbeats report its applied offset, and a broker sends one as soon as it
// applies something new, at most every appliedReportGap). A broker that does not report
// in time (stuck, partitioned; its session will fence it) holds the answer at most
// adminVisibilityWait. The APIs that wait say so in their file (apiOpts.adminChange).
// Kafka answers before other brokers have the change, so clients and test suites
// written against it sleep or retry; with Petrel they need not.

// appliedReportGap is the shortest time between two heartbeats that report a newly
// applied metadata offset.
const appliedReportGap = 10 * time.Millisecond

// adminVisibilityWait bounds how long an admin answer waits for brokers to apply it.
const adminVisibilityWait = 5 * time.Second

// awaitAppliedEverywhere waits, on the controller, until every live broker has applied
// the metadata log up to offset, or ctx ends, or adminVisibilityWait passes.
func (b *Broker) awaitAppliedEverywhere(ctx context.Context, offset uint64) {
	timer := time.NewTimer(adminVisibilityWait)
	defer timer.Stop()
	for {
		reports, laggards := b.ctrl.Sessions().Lagging(b.Image(), int64(offset), time.Now(), b.cfg.durationMs("broker.session.timeout.ms"))
		if laggards == 0 {
			return
		}
		select {
		case <-reports:
		case <-timer.C:
			b.logger.Debug("answering an admin change before every broker applied it", "offset", offset, "brokers_behind", laggards)
			return
		case <-ctx.Done():
			return
		case <-b.stop:
			return
		}
	}
}
