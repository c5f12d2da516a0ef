package workload

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// drain reads every partition of the topic with a fresh read_committed consumer from
// the earliest offset to the end offsets listed when it starts (asking again, until
// ctx's deadline, for partitions whose listing failed). It stops at ctx's deadline; the
// partitions it did not finish are returned with the offset reached (0 for a partition
// whose end offset was never listed), with the end offsets it listed.
func (r *runner) drain(ctx context.Context, adm *kadm.Client) (reads []Read, unfinished, ends map[int32]int64) {
	unfinished = map[int32]int64{}
	ends = r.listOffsets(ctx, "drain: listing end offsets", adm.ListEndOffsets)
	for p := range int32(r.partitions) {
		if _, ok := ends[p]; !ok {
			unfinished[p] = 0
		}
	}
	starts, err := adm.ListStartOffsets(ctx, r.cfg.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		r.note("drain: listing start offsets: %v", err)
	}
	target := map[int32]int64{} // partitions still to read, to their end offset
	reached := map[int32]int64{}
	for p, end := range ends {
		start := int64(0)
		if s, ok := starts.Lookup(r.cfg.Topic, p); ok && s.Err == nil {
			start = s.Offset
		}
		reached[p] = start
		if end > start {
			target[p] = end
		}
	}
	if len(target) == 0 {
		return nil, unfinished, ends
	}
	offsets := map[int32]kgo.Offset{}
	for p := range target {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append(r.cfg.ClientOpts[:len(r.cfg.ClientOpts):len(r.cfg.ClientOpts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.cfg.Topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // transaction markers move the position past aborted records
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		r.note("drain: %v", err)
		for p := range target {
			unfinished[p] = reached[p]
		}
		return nil, unfinished, ends
	}
	defer cl.Close()
	for len(target) > 0 && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachError(func(_ string, partition int32, err error) {
			if ctx.Err() == nil {
				r.cfg.Logger.Debug("drain fetch error", "partition", partition, "error", err)
			}
		})
		fetches.EachRecord(func(rec *kgo.Record) {
			reached[rec.Partition] = max(reached[rec.Partition], rec.Offset+1)
			if end, ok := target[rec.Partition]; ok && rec.Offset+1 >= end {
				delete(target, rec.Partition)
			}
			if rec.Attrs.IsControl() {
				return
			}
			if id, ok := decodeValue(r.cfg.Run, rec.Value); ok {
				reads = append(reads, Read{RecordID: id, Partition: rec.Partition, Offset: rec.Offset})
			}
		})
	}
	for p := range target {
		unfinished[p] = reached[p]
		r.note("drain: partition %d read to offset %d of %d within %s", p, reached[p], target[p], r.cfg.DrainTimeout)
	}
	return reads, unfinished, ends
}
