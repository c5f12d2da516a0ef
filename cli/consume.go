package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// consumeCommand is `petrel consume TOPIC`, like kafka-console-consumer.sh: without
// --group it reads partitions directly; with --group it joins that consumer group (kgo's
// ConsumerGroup with its defaults: cooperative-sticky assignment, offsets committed
// every five seconds and when partitions are revoked or the consumer leaves).
func consumeCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "consume",
		Usage:     "print a topic's records, one value per line",
		ArgsUsage: "TOPIC",
		Flags: clientcmd.WithFlags(
			topicFlag("the topic to consume (instead of TOPIC)"),
			&ucli.StringFlag{Name: "group", Usage: "consume as a member of this consumer group, committing offsets"},
			&ucli.BoolFlag{Name: "from-beginning", Usage: "start at the earliest offset instead of the latest"},
			&ucli.IntFlag{Name: "partition", Usage: "read only this partition (-1: all)", Value: -1},
			&ucli.StringFlag{Name: "offset", Usage: "start offset: a non-negative number, earliest or latest (needs --partition)"},
			&ucli.IntFlag{Name: "max-messages", Usage: "exit after this many records (0: run until interrupted)"},
			&ucli.IntFlag{Name: "timeout-ms", Usage: "exit after this many milliseconds without a record (0: never)"},
			&ucli.BoolFlag{Name: "print-key", Usage: "print each record's key before its value"},
			&ucli.BoolFlag{Name: "print-offset", Usage: "print each record's offset as Offset:N"},
			&ucli.BoolFlag{Name: "print-partition", Usage: "print each record's partition as Partition:N"},
			&ucli.BoolFlag{Name: "print-timestamp", Usage: "print each record's timestamp as CreateTime:MS or LogAppendTime:MS"},
			&ucli.StringFlag{Name: "key-separator", Usage: "separator between printed fields", Value: "\t"},
		),
		Action: runConsume,
	}
}

// consumeSettings are the consume flags, checked.
type consumeSettings struct {
	topic       string
	group       string        // "": no group
	partition   int32         // -1: all partitions
	start       kgo.Offset    // where to start
	reset       kgo.Offset    // where to go after OFFSET_OUT_OF_RANGE
	maxMessages int           // 0: unlimited
	idle        time.Duration // 0: wait forever for the next record
	format      recordFormat
}

func parseConsumeSettings(c *ucli.Context) (consumeSettings, error) {
	topic, err := oneNameArg(c, "topic", "TOPIC")
	if err != nil {
		return consumeSettings{}, err
	}
	s := consumeSettings{
		topic:       topic,
		group:       c.String("group"),
		partition:   int32(c.Int("partition")),
		maxMessages: c.Int("max-messages"),
		idle:        time.Duration(c.Int("timeout-ms")) * time.Millisecond,
		format: recordFormat{
			key:       c.Bool("print-key"),
			offset:    c.Bool("print-offset"),
			partition: c.Bool("print-partition"),
			timestamp: c.Bool("print-timestamp"),
			separator: c.String("key-separator"),
		},
	}
	switch {
	case s.partition < -1:
		return s, fmt.Errorf("bad --partition %d", s.partition)
	case s.maxMessages < 0:
		return s, fmt.Errorf("bad --max-messages %d", s.maxMessages)
	case s.idle < 0:
		return s, fmt.Errorf("bad --timeout-ms %d", c.Int("timeout-ms"))
	case c.IsSet("group") && s.group == "":
		return s, errors.New("--group is empty")
	case s.group != "" && (s.partition >= 0 || c.IsSet("offset")):
		return s, errors.New("--group cannot be used with --partition or --offset: the group assigns partitions and its committed offsets say where to start")
	}
	// kafka-console-consumer.sh sets auto.offset.reset to earliest with
	// --from-beginning and to latest otherwise; --offset only moves the start.
	s.start, s.reset = kgo.NewOffset().AtEnd(), kgo.NewOffset().AtEnd()
	if c.Bool("from-beginning") {
		s.start, s.reset = kgo.NewOffset().AtStart(), kgo.NewOffset().AtStart()
	}
	if c.IsSet("offset") {
		if s.partition < 0 {
			return s, errors.New("--offset needs --partition")
		}
		if c.Bool("from-beginning") {
			return s, errors.New("--from-beginning and --offset cannot be used together")
		}
		if s.start, err = parseStartOffset(c.String("offset")); err != nil {
			return s, err
		}
	}
	return s, nil
}

