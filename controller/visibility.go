package controller

import (
	"context"
	"time"
)

// adminVisibilityWait bounds how long an admin answer waits for brokers to apply it
// (broker/admin_visibility.go: read-your-writes across brokers).
const adminVisibilityWait = 5 * time.Second

// AwaitApplied waits until every registered, unfenced broker with a live session has
// applied the metadata log up to offset (its heartbeats report its applied offset), or
// ctx ends, or adminVisibilityWait passes: a broker that does not report in time
// (stuck, partitioned; its session will fence it) holds the answer no longer.
func (c *Controller) AwaitApplied(ctx context.Context, offset uint64) {
	timer := time.NewTimer(adminVisibilityWait)
	defer timer.Stop()
	for {
		reports, laggards := c.sessions.Lagging(c.cfg.Image(), int64(offset), time.Now(), c.cfg.SessionTimeout)
		if laggards == 0 {
			return
		}
		select {
		case <-reports:
		case <-timer.C:
			c.log.Debug("answering an admin change before every broker applied it", "offset", offset, "brokers_behind", laggards)
			return
		case <-ctx.Done():
			return
		case <-c.cfg.Stop:
			return
		}
	}
}
