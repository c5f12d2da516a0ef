package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// produceCommand is `petrel produce TOPIC`: one record per stdin line, like
// kafka-console-producer.sh.
func produceCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "produce",
		Usage:     "produce stdin lines to a topic, one record per line",
		ArgsUsage: "TOPIC",
		Flags: withClientFlags(
			topicFlag("the topic to produce to (instead of TOPIC)"),
			&ucli.StringFlag{Name: "key-separator", Usage: "split each line into key and value at the first SEP (a line without it is an error)"},
			&ucli.StringFlag{Name: "acks", Usage: "acknowledgements: all (-1), 1 or 0", Value: "all"},
			&ucli.IntFlag{Name: "partition", Usage: "produce every record to this partition (-1: the default key-hash partitioner)", Value: -1},
			&ucli.StringFlag{Name: "compression", Usage: "none, gzip, snappy, lz4 or zstd", Value: "none"},
		),
		Action: runProduce,
	}
}

// producerSettings are the producer flags shared by produce and perf produce.
type producerSettings struct {
	acks        string // --acks as given
	compression string // --compression as given
}

// options maps the settings to kgo producer options. Acks other than all need
// idempotence off: an idempotent producer must wait for every in-sync replica.
func (s producerSettings) options() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch strings.ToLower(s.acks) {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("bad --acks %q: want all, -1, 1 or 0", s.acks)
	}
	codec, err := parseCompression(s.compression)
	if err != nil {
		return nil, err
	}
	return append(opts, kgo.ProducerBatchCompression(codec)), nil
}

// parseCompression maps a Kafka compression.type name to a kgo codec.
func parseCompression(name string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(name) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("bad --compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

func runProduce(c *ucli.Context) error {
	topic, err := oneNameArg(c, "topic", "TOPIC")
	if err != nil {
		return err
	}
	opts, err := producerSettings{acks: c.String("acks"), compression: c.String("compression")}.options()
	if err != nil {
		return err
	}
	partition := c.Int("partition")
	if partition < -1 {
		return fmt.Errorf("bad --partition %d", partition)
	}
	if partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	sep := c.String("key-separator")
	if c.IsSet("key-separator") && sep == "" {
		return errors.New("--key-separator must not be empty")
	}
	cl, err := newKafkaClient(c, append(opts,
		kgo.AllowAutoTopicCreation(), // the broker's auto.create.topics.enable decides
		kgo.RecordDeliveryTimeout(c.Duration("timeout")),
		kgo.UnknownTopicRetries(2),
	)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := checkTopic(c.Context, cl, topic, int32(partition), true); err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	p := &lineProducer{client: cl, topic: topic, keySeparator: sep, partition: int32(partition)}
	readErr := p.produceLines(ctx, c.Context, c.App.Reader)
	flushErr := p.flush(c.Context) // the lines before a bad one are still delivered
	switch {
	case readErr != nil && flushErr != nil:
		return fmt.Errorf("%w (and %v)", readErr, flushErr)
	case readErr != nil:
		return readErr
	}
	return flushErr
}

// checkTopic asks for the topic's metadata (letting the broker auto-create it when
// allowCreate and the broker allow it) and fails clearly when the topic does not exist
// or the partition (unless -1) is out of range.
func checkTopic(parent context.Context, cl *kafkaClient, topic string, partition int32, allowCreate bool) error {
	ctx, cancel := cl.requestContext(parent)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = allowCreate
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("metadata for topic %q: %w", topic, cl.explain(err))
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("metadata for topic %q: the broker answered for %d topics", topic, len(resp.Topics))
	}
	t := resp.Topics[0]
	switch err := kerr.ErrorForCode(t.ErrorCode); {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		if allowCreate {
			return fmt.Errorf("topic %q does not exist and the cluster does not create topics on first use (auto.create.topics.enable=false); create it with `petrel topics create %s`", topic, topic)
		}
		return fmt.Errorf("topic %q does not exist", topic)
	case errors.Is(err, kerr.LeaderNotAvailable):
		return nil // being created; the client waits for a leader
	case err != nil:
		return fmt.Errorf("topic %q: %w", topic, err)
	}
	if partition >= 0 && int(partition) >= len(t.Partitions) {
		return fmt.Errorf("partition %d does not exist: topic %q has %d partitions", partition, topic, len(t.Partitions))
	}
	return nil
}

// lineProducer produces one record per input line and keeps delivery results. Promises
// run on kgo's goroutines; mu guards the counters.
type lineProducer struct {
	client       *kafkaClient
	topic        string
	keySeparator string // "" means no keys
	partition    int32  // -1: the default partitioner

	mu       sync.Mutex
	sent     int   // records handed to the client
	failed   int   // records whose delivery failed
	firstErr error // the first delivery error
}

// produceLines reads lines until EOF, a malformed line or stop's end (an interrupt,
// which ends input like EOF), producing each with produceCtx. Records already handed to
// the client are not canceled by an interrupt: flush still delivers them.
func (p *lineProducer) produceLines(stop, produceCtx context.Context, in io.Reader) error {
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	readCtx, cancelRead := context.WithCancel(stop)
	defer cancelRead() // lets the reader goroutine go after a malformed line
	go func() { readErr <- readLines(in, lines, readCtx.Done()) }()
	for number := 1; ; number++ {
		select {
		case <-stop.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				return <-readErr
			}
			rec, err := p.record(line, number)
			if err != nil {
				return err
			}
			p.mu.Lock()
			p.sent++
			p.mu.Unlock()
			p.client.Produce(produceCtx, rec, p.delivered)
		}
	}
}

// readLines sends each line of in (without its line ending) on lines, then closes it.
func readLines(in io.Reader, lines chan<- []byte, done <-chan struct{}) error {
	defer close(lines)
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 || err == nil {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			select {
			case lines <- line:
			case <-done:
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading input: %w", err)
		}
	}
}

// record builds the record for input line number (from 1).
func (p *lineProducer) record(line []byte, number int) (*kgo.Record, error) {
	rec := &kgo.Record{Topic: p.topic, Value: line}
	if p.partition >= 0 {
		rec.Partition = p.partition
	}
	if p.keySeparator != "" {
		key, value, ok := bytes.Cut(line, []byte(p.keySeparator))
		if !ok {
			return nil, fmt.Errorf("no key separator %q found on line number %d: %q", p.keySeparator, number, line)
		}
		rec.Key, rec.Value = key, value
	}
	return rec, nil
}

func (p *lineProducer) delivered(_ *kgo.Record, err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed++
	if p.firstErr == nil {
		p.firstErr = err
	}
}

// flush waits for every record's delivery (each bounded by the delivery timeout) and
// reports failures.
func (p *lineProducer) flush(ctx context.Context) error {
	if err := p.client.Flush(ctx); err != nil {
		return fmt.Errorf("flushing records: %w", p.client.explain(err))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed > 0 {
		return fmt.Errorf("%d of %d records failed: %w", p.failed, p.sent, p.client.explain(p.firstErr))
	}
	return nil
}
