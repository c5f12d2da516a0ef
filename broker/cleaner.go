package broker

import (
	"errors"
	"maps"
	"math"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// logCleaner is Kafka's LogCleaner: log.cleaner.threads goroutines, each repeatedly
// cleaning the compacted partition with the highest dirty ratio above its
// min.cleanable.dirty.ratio (or past max.compaction.lag.ms), and sleeping
// log.cleaner.backoff.ms when none needs it. The algorithm is segment's (CleanPlan);
// this file schedules it, throttles its I/O and keeps cleaner-offset-checkpoint. Each
// pass reads the topic's settings as currently resolved, so a cleanup.policy changed
// at run time applies from the next pass. A partition whose cleaning fails is marked
// uncleanable (logged once) until this broker restarts; the others go on.
//
// The cleaner's own settings are dynamic, as Kafka's (LogCleaner.ReconfigurableConfigs):
// log.cleaner.threads (a supervisor starts threads, and a thread past the count stops
// after its pass), log.cleaner.dedupe.buffer.size (split between the threads, read per
// pass), log.cleaner.io.max.bytes.per.second and log.cleaner.backoff.ms (read per pass
// and per sleep).
type logCleaner struct {
	pm       *partitionManager
	b        *Broker
	logger   hclog.Logger
	path     string
	throttle *segment.IOThrottle
	stop     <-chan struct{}

	// writeMu serialises WriteCheckpoint: threads finish passes at once, and each write
	// goes through one temporary file. Taken before mu, held across the write.
	writeMu     sync.Mutex
	mu          sync.Mutex // a leaf: never held while calling a Partition
	running     int        // cleaner threads running; thread i stops when i >= the wanted count
	firstDirty  map[segment.TopicPartition]int64
	inProgress  map[segment.TopicPartition]bool
	uncleanable map[segment.TopicPartition]string
	passes      int64
}

func newLogCleaner(pm *partitionManager, stop <-chan struct{}) *logCleaner {
	b := pm.b
	c := &logCleaner{pm: pm, b: b, logger: b.logger.Named("cleaner"), path: filepath.Join(pm.dir, segment.CleanerOffsetCheckpointFile),
		throttle: segment.NewIOThrottle(b.dynamicBrokerFloat64("log.cleaner.io.max.bytes.per.second"), stop),
		stop:     stop, inProgress: map[segment.TopicPartition]bool{}, uncleanable: map[segment.TopicPartition]string{}}
	var err error
	if c.firstDirty, err = segment.ReadOffsetCheckpoint(c.path); err != nil {
		c.logger.Warn("ignoring unreadable cleaner offset checkpoint; compacted logs are cleaned from their start", "error", err)
		c.firstDirty = map[segment.TopicPartition]int64{}
	}
	return c
}

// threads is log.cleaner.threads as it is now.
func (c *logCleaner) threads() int { return int(max(c.b.dynamicBrokerInt64("log.cleaner.threads"), 0)) }

// mapBytes is each thread's share of log.cleaner.dedupe.buffer.size as it is now.
func (c *logCleaner) mapBytes() int64 {
	return c.b.dynamicBrokerInt64("log.cleaner.dedupe.buffer.size") / int64(max(c.threads(), 1))
}

// backoff is log.cleaner.backoff.ms as it is now.
func (c *logCleaner) backoff() time.Duration {
	return time.Duration(c.b.dynamicBrokerInt64("log.cleaner.backoff.ms")) * time.Millisecond
}

// start runs the supervisor, which keeps log.cleaner.threads threads running as the
// property changes.
func (c *logCleaner) start(b *Broker) {
	b.goLoop("log cleaner supervisor", func() {
		for {
			changed := b.machine.Changed()
			c.startThreads(b)
			select {
			case <-c.stop:
				return
			case <-changed:
			}
		}
	})
}

// startThreads starts threads up to log.cleaner.threads.
func (c *logCleaner) startThreads(b *Broker) {
	want := c.threads()
	c.mu.Lock()
	defer c.mu.Unlock()
	for ; c.running < want; c.running++ {
		id := c.running
		b.goLoop("log cleaner", func() { c.run(id) })
	}
}

func (c *logCleaner) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// surplus reports whether thread id is past log.cleaner.threads; if so it leaves the
// running count (the highest thread leaves first: a lower one waits for it).
func (c *logCleaner) surplus(id int) bool {
	want := c.threads()
	c.mu.Lock()
	defer c.mu.Unlock()
	if id < want || id != c.running-1 {
		return false
	}
	c.running--
	return true
}

func (c *logCleaner) run(id int) {
	for !c.stopped() && !c.surplus(id) {
		job, ok := c.grab(time.Now())
		if !ok {
			t := time.NewTimer(c.backoff())
			select {
			case <-c.stop:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		c.clean(job)
		c.mu.Lock()
		delete(c.inProgress, job.tp)
		c.mu.Unlock()
	}
}

// cleanJob is a partition chosen for a pass.
type cleanJob struct {
	lp         *localPartition
	tp         segment.TopicPartition
	settings   cleanerSettings
	firstDirty int64
	upTo       int64
	ratio      float64
	// check is set for a log that still hides empty batches without a producer id,
	// which an older build's cleaner wrote (segment/legacy_empty.go): the pass first
	// looks for them, runs only if it finds some, and then stops hiding.
	check bool
}

// grab picks the partition most in need of cleaning and marks it in progress. Logs to
// check for an older build's empty batches come first, whatever their dirty ratio.
func (c *logCleaner) grab(now time.Time) (cleanJob, bool) {
	var best cleanJob
	found := false
	for _, lp := range c.pm.all() {
		s := lp.settings.Load()
		if s == nil || !s.cleaner.compact {
			continue
		}
		tp := segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}
		c.mu.Lock()
		skip := c.inProgress[tp] || c.uncleanable[tp] != ""
		checkpoint, has := c.firstDirty[tp]
		c.mu.Unlock()
		if skip {
			continue
		}
		job, must, ok := c.measure(lp, tp, s.cleaner, checkpoint, has, now)
		if !ok || (!must && !job.check && job.ratio < s.cleaner.minCleanableRatio) {
			continue
		}
		if must || job.check {
			job.ratio = math.Inf(1)
		}
		if !found || job.ratio > best.ratio {
			best, found = job, true
		}
	}
	if !found {
		return best, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inProgress[best.tp] {
		return best, false
	}
	c.inProgress[best.tp] = true
	return best, true
}

// measure computes a compacted partition's cleanable range and dirty ratio
// (segment.Log.Cleanable) below its last stable offset. must is set when the oldest
// dirty segment is older than max.compaction.lag.ms. A log that hides empty batches is
// a job (check) even with nothing dirty.
func (c *logCleaner) measure(lp *localPartition, tp segment.TopicPartition, s cleanerSettings, checkpoint int64, has bool, now time.Time) (job cleanJob, must, ok bool) {
	st := lp.State()
	stable := min(st.HighWatermark, st.LastStableOffset)
	err := lp.WithLog(func(l *segment.Log) error {
		r := l.Cleanable(checkpoint, has, stable, segment.CleanLags{MinMs: s.minLagMs, MaxMs: s.maxLagMs}, now.UnixMilli())
		check := l.HidesEmptyBatches()
		if r.Dirty == 0 && !check {
			return nil
		}
		job = cleanJob{lp: lp, tp: tp, settings: s, firstDirty: r.FirstDirty, upTo: r.UpTo, ratio: r.Ratio(), check: check}
		must, ok = r.Due, true
		return nil
	})
	return job, must, ok && err == nil
}

// clean runs one pass over job's partition: prepare and commit under the partition's
// lock, build (the reading and writing) without it.
func (c *logCleaner) clean(job cleanJob) {
	c.throttle.SetRate(c.b.dynamicBrokerFloat64("log.cleaner.io.max.bytes.per.second"))
	opts := segment.CleanOptions{FirstDirtyOffset: job.firstDirty, UncleanableOffset: job.upTo, MaxMapBytes: c.mapBytes(),
		DeleteRetentionMs: job.settings.deleteRetentionMs, Decompress: c.b.records.Decompress, Compress: c.b.records.CompressWhole,
		Throttle: c.throttle.Wait, Cancelled: c.stopped}
	plan, err := job.lp.PrepareClean(opts)
	if err != nil || plan == nil {
		// A damaged log is not uncleanable: its replica is reopened from its files.
		if err != nil && !errors.Is(err, replication.ErrPartitionStopped) && !errors.Is(err, segment.ErrLogDamaged) {
			c.markUncleanable(job.tp, "preparing", err)
		} else if err == nil && job.check {
			c.stopHiding(job)
		}
		return
	}
	if job.check {
		found, err := plan.HasLegacyEmptyBatches()
		if err != nil {
			plan.Abandon()
			c.markUncleanable(job.tp, "checking for empty batches", err)
			return
		}
		if !found {
			plan.Abandon()
			c.stopHiding(job)
			return
		}
		c.logger.Info("removing the empty batches an older build's cleaner left, which many clients cannot read",
			"topic", job.tp.Topic, "partition", job.tp.Partition)
	}
	start := time.Now()
	if err := plan.Build(); err != nil {
		stale := job.lp.StaleClean(plan)
		plan.Abandon()
		if !stale && !errors.Is(err, segment.ErrCleanAborted) {
			c.markUncleanable(job.tp, "building", err)
		}
		return
	}
	res, err := job.lp.CommitClean(plan)
	plan.Abandon()
	switch {
	case errors.Is(err, segment.ErrCleanAborted), errors.Is(err, replication.ErrPartitionStopped):
		return
	case err != nil:
		c.markUncleanable(job.tp, "swapping", err)
		return
	}
	if job.check {
		c.stopHiding(job)
	}
	c.pm.markCompacted(job.tp, job.lp)
	c.mu.Lock()
	c.firstDirty[job.tp] = res.CleanedUpTo
	c.passes++
	c.mu.Unlock()
	if err := c.WriteCheckpoint(); err != nil {
		c.logger.Warn("writing the cleaner offset checkpoint", "error", err)
	}
	elapsed := time.Since(start)
	c.logger.Info("cleaned log", "topic", job.tp.Topic, "partition", job.tp.Partition,
		"dirty_ratio", job.ratio, "cleaned_up_to", res.CleanedUpTo, "bytes_read", res.BytesRead, "bytes_written", res.BytesWritten,
		"records_removed", res.RecordsRemoved, "tombstones_removed", res.TombstonesRemoved,
		"segments", res.SegmentsBefore, "segments_after", res.SegmentsAfter, "elapsed", elapsed)
}

// stopHiding lets consumers read every batch of a checked or repaired log.
func (c *logCleaner) stopHiding(job cleanJob) {
	job.lp.WithLog(func(l *segment.Log) error { l.SetHideEmptyBatches(false); return nil })
}

// forget drops tp's first dirty offset and uncleanable mark (its data is deleted).
func (c *logCleaner) forget(tp segment.TopicPartition) {
	c.mu.Lock()
	delete(c.firstDirty, tp)
	delete(c.uncleanable, tp)
	c.mu.Unlock()
}

// markUncleanable stops cleaning tp (Kafka's uncleanable partitions) and says why.
func (c *logCleaner) markUncleanable(tp segment.TopicPartition, step string, err error) {
	c.mu.Lock()
	c.uncleanable[tp] = err.Error()
	c.mu.Unlock()
	c.logger.Error("log cleaning failed; the partition is marked uncleanable until restart", "topic", tp.Topic,
		"partition", tp.Partition, "step", step, "error", err)
}

// WriteCheckpoint writes cleaner-offset-checkpoint: every partition the cleaner knows,
// open here or not (one not yet opened by this start, or offline, keeps its line: its
// log has offset gaps recovery must accept), until forget drops it with its data. One
// write at a time (writeMu), each of the offsets as they are once the previous one
// ended, so the file never goes back.
func (c *logCleaner) WriteCheckpoint() error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	out := maps.Clone(c.firstDirty)
	c.mu.Unlock()
	return segment.WriteOffsetCheckpoint(c.path, out)
}
