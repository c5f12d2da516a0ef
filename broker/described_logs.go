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
// log end offset; its first append finds the damage.
//
// The pass runs outside the replicas' locks (a cold stat may take milliseconds) and
// does not delay serving: 100,000 partitions take seconds on cold caches.

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/petrel-broker/petrel/segment"
)

// checkDescribedLogs is the background pass over the segment files of the replicas
// opened from their descriptions (see the file comment).
func (pm *partitionManager) checkDescribedLogs() {
	start := time.Now()
	replicas, files, damaged := 0, 0, 0
	for i, lp := range pm.allSorted() {
		if pm.stopping(i) {
			return
		}
		var unchecked []segment.DescribedFile
		if lp.WithLog(func(l *segment.Log) error { unchecked = l.UncheckedFiles(); return nil }) != nil || len(unchecked) == 0 {
			continue
		}
		replicas++
		for _, f := range unchecked {
			var size int64
			fi, err := os.Stat(f.Path)
			switch {
			case err == nil:
				size = fi.Size()
			case !errors.Is(err, fs.ErrNotExist):
				continue // left to the file's first open
			}
			files++
			err = lp.WithLog(func(l *segment.Log) error { return l.CheckFileSize(f.Path, size) })
			if errors.Is(err, segment.ErrLogDamaged) {
				damaged++
				pm.recheck() // the reconciler takes it offline and reopens it
				break
			}
		}
	}
	pm.b.logger.Info("checked the segment files of the replicas opened from their clean-shutdown descriptions",
		"replicas", replicas, "files", files, "damaged", damaged, "duration", time.Since(start).Round(time.Millisecond))
}
