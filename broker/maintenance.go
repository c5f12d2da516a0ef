package broker

import (
	"time"

	"github.com/petrel-broker/petrel/segment"
)

// maintenanceLoop checkpoints offsets, enforces retention and applies flush.ms.
func (pm *partitionManager) maintenanceLoop() {
	cfg := &pm.b.cfg
	hwTick := time.NewTicker(cfg.durationMs("replica.high.watermark.checkpoint.interval.ms"))
	retentionTick := time.NewTicker(cfg.durationMs("log.retention.check.interval.ms"))
	flushTick := time.NewTicker(time.Second)
	lagMax := cfg.durationMs("replica.lag.time.max.ms")
	isrTick := time.NewTicker(max(lagMax/2, 10*time.Millisecond))
	defer isrTick.Stop()
	defer hwTick.Stop()
	defer retentionTick.Stop()
	defer flushTick.Stop()
	for {
		select {
		case <-pm.b.stop:
			return
		case <-hwTick.C:
			if err := pm.checkpoint(); err != nil {
				pm.b.logger.Warn("writing checkpoints", "error", err)
			}
		case now := <-isrTick.C:
			for _, lp := range pm.all() {
				lp.MaybeShrinkISR(now, lagMax)
			}
		case <-retentionTick.C:
			pm.enforceRetention()
		case now := <-flushTick.C:
			pm.deleteDue(now)
			for _, lp := range pm.all() {
				lp.WithLog(func(l *segment.Log) error { return l.MaybeFlush() })
			}
		}
	}
}

func (pm *partitionManager) enforceRetention() {
	for _, lp := range pm.all() {
		var res segment.RetentionResult
		hw := lp.State().HighWatermark
		err := lp.WithLog(func(l *segment.Log) (err error) {
			res, err = l.EnforceRetention(hw)
			return err
		})
		if err != nil {
			pm.b.logger.Warn("retention", "topic", lp.Topic, "partition", lp.ID, "error", err)
		} else if len(res.DeletedSegments) > 0 {
			pm.b.logger.Info("retention deleted segments", "topic", lp.Topic, "partition", lp.ID,
				"segments", len(res.DeletedSegments), "bytes", res.DeletedBytes, "log_start_offset", res.LogStartOffset)
		}
	}
}
