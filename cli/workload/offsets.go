package workload

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// listRetry is how often listOffsets asks again for the partitions it is missing.
const listRetry = 200 * time.Millisecond

// listOffsets lists one offset (end or start, by list) of every partition of the topic,
// asking again for the partitions whose answer carried an error until all are listed
// or ctx ends: a leader just elected answers OFFSET_NOT_AVAILABLE until its high
// watermark catches up, and kgo retries only a few errors itself. The partitions never
// listed are missing from the map; the last error is noted under what.
func (r *runner) listOffsets(ctx context.Context, what string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) map[int32]int64 {
	got := make(map[int32]int64, r.partitions)
	var lastErr error
	tick := time.NewTicker(listRetry)
	defer tick.Stop()
	for {
		listed, err := list(ctx, r.cfg.Topic)
		if err != nil {
			lastErr = err
		}
		listed.Each(func(o kadm.ListedOffset) {
			switch {
			case o.Topic != r.cfg.Topic || o.Partition < 0:
			case o.Err != nil:
				lastErr = o.Err
			default:
				got[o.Partition] = o.Offset
			}
		})
		if len(got) >= r.partitions {
			return got
		}
		select {
		case <-ctx.Done():
			if lastErr == nil {
				lastErr = ctx.Err()
			}
			r.note("%s: %d of %d partitions not listed: %v", what, r.partitions-len(got), r.partitions, lastErr)
			return got
		case <-tick.C:
		}
	}
}
