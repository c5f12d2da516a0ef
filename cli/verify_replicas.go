package cli

// `petrel verify replicas [TOPIC]`: for each partition, every in-sync replica's digests
// of its committed log below the partition's high watermark (ReplicaDigests, through
// verify_replicas_client.go), compared with the leader's; a table of the results, and
// exit status 1 when any partition diverges (docs/verify.md).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	ucli "github.com/urfave/cli/v2"
)

// verifyReplicasRequestBytes is the most one ReplicaDigests request asks a broker to read.
const verifyReplicasRequestBytes = 16 << 20

// errReplicasDiverge is the command's error when a partition diverges (exit status 1).
var errReplicasDiverge = fmt.Errorf("replicas diverge")

func verifyReplicasCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "replicas",
		Usage:     "compare every in-sync replica's committed log with its leader's, by checksums",
		ArgsUsage: "[TOPIC]",
		Flags:     clientcmd.WithFlags(),
		Action:    runVerifyReplicas,
	}
}

// replicasResult is one row of the table.
type replicasResult struct {
	topic     string
	partition int32
	replicas  []int32
	from, to  int64 // the range compared, [from, to)
	result    string
	diverges  bool
}

func runVerifyReplicas(c *ucli.Context) error {
	args, err := clientcmd.Args(c)
	if err != nil {
		return err
	}
	if len(args) > 1 {
		return fmt.Errorf("verify replicas takes at most one topic, got %d arguments", len(args))
	}
	cl, err := clientcmd.NewClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := cl.RequestContext(c.Context)
	defer cancel()
	adm := cl.Admin()
	topics, err := adm.ListTopics(ctx, args...)
	if err != nil {
		return fmt.Errorf("list topics: %w", cl.Explain(err))
	}
	if err := topics.Error(); err != nil {
		return fmt.Errorf("list topics: %w", cl.Explain(err))
	}
	ends, err := adm.ListEndOffsets(ctx, topics.Names()...)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", cl.Explain(err))
	}
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("describe brokers: %w", cl.Explain(err))
	}
	addrs := map[int32]string{}
	for _, b := range meta.Brokers {
		addrs[b.NodeID] = fmt.Sprintf("%s:%d", b.Host, b.Port)
	}
	dc := newDigestClients(c, addrs)
	defer dc.close()
	var parts []kadm.PartitionDetail
	for _, t := range topics.Sorted() {
		parts = append(parts, t.Partitions.Sorted()...)
	}
	progress := newVerifyProgress(c.App.ErrWriter, len(parts))
	var results []replicasResult
	for _, p := range parts {
		end := int64(-1)
		if o, ok := ends.Lookup(p.Topic, p.Partition); ok && o.Err == nil {
			end = o.Offset
		}
		results = append(results, verifyPartition(c.Context, dc, p, end))
		progress.done(len(results))
	}
	progress.finish()
	diverged := writeReplicasTable(c.App.Writer, results)
	if diverged > 0 {
		return fmt.Errorf("%w: %d partition(s)", errReplicasDiverge, diverged)
	}
	return nil
}

