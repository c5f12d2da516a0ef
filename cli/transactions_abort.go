package cli

// `petrel transactions abort` and `find-hanging`, shaped like kafka-transactions.sh
// (KIP-664): find the open transactions that hold a partition's last stable offset
// back (DescribeProducers), and abort one by writing its abort marker to the partition
// leader (WriteTxnMarkers), as Kafka's Admin.abortTransaction does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

func transactionsAbortCommand() *ucli.Command {
	return &ucli.Command{
		Name: "abort",
		Usage: "abort an open transaction on one partition: by --start-offset (its producer found with DescribeProducers), " +
			"or by --producer-id, --producer-epoch and --coordinator-epoch",
		Flags: clientcmd.WithFlags(
			&ucli.StringFlag{Name: "topic", Usage: "the partition's topic", Required: true},
			&ucli.IntFlag{Name: "partition", Usage: "the partition", Value: -1},
			&ucli.Int64Flag{Name: "start-offset", Usage: "the first offset of the open transaction to abort", Value: -1},
			&ucli.Int64Flag{Name: "producer-id", Usage: "the producer id of the transaction", Value: -1},
			&ucli.IntFlag{Name: "producer-epoch", Usage: "the producer epoch of the transaction", Value: -1},
			&ucli.IntFlag{Name: "coordinator-epoch", Usage: "the coordinator epoch of the transaction", Value: -1},
		),
		Action: runTransactionsAbort,
	}
}

func transactionsFindHangingCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "find-hanging",
		Usage: "list open transactions older than --max-transaction-timeout on the partitions a broker leads, or of a topic",
		Flags: withOutputFlags(
			&ucli.IntFlag{Name: "broker-id", Usage: "the broker whose led partitions to search", Value: -1},
			&ucli.StringFlag{Name: "topic", Usage: "the topic to search"},
			&ucli.IntFlag{Name: "partition", Usage: "the partition of --topic to search", Value: -1},
			&ucli.IntFlag{Name: "max-transaction-timeout", Usage: "minutes after which an open transaction counts as hanging (transaction.max.timeout.ms)", Value: 15},
		),
		Action: runTransactionsFindHanging,
	}
}

// abortSpec names the transaction to abort on one partition (Kafka's
// AbortTransactionSpec).
type abortSpec struct {
	topic            string
	partition        int32
	producerID       int64
	producerEpoch    int16
	coordinatorEpoch int32
}

// abortSpecFromFlags checks abort's flags: the partition and either --start-offset or
// all three of --producer-id, --producer-epoch and --coordinator-epoch.
func abortSpecFromFlags(c *ucli.Context) (spec abortSpec, startOffset int64, err error) {
	spec.topic = c.String("topic")
	partition := c.Int("partition")
	if spec.topic == "" {
		return spec, -1, errors.New("--topic must name a topic")
	}
	if partition < 0 || partition > 1<<31-1 {
		return spec, -1, fmt.Errorf("--partition is required: between 0 and 2147483647, got %d", partition)
	}
	spec.partition = int32(partition)
	startOffset = c.Int64("start-offset")
	byProducer := c.IsSet("producer-id") || c.IsSet("producer-epoch") || c.IsSet("coordinator-epoch")
	switch {
	case c.IsSet("start-offset") && byProducer:
		return spec, -1, errors.New("give either --start-offset or --producer-id, --producer-epoch and --coordinator-epoch, not both")
	case c.IsSet("start-offset"):
		if startOffset < 0 {
			return spec, -1, fmt.Errorf("--start-offset must be 0 or more, got %d", startOffset)
		}
		return spec, startOffset, nil
	case !byProducer:
		return spec, -1, errors.New("give --start-offset, or --producer-id, --producer-epoch and --coordinator-epoch")
	}
	id, epoch, coord := c.Int64("producer-id"), c.Int("producer-epoch"), c.Int("coordinator-epoch")
	switch {
	case id < 0:
		return spec, -1, fmt.Errorf("--producer-id must be 0 or more, got %d", id)
	case epoch < 0 || epoch > 1<<15-1:
		return spec, -1, fmt.Errorf("--producer-epoch must be between 0 and 32767, got %d", epoch)
	case coord < 0 || coord > 1<<31-1:
		return spec, -1, fmt.Errorf("--coordinator-epoch must be between 0 and 2147483647, got %d", coord)
	}
	spec.producerID, spec.producerEpoch, spec.coordinatorEpoch = id, int16(epoch), int32(coord)
	return spec, -1, nil
}

