package broker

import (
	"sync"
	"time"

	"github.com/petrel-broker/petrel/segment"
)

// unreadableReportInterval is how often at most a replica whose committed batches cannot
// be read names it in an ERROR line, however often it is asked for their digests.
const unreadableReportInterval = 10 * time.Minute

// unreadableReports bounds the ERROR lines of ReplicaDigests answers that find this
// replica's committed batches unreadable (CORRUPT_MESSAGE): each follower's verifier
// asks every petrel.replica.verification.interval.ms (which may be 1 ms) and `petrel
// verify replicas` whenever it runs, and one line per partition per
// unreadableReportInterval names the damage. The zero value is ready; mu is a leaf.
type unreadableReports struct {
	mu sync.Mutex
	// last is when each partition was last named, and how many answers found it
	// unreadable since without a line.
	last map[segment.TopicPartition]unreadableReport
}

type unreadableReport struct {
	at     time.Time
	silent int
}

// due reports whether the answer finding tp unreadable at now gets an ERROR line, and
// how many answers found it so since the last line.
func (u *unreadableReports) due(tp segment.TopicPartition, now time.Time) (bool, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if r, ok := u.last[tp]; ok && now.Sub(r.at) < unreadableReportInterval {
		r.silent++
		u.last[tp] = r
		return false, 0
	}
	silent := u.last[tp].silent
	for k, r := range u.last {
		if now.Sub(r.at) >= unreadableReportInterval {
			delete(u.last, k) // partitions named long ago: the map holds only recent ones
		}
	}
	if u.last == nil {
		u.last = map[segment.TopicPartition]unreadableReport{}
	}
	u.last[tp] = unreadableReport{at: now}
	return true, silent
}
