package broker

import (
	"errors"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// producerExpirationCheckInterval is Kafka's producer.id.expiration.check.interval.ms.
const producerExpirationCheckInterval = 10 * time.Minute

// maintenanceLoop checkpoints offsets, enforces retention and applies flush.ms.
func (pm *partitionManager) maintenanceLoop() {
	cfg := &pm.b.cfg
	hwTick := time.NewTicker(cfg.durationMs("replica.high.watermark.checkpoint.interval.ms"))
	retentionTick := time.NewTicker(cfg.durationMs("log.retention.check.interval.ms"))
	flushTick := time.NewTicker(time.Second)
	lagMax := cfg.durationMs("replica.lag.time.max.ms")
	isrTick := time.NewTicker(max(lagMax/2, 10*time.Millisecond))
	defer isrTick.Stop()
	// Kafka's producer.id.expiration.check.interval.ms is 600000; a shorter expiration
	// is checked as often as it lasts.
	// producer.id.expiration.ms may change at run time: the next check follows it.
	expiryEvery := func() time.Duration {
		return min(producerExpirationCheckInterval, max(time.Duration(pm.b.dynamicBrokerInt64("producer.id.expiration.ms"))*time.Millisecond, time.Second))
	}
	expiryTick := time.NewTimer(expiryEvery())
	defer expiryTick.Stop()
	defer hwTick.Stop()
	defer retentionTick.Stop()
	defer flushTick.Stop()
	for {
		select {
		case <-pm.b.stop:
			return
		case <-hwTick.C:
			if pm.b.offline.dirFailure() != nil {
				continue // nothing is written to an offline log directory
			}
			if err := pm.checkpoint(); err != nil {
				// Kafka's rule: a checkpoint that cannot be written takes the log
				// directory offline (offline_replicas.go).
				pm.failLogDir(fmt.Errorf("writing checkpoints: %w", err))
			}
		case now := <-isrTick.C:
			for i, lp := range pm.all() {
				if pm.stopping(i) {
					return
				}
				lp.MaybeShrinkISR(now, lagMax)
			}
		case <-retentionTick.C:
			pm.enforceRetention()
		case now := <-expiryTick.C:
			pm.expireProducers(now)
			expiryTick.Reset(expiryEvery())
		case now := <-flushTick.C:
			pm.deleteDue(now)
			for i, lp := range pm.all() {
				if pm.stopping(i) {
					return
				}
				if !lp.LogMaintenanceDue() {
					continue // nothing unflushed under a finite flush.ms, not failed
				}
				err := lp.WithLog(func(l *segment.Log) error {
					if err := l.Failure(); err != nil {
						return err
					}
					return l.MaybeFlush()
				})
				if logFailed(err) {
					pm.recheck() // the reconciler takes it offline (offline_replicas.go)
				}
			}
		}
	}
}

func (pm *partitionManager) enforceRetention() {
	im := pm.b.Image()
	for _, lp := range pm.all() {
		refreshRemoteLogBounds(im, lp)
		res, err := lp.EnforceRetention()
		if errors.Is(err, replication.ErrPartitionStopped) {
			continue
		}
		if err != nil {
			pm.b.logger.Warn("retention", "topic", lp.Topic, "partition", lp.ID, "error", err)
		} else if len(res.DeletedSegments) > 0 {
			pm.b.logger.Info("retention deleted segments", "topic", lp.Topic, "partition", lp.ID,
				"segments", len(res.DeletedSegments), "bytes", res.DeletedBytes, "log_start_offset", res.LogStartOffset)
		}
	}
}

// expireProducers drops idle producers (producer.id.expiration.ms) from every replica.
func (pm *partitionManager) expireProducers(now time.Time) {
	expiration := pm.b.dynamicBrokerInt64("producer.id.expiration.ms")
	for _, lp := range pm.all() {
		if n := lp.ExpireProducers(now.UnixMilli(), expiration); n > 0 {
			pm.b.logger.Debug("expired idle producers", "topic", lp.Topic, "partition", lp.ID, "producers", n)
		}
	}
}

// stopping reports, at every 1,024th replica i of a pass over all of them, whether the
// broker is stopping: a pass over 100,000 replicas takes long enough to hold up the
// drain of a clean shutdown, which waits for this loop.
func (pm *partitionManager) stopping(i int) bool {
	if i%1024 != 0 {
		return false
	}
	select {
	case <-pm.b.stop:
		return true
	default:
		return false
	}
}
