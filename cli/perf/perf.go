// Package perf is `petrel perf`: kafka-producer-perf-test and kafka-consumer-perf-test
// in one place (produce, consume), and the tools that put their figures in context on
// the same machine: the broker's catch-up path without a consumer (fetch), raw TCP on
// loopback (loopback), the client's own ceiling against an in-process broker that
// costs nothing (consume-ceiling, produce-ceiling), and the latency floor of acks=all
// between processes without a broker (floor, floor-node); and the hot paths'
// benchmarks against a baseline revision, or their allocations against the recorded
// counts (regress). Its commands are Kafka
// clients built on the flags every client command shares (cli/internal/clientcmd).
package perf

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// progressInterval is how often perf commands print a progress line to stderr.
const progressInterval = time.Second

// Command is `petrel perf`: kafka-producer-perf-test and kafka-consumer-perf-test in
// one place, and the tools that set their figures in context on the same machine.
func Command() *ucli.Command {
	return &ucli.Command{
		Name:  "perf",
		Usage: "measure produce and consume throughput and latency",
		Subcommands: []*ucli.Command{
			{
				Name:      "produce",
				Usage:     "produce fixed-size records and report records/s, MB/s and ack latency",
				ArgsUsage: "TOPIC",
				Flags:     perfProduceFlags(),
				Action:    runPerfProduce,
			},
			{
				Name:      "consume",
				Usage:     "consume records from the beginning and report records/s and MB/s",
				ArgsUsage: "TOPIC",
				Flags: clientcmd.WithFlags(append([]ucli.Flag{
					&ucli.IntFlag{Name: "records", Usage: "how many records to consume (0: until --duration)"},
					&ucli.DurationFlag{Name: "duration", Usage: "stop consuming after this long (0: no limit)"},
					&ucli.BoolFlag{Name: "json", Usage: "print the final figures as JSON"},
				}, append(fetchSizeFlags(), kgoFetchFlags()...)...)...),
				Action: runPerfConsume,
			},
			perfFetchCommand(),
			perfLoopbackCommand(),
			perfFloorCommand(),
			perfFloorNodeCommand(),
			perfCeilingNodeCommand(),
			perfCeilingCommand(),
			perfProduceCeilingCommand(),
			perfRegressCommand(),
		},
	}
}

// perfBounds are the limits shared by both perf commands.
type perfBounds struct {
	records  int64         // 0: no limit
	duration time.Duration // 0: no limit
}

func parsePerfBounds(c *ucli.Context) (perfBounds, error) {
	b := perfBounds{records: int64(c.Int("records")), duration: c.Duration("duration")}
	switch {
	case b.records < 0:
		return b, fmt.Errorf("bad --records %d", b.records)
	case b.duration < 0:
		return b, fmt.Errorf("bad --duration %s", b.duration)
	case b.records == 0 && b.duration == 0:
		return b, errors.New("give --records, --duration or both")
	}
	return b, nil
}

// done reports whether a run that has counted n records for elapsed is over.
func (b perfBounds) done(n int64, elapsed time.Duration) bool {
	return (b.records > 0 && n >= b.records) || (b.duration > 0 && elapsed >= b.duration)
}

// perfProduceFlags are the flags of `perf produce` and `perf produce-ceiling`.
func perfProduceFlags() []ucli.Flag {
	return clientcmd.WithFlags(
		&ucli.IntFlag{Name: "records", Usage: "how many records to produce (0: until --duration)"},
		&ucli.IntFlag{Name: "record-size", Usage: "value size in bytes", Value: 100},
		&ucli.StringFlag{Name: "acks", Usage: "acknowledgements: all (-1), 1 or 0", Value: "all"},
		&ucli.StringFlag{Name: "compression", Usage: "none, gzip, snappy, lz4 or zstd", Value: "none"},
		&ucli.Float64Flag{Name: "throughput-limit", Usage: "at most this many records per second (0: no limit)"},
		&ucli.DurationFlag{Name: "duration", Usage: "stop producing after this long (0: no limit)"},
		&ucli.IntFlag{Name: "max-buffered-records", Usage: "records the client holds before the next waits (1: one record in flight at a time; 0: the client default)"},
		&ucli.BoolFlag{Name: "json", Usage: "print the final figures as JSON"},
	)
}