// verifyPartition compares each follower in the ISR with the leader, range by range,
// from the highest log start offset to the high watermark end.
func verifyPartition(ctx context.Context, dc *digestClients, p kadm.PartitionDetail, end int64) replicasResult {
	r := replicasResult{topic: p.Topic, partition: p.Partition, replicas: p.Replicas, from: -1, to: -1}
	var followers []int32
	for _, id := range p.ISR {
		if id != p.Leader {
			followers = append(followers, id)
		}
	}
	switch {
	case p.Err != nil:
		r.result = "skipped: " + p.Err.Error()
		return r
	case end < 0:
		r.result = "skipped: no high watermark"
		return r
	case p.Leader < 0 || len(followers) == 0:
		r.result = "skipped: no in-sync follower"
		return r
	}
	start := int64(0)
	for {
		lead, err := dc.digests(ctx, p.Leader, p.Topic, p.Partition, start, end, broker.ReplicaDigestsChunkBytes)
		if errors.Is(err, kerr.CorruptMessage) {
			return unreadable(r, start, p.Leader)
		}
		if err != nil {
			r.result = "skipped: " + err.Error()
			return r
		}
		if lead.Compacted {
			r.result = "skipped: compacted topic (each replica's cleaner rewrites its own log)"
			return r
		}
		resume := int64(math.MaxInt64)
		for _, f := range followers {
			fol, err := dc.digests(ctx, f, p.Topic, p.Partition, start, min(end, lead.NextOffset), broker.ReplicaDigestsChunkBytes)
			if errors.Is(err, kerr.CorruptMessage) {
				return unreadable(r, start, f)
			}
			if err != nil {
				r.result = "skipped: " + err.Error()
				return r
			}
			cmp := broker.CompareReplicaDigests(start, lead, fol)
			if cmp.Skipped == "compacted" {
				r.result = "skipped: compacted topic (each replica's cleaner rewrites its own log)"
				return r
			}
			if r.from < 0 {
				r.from = max(start, lead.LogStartOffset, fol.LogStartOffset)
			}
			if cmp.Diverged {
				at := firstDifference(ctx, dc, p, p.Leader, f, cmp.From, cmp.To)
				r.to, r.diverges = at, true
				r.result = fmt.Sprintf("DIVERGES at offset %d between brokers %d and %d", at, p.Leader, f)
				return r
			}
			resume = min(resume, cmp.Resume)
		}
		if resume <= start {
			break
		}
		start = resume
	}
	r.from, r.to = max(r.from, 0), max(start, r.from)
	if r.to <= r.from {
		r.result = "agree (nothing committed to compare)"
		return r
	}
	r.result = "agree"
	return r
}

// unreadable is the result of a partition whose committed batches broker id cannot
// read (it answered CORRUPT_MESSAGE and logged which): a divergence.
func unreadable(r replicasResult, start int64, id int32) replicasResult {
	r.from, r.to, r.diverges = max(r.from, start, 0), start, true
	r.result = fmt.Sprintf("DIVERGES: broker %d cannot read its batches from offset %d", id, start)
	return r
}

// firstDifference asks both brokers for a digest per batch of [from, to] and returns
// the base offset of the first batch that differs (from when it cannot tell).
func firstDifference(ctx context.Context, dc *digestClients, p kadm.PartitionDetail, a, b int32, from, to int64) int64 {
	da, err := dc.digests(ctx, a, p.Topic, p.Partition, from, to+1, 1)
	if err != nil {
		return from
	}
	db, err := dc.digests(ctx, b, p.Topic, p.Partition, from, min(to+1, da.NextOffset), 1)
	if err != nil {
		return from
	}
	if cmp := broker.CompareReplicaDigests(from, da, db); cmp.Diverged {
		return cmp.From
	}
	return from
}

// writeReplicasTable prints the results and returns how many diverge.
func writeReplicasTable(w io.Writer, results []replicasResult) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tRANGE CHECKED\tRESULT")
	diverged := 0
	for _, r := range results {
		ids := make([]string, len(r.replicas))
		for i, id := range r.replicas {
			ids[i] = fmt.Sprint(id)
		}
		rng := "-"
		if r.from >= 0 && r.to > r.from {
			rng = fmt.Sprintf("[%d, %d)", r.from, r.to)
		}
		if r.diverges {
			diverged++
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", r.topic, r.partition, strings.Join(ids, ","), rng, r.result)
	}
	tw.Flush()
	return diverged
}

// verifyProgress prints "verified N of M partitions" on stderr at most once a second.
type verifyProgress struct {
	w     io.Writer
	total int
	last  time.Time
	shown bool
}

func newVerifyProgress(w io.Writer, total int) *verifyProgress {
	return &verifyProgress{w: w, total: total, last: time.Now()}
}

func (p *verifyProgress) done(n int) {
	if time.Since(p.last) < time.Second {
		return
	}
	p.last, p.shown = time.Now(), true
	fmt.Fprintf(p.w, "\rverified %d of %d partitions", n, p.total)
}

func (p *verifyProgress) finish() {
	if p.shown {
		fmt.Fprintf(p.w, "\rverified %d of %d partitions\n", p.total, p.total)
	}
}