func runTransactionsAbort(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	spec, startOffset, err := abortSpecFromFlags(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	name := fmt.Sprintf("%s-%d", spec.topic, spec.partition)
	if startOffset >= 0 {
		if spec, err = findOpenTransaction(ctx, cl, adm, spec, startOffset); err != nil {
			return err
		}
	}
	set := kadm.TopicsSet{}
	set.Add(spec.topic, spec.partition)
	resps, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: spec.producerID, ProducerEpoch: spec.producerEpoch,
		CoordinatorEpoch: spec.coordinatorEpoch, Topics: set})
	if err != nil {
		return fmt.Errorf("abort the transaction of producer %d on %s: %w", spec.producerID, name, cl.Explain(err))
	}
	answered := false
	for _, r := range resps {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				answered = true
				if p.Err != nil {
					return fmt.Errorf("abort the transaction of producer %d on %s: %s", spec.producerID, name, describeKafkaError(p.Err))
				}
			}
		}
	}
	if !answered {
		return fmt.Errorf("abort the transaction of producer %d on %s: no answer for the partition", spec.producerID, name)
	}
	fmt.Fprintf(c.App.Writer, "Aborted the transaction of producer %d (epoch %d) on %s\n", spec.producerID, spec.producerEpoch, name)
	return nil
}

// findOpenTransaction fills spec with the producer whose open transaction on the
// partition starts at startOffset (Kafka's tool: its epoch, and its coordinator epoch,
// 0 when unknown).
func findOpenTransaction(ctx context.Context, cl *clientcmd.Client, adm *kadm.Client, spec abortSpec, startOffset int64) (abortSpec, error) {
	name := fmt.Sprintf("%s-%d", spec.topic, spec.partition)
	set := kadm.TopicsSet{}
	set.Add(spec.topic, spec.partition)
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return spec, fmt.Errorf("describe producers of %s: %w", name, cl.Explain(err))
	}
	p, ok := described[spec.topic].Partitions[spec.partition]
	if !ok {
		return spec, fmt.Errorf("describe producers of %s: no answer for the partition", name)
	}
	if p.Err != nil {
		return spec, fmt.Errorf("describe producers of %s: %w", name, kafkaError(p.Err, p.ErrMessage))
	}
	for _, pr := range p.ActiveProducers.Sorted() {
		if pr.CurrentTxnStartOffset == startOffset {
			spec.producerID, spec.producerEpoch, spec.coordinatorEpoch = pr.ProducerID, pr.ProducerEpoch, max(pr.CoordinatorEpoch, 0)
			return spec, nil
		}
	}
	return spec, fmt.Errorf("could not find any open transactions starting at offset %d on partition %s", startOffset, name)
}