func runPerfProduce(c *ucli.Context) error {
	topic, err := clientcmd.ExactlyOneArg(c, "TOPIC")
	if err != nil {
		return err
	}
	return perfProduceTo(c, topic)
}

// perfProduceTo is `perf produce` to topic.
func perfProduceTo(c *ucli.Context, topic string) error {
	bounds, err := parsePerfBounds(c)
	if err != nil {
		return err
	}
	size, limit := c.Int("record-size"), c.Float64("throughput-limit")
	if size < 0 {
		return fmt.Errorf("bad --record-size %d", size)
	}
	if limit < 0 {
		return fmt.Errorf("bad --throughput-limit %g", limit)
	}
	opts, err := clientcmd.ProducerSettings{Acks: c.String("acks"), Compression: c.String("compression")}.Options()
	if err != nil {
		return err
	}
	oneInFlight := c.Int("max-buffered-records") == 1
	switch n := c.Int("max-buffered-records"); {
	case n < 0:
		return fmt.Errorf("bad --max-buffered-records %d", n)
	case n > 0:
		opts = append(opts, kgo.MaxBufferedRecords(n))
	}
	errOut := clientcmd.LockErrWriter(c)
	cl, err := clientcmd.NewClient(c, append(opts,
		// What ends the command's context (not an interrupt: a canned cluster's node
		// dying) fails the requests in flight, which a record one at a time waits on.
		kgo.WithContext(c.Context),
		kgo.AllowAutoTopicCreation(),
		kgo.RecordDeliveryTimeout(c.Duration("timeout")),
		kgo.UnknownTopicRetries(2),
	)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := clientcmd.CheckTopic(c.Context, cl, topic, -1, true); err != nil {
		return err
	}
	ctx, stop := clientcmd.SignalContext(c.Context)
	defer stop()

	stats := newPerfStats(true)
	stopProgress := startProgress(errOut, progressInterval, func() string { return stats.progressLine("sent") })
	produceFixedRecords(ctx, c.Context, cl, topic, randomPayload(size), bounds, newThrottle(limit, stats.start), stats, oneInFlight)
	flushErr := cl.Flush(c.Context)
	stats.finish()
	stopProgress()

	sum := stats.summary()
	if err := writeSummary(c.App.Writer, sum, c.Bool("json")); err != nil {
		return err
	}
	if flushErr != nil {
		return fmt.Errorf("flushing records: %w", cl.Explain(flushErr))
	}
	if sum.Errors > 0 {
		return fmt.Errorf("%d of %d records failed: %w", sum.Errors, sum.Errors+sum.Records, cl.Explain(stats.firstErr))
	}
	return nil
}

// produceFixedRecords produces payload records until bounds or ctx (an interrupt) end
// the run, at most at the throttle's rate. Records are produced with recordCtx, the
// command's context, which an interrupt does not end: it stops new records without
// failing those in flight. What ends recordCtx (a node of a canned cluster dying under
// `perf produce-ceiling`) fails them, and ends a wait for one in flight.
//
// With oneInFlight each record is produced synchronously (ProduceSync, which also ends
// the client's linger at once): its latency is its own round trip. Timing an
// asynchronous Produce that blocks on a full buffer would also count the wait for the
// previous record, about doubling the figure.
func produceFixedRecords(ctx, recordCtx context.Context, cl *clientcmd.Client, topic string, payload []byte, bounds perfBounds, limit throttle, stats *perfStats, oneInFlight bool) {
	for i := int64(0); !bounds.done(i, time.Since(stats.start)); i++ {
		if err := limit.wait(ctx, i); err != nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		sentAt := time.Now()
		if oneInFlight {
			err := cl.ProduceSync(recordCtx, &kgo.Record{Topic: topic, Value: payload}).FirstErr()
			stats.recordAck(time.Since(sentAt), len(payload), err)
			continue
		}
		cl.Produce(recordCtx, &kgo.Record{Topic: topic, Value: payload}, func(_ *kgo.Record, err error) {
			stats.recordAck(time.Since(sentAt), len(payload), err)
		})
	}
}

// randomPayload returns size random upper-case letters, as kafka-producer-perf-test
// uses. Every record shares it.
func randomPayload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('A' + rand.IntN(26))
	}
	return b
}