// parseStartOffset parses --offset as kafka-console-consumer.sh does.
func parseStartOffset(v string) (kgo.Offset, error) {
	switch v {
	case "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "latest":
		return kgo.NewOffset().AtEnd(), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return kgo.Offset{}, fmt.Errorf("bad --offset %q: want earliest, latest or a non-negative number", v)
	}
	return kgo.NewOffset().At(n), nil
}

// consumeOptions are the kgo options that read s's partitions directly, or join s's
// group (where the start is the committed offset, else --from-beginning's reset).
func (s consumeSettings) consumeOptions() []kgo.Opt {
	opts := []kgo.Opt{kgo.ConsumeResetOffset(s.reset)}
	if s.group != "" {
		return append(opts, kgo.ConsumerGroup(s.group), kgo.ConsumeTopics(s.topic))
	}
	if s.partition >= 0 {
		return append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: {s.partition: s.start}}))
	}
	return append(opts, kgo.ConsumeTopics(s.topic), kgo.ConsumeStartOffset(s.start))
}

func runConsume(c *ucli.Context) error {
	s, err := parseConsumeSettings(c)
	if err != nil {
		return err
	}
	errOut := clientcmd.LockErrWriter(c)
	cl, err := clientcmd.NewClient(c, s.consumeOptions()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := clientcmd.CheckTopic(c.Context, cl, s.topic, s.partition, false); err != nil {
		return err
	}
	ctx, stop := clientcmd.SignalContext(c.Context)
	defer stop()
	n, err := consumeRecords(ctx, cl, s, c.App.Writer)
	if s.group != "" {
		// Commit what was printed before leaving, as the Java consumer does on close
		// (kgo would also commit while leaving; this reports a failure).
		commitCtx, cancel := cl.RequestContext(context.Background())
		if cerr := cl.CommitUncommittedOffsets(commitCtx); cerr != nil && err == nil {
			err = fmt.Errorf("commit offsets of group %q: %w", s.group, cl.Explain(cerr))
		}
		cancel()
	}
	fmt.Fprintf(errOut, "Processed a total of %d messages\n", n)
	return err
}

// consumeRecords prints records until max-messages, an idle timeout, ctx's end (an
// interrupt) or a fatal fetch error. It returns how many it printed.
func consumeRecords(ctx context.Context, cl *clientcmd.Client, s consumeSettings, out io.Writer) (int, error) {
	w := bufio.NewWriter(out)
	defer w.Flush()
	count := 0
	for s.maxMessages == 0 || count < s.maxMessages {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if s.idle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, s.idle)
		}
		fetches := cl.PollRecords(pollCtx, s.maxMessages-count)
		cancel()
		for it := fetches.RecordIter(); !it.Done() && (s.maxMessages == 0 || count < s.maxMessages); {
			s.format.write(w, it.Next())
			count++
		}
		if err := w.Flush(); err != nil {
			return count, err
		}
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return count, nil
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				return count, nil // idle timeout: a normal end, as in kafka-console-consumer.sh
			}
			return count, fmt.Errorf("consuming %s partition %d: %w", fe.Topic, fe.Partition, cl.Explain(fe.Err))
		}
	}
	return count, nil
}

// recordFormat prints a record as kafka-console-consumer.sh's default formatter does:
// the enabled fields in the order timestamp, partition, offset, key, value, joined by
// separator. A null key or value prints as null.
type recordFormat struct {
	key, offset, partition, timestamp bool
	separator                         string
}

func (f recordFormat) write(w *bufio.Writer, r *kgo.Record) {
	if f.timestamp {
		switch r.Attrs.TimestampType() {
		case 0:
			fmt.Fprintf(w, "CreateTime:%d", r.Timestamp.UnixMilli())
		case 1:
			fmt.Fprintf(w, "LogAppendTime:%d", r.Timestamp.UnixMilli())
		default:
			w.WriteString("NO_TIMESTAMP")
		}
		w.WriteString(f.separator)
	}
	if f.partition {
		fmt.Fprintf(w, "Partition:%d%s", r.Partition, f.separator)
	}
	if f.offset {
		fmt.Fprintf(w, "Offset:%d%s", r.Offset, f.separator)
	}
	if f.key {
		writeNullable(w, r.Key)
		w.WriteString(f.separator)
	}
	writeNullable(w, r.Value)
	w.WriteByte('\n')
}

func writeNullable(w *bufio.Writer, b []byte) {
	if b == nil {
		w.WriteString("null")
		return
	}
	w.Write(b)
}
