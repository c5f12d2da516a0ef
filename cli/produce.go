package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// produceCommand is `petrel produce TOPIC`: one record per stdin line, like
// kafka-console-producer.sh.
func produceCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "produce",
		Usage:     "produce stdin lines to a topic, one record per line",
		ArgsUsage: "TOPIC",
		Flags: clientcmd.WithFlags(
			topicFlag("the topic to produce to (instead of TOPIC)"),
			&ucli.StringFlag{Name: "key-separator", Usage: "split each line into key and value at the first SEP (a line without it is an error)"},
			&ucli.StringFlag{Name: "acks", Usage: "acknowledgements: all (-1), 1 or 0", Value: "all"},
			&ucli.IntFlag{Name: "partition", Usage: "produce every record to this partition (-1: the default key-hash partitioner)", Value: -1},
			&ucli.StringFlag{Name: "compression", Usage: "none, gzip, snappy, lz4 or zstd", Value: "none"},
		),
		Action: runProduce,
	}
}

func runProduce(c *ucli.Context) error {
	topic, err := oneNameArg(c, "topic", "TOPIC")
	if err != nil {
		return err
	}
	opts, err := clientcmd.ProducerSettings{Acks: c.String("acks"), Compression: c.String("compression")}.Options()
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
	cl, err := clientcmd.NewClient(c, append(opts,
		kgo.AllowAutoTopicCreation(), // the broker's auto.create.topics.enable decides
		kgo.RecordDeliveryTimeout(c.Duration("timeout")),
		kgo.UnknownTopicRetries(2),
	)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := clientcmd.CheckTopic(c.Context, cl, topic, int32(partition), true); err != nil {
		return err
	}
	ctx, stop := clientcmd.SignalContext(c.Context)
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

// lineProducer produces one record per input line and keeps delivery results. Promises
// run on kgo's goroutines; mu guards the counters.
type lineProducer struct {
	client       *clientcmd.Client
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
		return fmt.Errorf("flushing records: %w", p.client.Explain(err))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed > 0 {
		return fmt.Errorf("%d of %d records failed: %w", p.failed, p.sent, p.client.Explain(p.firstErr))
	}
	return nil
}