// throttle spaces records evenly to keep under a records-per-second limit.
type throttle struct {
	start    time.Time
	interval time.Duration // 0: no limit
}

func newThrottle(perSecond float64, start time.Time) throttle {
	if perSecond <= 0 {
		return throttle{start: start}
	}
	return throttle{start: start, interval: time.Duration(float64(time.Second) / perSecond)}
}

// wait blocks until record i is due, or ctx ends.
func (t throttle) wait(ctx context.Context, i int64) error {
	if t.interval <= 0 {
		return nil
	}
	d := time.Until(t.start.Add(time.Duration(i) * t.interval))
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func runPerfConsume(c *ucli.Context) error {
	topic, bounds, sizes, err := parsePerfReaderArgs(c)
	if err != nil {
		return err
	}
	return perfConsumeFrom(c, topic, bounds, sizes, true)
}

// perfConsumeFrom is `perf consume` of topic (checked first, with check) and its
// report.
func perfConsumeFrom(c *ucli.Context, topic string, bounds perfBounds, sizes fetchSizes, check bool) error {
	errOut := clientcmd.LockErrWriter(c)
	// The clock starts before the client: it begins fetching as soon as it exists.
	stats := newPerfStats(false)
	cl, err := clientcmd.NewClient(c, append(sizes.kgoOptions(),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if check {
		if err := clientcmd.CheckTopic(c.Context, cl, topic, -1, false); err != nil {
			return err
		}
	}
	ctx, stop := clientcmd.SignalContext(c.Context)
	defer stop()

	stopProgress := startProgress(errOut, progressInterval, func() string { return stats.progressLine("received") })
	consumeErr := consumeForPerf(ctx, cl, bounds, stats)
	stats.finish()
	stopProgress()

	if err := writeSummary(c.App.Writer, stats.summary(), c.Bool("json")); err != nil {
		return err
	}
	return consumeErr
}

// consumeForPerf polls until bounds end the run, ctx ends (an interrupt), or no record
// arrives for --timeout, which is an error when --records was not reached.
func consumeForPerf(ctx context.Context, cl *clientcmd.Client, bounds perfBounds, stats *perfStats) error {
	var n int64
	for !bounds.done(n, time.Since(stats.start)) {
		wait := cl.Timeout()
		if bounds.duration > 0 {
			wait = min(wait, max(bounds.duration-time.Since(stats.start), time.Millisecond))
		}
		pollCtx, cancel := context.WithTimeout(ctx, wait)
		limit := 0
		if bounds.records > 0 {
			limit = int(bounds.records - n)
		}
		fetches := cl.PollRecords(pollCtx, limit)
		cancel()
		var records, bytes int64
		fetches.EachRecord(func(r *kgo.Record) {
			records++
			bytes += int64(len(r.Key) + len(r.Value))
		})
		n += records
		stats.recordConsumed(records, bytes)
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				return fmt.Errorf("consuming %s partition %d: %w", fe.Topic, fe.Partition, cl.Explain(fe.Err))
			}
			if records == 0 && !bounds.done(n, time.Since(stats.start)) {
				if bounds.records > 0 {
					return fmt.Errorf("no records for %s: consumed %d of %d", cl.Timeout(), n, bounds.records)
				}
				return fmt.Errorf("no records for %s: consumed %d", cl.Timeout(), n)
			}
		}
	}
	return nil
}