func runTransactionsFindHanging(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	brokerID, topic, partition := c.Int("broker-id"), c.String("topic"), c.Int("partition")
	timeout := c.Int("max-transaction-timeout")
	switch {
	case c.IsSet("broker-id") == (topic != ""):
		return errors.New("give exactly one of --broker-id and --topic")
	case c.IsSet("broker-id") && brokerID < 0:
		return fmt.Errorf("--broker-id must be 0 or more, got %d", brokerID)
	case c.IsSet("partition") && topic == "":
		return errors.New("--partition needs --topic")
	case c.IsSet("partition") && (partition < 0 || partition > 1<<31-1):
		return fmt.Errorf("--partition must be between 0 and 2147483647, got %d", partition)
	case timeout < 0:
		return fmt.Errorf("--max-transaction-timeout must be 0 or more minutes, got %d", timeout)
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	var topics []string
	if topic != "" {
		topics = []string{topic}
	}
	details, err := adm.ListTopicsWithInternal(ctx, topics...)
	if err != nil {
		return fmt.Errorf("list topics: %w", cl.Explain(err))
	}
	set := kadm.TopicsSet{}
	for _, t := range details.Sorted() {
		if t.Err != nil {
			return fmt.Errorf("describe topic %s: %s", t.Topic, describeKafkaError(t.Err))
		}
		for _, p := range t.Partitions.Sorted() {
			if (!c.IsSet("partition") || p.Partition == int32(partition)) && (!c.IsSet("broker-id") || p.Leader == int32(brokerID)) {
				set.Add(t.Topic, p.Partition)
			}
		}
	}
	if c.IsSet("partition") && len(set) == 0 {
		return fmt.Errorf("topic %s has no partition %d", topic, partition)
	}
	var rows []kadm.DescribedProducer
	if len(set) > 0 {
		described, err := adm.DescribeProducers(ctx, set)
		if err != nil {
			return fmt.Errorf("describe producers: %w", cl.Explain(err))
		}
		for _, t := range described {
			for _, p := range t.Partitions {
				if p.Err != nil {
					fmt.Fprintf(c.App.ErrWriter, "Warning: describe producers of %s-%d: %s\n", p.Topic, p.Partition, describeKafkaError(p.Err))
					continue
				}
				for _, pr := range p.ActiveProducers {
					rows = append(rows, pr)
				}
			}
		}
	}
	return writeHanging(c.App.Writer, rows, time.Duration(timeout)*time.Minute, time.Now(), asJSON)
}

// writeHanging prints kafka-transactions.sh find-hanging's table: every open
// transaction whose producer last wrote longer ago than maxTimeout.
func writeHanging(out io.Writer, producers []kadm.DescribedProducer, maxTimeout time.Duration, now time.Time, asJSON bool) error {
	var hanging []kadm.DescribedProducer
	for _, pr := range producers {
		if pr.CurrentTxnStartOffset >= 0 && now.Sub(time.UnixMilli(pr.LastTimestamp)) > maxTimeout {
			hanging = append(hanging, pr)
		}
	}
	slices.SortFunc(hanging, func(a, b kadm.DescribedProducer) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.ProducerID - b.ProducerID)
	})
	if asJSON {
		type hangingTxn struct {
			Topic            string `json:"topic"`
			Partition        int32  `json:"partition"`
			ProducerID       int64  `json:"producer_id"`
			ProducerEpoch    int16  `json:"producer_epoch"`
			CoordinatorEpoch int32  `json:"coordinator_epoch"`
			StartOffset      int64  `json:"start_offset"`
			LastTimestamp    int64  `json:"last_timestamp"`
			DurationMinutes  int64  `json:"duration_minutes"`
		}
		list := []hangingTxn{}
		for _, pr := range hanging {
			list = append(list, hangingTxn{pr.Topic, pr.Partition, pr.ProducerID, pr.ProducerEpoch, pr.CoordinatorEpoch,
				pr.CurrentTxnStartOffset, pr.LastTimestamp, int64(now.Sub(time.UnixMilli(pr.LastTimestamp)) / time.Minute)})
		}
		return writeJSON(out, struct {
			Hanging []hangingTxn `json:"hanging"`
		}{list})
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 1, ' ', 0)
	fmt.Fprintln(w, "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)")
	for _, pr := range hanging {
		fmt.Fprintln(w, strings.Join([]string{pr.Topic, strconv.Itoa(int(pr.Partition)), strconv.FormatInt(pr.ProducerID, 10),
			strconv.Itoa(int(pr.ProducerEpoch)), strconv.Itoa(int(pr.CoordinatorEpoch)), strconv.FormatInt(pr.CurrentTxnStartOffset, 10),
			strconv.FormatInt(pr.LastTimestamp, 10), strconv.FormatInt(int64(now.Sub(time.UnixMilli(pr.LastTimestamp))/time.Minute), 10)}, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(out, sb.String())
	return err
}
