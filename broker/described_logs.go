package broker

// A replica opened from its clean-shutdown description (clean_log_states.go) trusts the
// sizes the description names for its segment files: the start reads no directory and
// opens no file. A file changed while the broker was stopped (cut short, rolled back,
// extended) is found at its first open (segment.ErrLogDamaged), which an idle replica
// may never make, so once the first reconciliation has opened the replicas, one pass
// stats every described segment file in the background and hands the sizes to the log.
// A damaged log goes offline alone and is opened again from its files
// (reconcilePartition), whose recovery cuts what is torn. Until the pass reaches it, a
// follower with a changed file may fetch, and be counted in the ISR, from the described
// log end offset; its first append finds the damage. Such a follower may even be elected
// leader before the pass reaches it: its first read or append of the changed segment
// finds the damage (the file is opened before any byte of it is served), answers
// KAFKA_STORAGE_ERROR, and the replica gives up its leadership as it goes offline.
//
// The pass waits until the start has settled: every replica this broker holds of a
// partition with a leader is in its ISR, or describedCheckMaxWait has passed. It then runs outside the
// replicas' locks (a cold stat may take milliseconds), one file at a time: it has no
// hurry, and its reads of cold inodes must not queue before the start's Raft fsyncs
// (docs/benchmarks.md "A whole cluster at scale": at 100,000 partitions on cold caches
// it took 27.5-28.2 s per node).

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
)

// checkDescribedLogs is the background pass over the segment files of the replicas
// opened from their descriptions (see the file comment).
func (pm *partitionManager) checkDescribedLogs() {
	if !pm.waitStartSettled() {
		return // stopping
	}
	start := time.Now()
	replicas, files, damaged := 0, 0, 0
	for _, lp := range pm.all() {
		select {
		case <-pm.b.stop:
			return // cut short: a stop does not wait for cold stats
		default:
		}
		n, bad := checkDescribedLog(lp)
		if n > 0 {
			replicas++
			files += n
		}
		if bad {
			damaged++
			pm.recheck() // the reconciler takes it offline and reopens it
		}
	}
	pm.b.logger.Info("checked the segment files of the replicas opened from their clean-shutdown descriptions",
		"replicas", replicas, "files", files, "damaged", damaged, "duration", time.Since(start).Round(time.Millisecond))
}

// describedCheckMaxWait bounds how long the check of the described files waits for the
// start to settle (waitStartSettled).
const describedCheckMaxWait = time.Minute

// waitStartSettled waits until every replica open here with a leader has this broker in
// its ISR, or describedCheckMaxWait has passed; it returns false if the broker stops.
func (pm *partitionManager) waitStartSettled() bool {
	deadline := time.Now().Add(describedCheckMaxWait)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for time.Now().Before(deadline) && !pm.allInSync(pm.b.Image()) {
		select {
		case <-pm.b.stop:
			return false
		case <-tick.C:
		}
	}
	return true
}

// allInSync reports whether im has this broker in the ISR of every partition with a
// leader whose replica is open here.
func (pm *partitionManager) allInSync(im *metadata.Image) bool {
	self := pm.b.cfg.NodeID
	for _, lp := range pm.all() {
		t := im.Topic(lp.Topic)
		if t == nil || int(lp.ID) >= len(t.Partitions) {
			continue
		}
		if p := t.Partitions[lp.ID]; p.Leader >= 0 && !slices.Contains(p.ISR, self) {
			return false
		}
	}
	return true
}

// checkDescribedLog stats lp's described segment files not yet opened and hands their
// sizes to its log; it returns how many it checked and whether the log is damaged.
func checkDescribedLog(lp *localPartition) (checked int, damaged bool) {
	var unchecked []segment.DescribedFile
	if lp.WithLog(func(l *segment.Log) error { unchecked = l.UncheckedFiles(); return nil }) != nil {
		return 0, false
	}
	for _, f := range unchecked {
		size := int64(-1) // missing
		fi, err := os.Stat(f.Path)
		switch {
		case err == nil:
			size = fi.Size()
		case !errors.Is(err, fs.ErrNotExist):
			continue // left to the file's first open
		}
		checked++
		if err := lp.WithLog(func(l *segment.Log) error { return l.CheckFileSize(f, size) }); err != nil {
			return checked, errors.Is(err, segment.ErrLogDamaged) // damaged, or stopped
		}
	}
	return checked, false
}
