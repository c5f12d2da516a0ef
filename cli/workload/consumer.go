package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitInterval is how often a consumer commits what it has read.
const commitInterval = 250 * time.Millisecond

// consumer is one member of the run's group: it reads (read_committed with
// transactions), commits its offsets itself and keeps every commit it made.
type consumer struct {
	r     *runner
	n     int
	reads []RecordID // the consumer's goroutine only

	mu      sync.Mutex
	commits []Commit // guarded by mu: kgo calls OnPartitionsRevoked from its own goroutine
}

func (c *consumer) run(stop <-chan struct{}) {
	opts := append(c.r.cfg.ClientOpts[:len(c.r.cfg.ClientOpts):len(c.r.cfg.ClientOpts)],
		kgo.ConsumerGroup(c.r.cfg.Group),
		kgo.ConsumeTopics(c.r.cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.KeepControlRecords(), // so that the committed offset passes a partition's last marker
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			c.commit(ctx, cl) // what was read before giving the partitions up
		}),
	)
	if c.r.cfg.Transactions {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		c.r.note("consumer %d: %v", c.n, err)
		return
	}
	defer cl.Close() // leaves the group
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	last := time.Now()
	for ctx.Err() == nil {
		// A bounded poll, so that the consumer commits what it read while nothing new
		// arrives.
		pollCtx, cancelPoll := context.WithTimeout(ctx, commitInterval)
		fetches := cl.PollFetches(pollCtx)
		cancelPoll()
		fetches.EachError(func(topic string, partition int32, err error) {
			if pollCtx.Err() == nil {
				c.r.cfg.Logger.Debug("consumer fetch error", "consumer", c.n, "partition", partition, "error", err)
			}
		})
		fetches.EachRecord(func(rec *kgo.Record) {
			if rec.Attrs.IsControl() {
				return
			}
			if id, ok := decodeValue(c.r.cfg.Run, rec.Value); ok {
				c.reads = append(c.reads, id)
				c.r.groupRead.Add(1)
			}
		})
		if time.Since(last) >= commitInterval {
			last = time.Now()
			c.commit(ctx, cl)
		}
	}
	commitCtx, cancelCommit := context.WithTimeout(context.Background(), c.r.cfg.DeliveryTimeout)
	defer cancelCommit()
	c.commit(commitCtx, cl)
}

// commit commits the consumer's uncommitted offsets and keeps those the coordinator
// accepted, with the request's start and end.
func (c *consumer) commit(ctx context.Context, cl *kgo.Client) {
	offsets := cl.UncommittedOffsets()
	if len(offsets[c.r.cfg.Topic]) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.r.cfg.DeliveryTimeout)
	defer cancel()
	start := time.Now()
	source := fmt.Sprintf("consumer %d", c.n)
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		end := time.Now()
		if err != nil {
			c.r.cfg.Logger.Debug("offset commit failed", "consumer", c.n, "error", err)
			return
		}
		accepted := acceptedCommits(req, resp)
		c.mu.Lock()
		defer c.mu.Unlock()
		for p, o := range accepted {
			c.commits = append(c.commits, Commit{Partition: p, Offset: o, Start: start, End: end, Source: source})
			c.r.commits.Add(1)
		}
	})
}

// acceptedCommits returns the offsets the response accepted. The consumers read only
// the run's topic, so every topic of a commit is it; the response's topics answer the
// request's in order (by name before OffsetCommit v10, by id after).
func acceptedCommits(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse) map[int32]int64 {
	out := map[int32]int64{}
	for i, rt := range resp.Topics {
		if i >= len(req.Topics) {
			break
		}
		sent := map[int32]int64{}
		for _, p := range req.Topics[i].Partitions {
			sent[p.Partition] = p.Offset
		}
		for _, p := range rt.Partitions {
			if o, ok := sent[p.Partition]; ok && p.ErrorCode == 0 {
				out[p.Partition] = o
			}
		}
	}
	return out
}

// watcher fetches the group's committed offsets over and over (OffsetFetch), so that a
// committed offset going backwards is seen even between two consumers' commits.
type watcher struct {
	r        *runner
	adm      *kadm.Client
	observed []Commit // the watcher's goroutine only until it stops
	// last indexes each partition's latest observation in observed, and repeated tells
	// whether it repeats the one before it: of a run of equal offsets only the first and
	// the last are kept (the analysis compares an offset with the ones ended before it
	// started, so the first bounds what the run follows and the last what it precedes).
	last     map[int32]int
	repeated map[int32]bool
}

// watchInterval is how often the watcher fetches the group's committed offsets.
const watchInterval = 250 * time.Millisecond

func (w *watcher) run(stop <-chan struct{}) {
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			w.observe() // the offsets the consumers committed on leaving
			return
		case <-tick.C:
			w.observe()
		}
	}
}

func (w *watcher) observe() {
	ctx, cancel := context.WithTimeout(context.Background(), min(w.r.cfg.DeliveryTimeout, 5*time.Second))
	defer cancel()
	start := time.Now()
	resps, err := w.adm.FetchOffsets(ctx, w.r.cfg.Group)
	end := time.Now()
	if err != nil {
		w.r.cfg.Logger.Debug("fetching committed offsets", "error", err)
		return
	}
	resps.Each(func(o kadm.OffsetResponse) {
		if o.Topic == w.r.cfg.Topic && o.Err == nil && o.At >= 0 {
			w.add(Commit{Partition: o.Partition, Offset: o.At, Start: start, End: end, Source: observedSource})
		}
	})
}

// add keeps an observation, replacing the previous one when both repeat the offset of
// the one before.
func (w *watcher) add(c Commit) {
	if w.last == nil {
		w.last, w.repeated = map[int32]int{}, map[int32]bool{}
	}
	i, seen := w.last[c.Partition]
	switch {
	case seen && w.observed[i].Offset == c.Offset && w.repeated[c.Partition]:
		w.observed[i] = c
	case seen && w.observed[i].Offset == c.Offset:
		w.repeated[c.Partition] = true
		w.last[c.Partition] = len(w.observed)
		w.observed = append(w.observed, c)
	default:
		w.repeated[c.Partition] = false
		w.last[c.Partition] = len(w.observed)
		w.observed = append(w.observed, c)
	}
}
