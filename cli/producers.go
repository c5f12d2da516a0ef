package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

// producersCommand is `petrel producers describe`: a partition's active idempotent
// producers from its leader (DescribeProducers), in the columns of
// kafka-transactions.sh describe-producers.
func producersCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "producers",
		Usage: "inspect idempotent producers",
		Subcommands: []*ucli.Command{
			{
				Name:  "describe",
				Usage: "describe the producers of a partition, as kafka-transactions.sh describe-producers",
				Flags: withOutputFlags(
					&ucli.StringFlag{Name: "topic", Usage: "the topic", Required: true},
					&ucli.IntFlag{Name: "partition", Usage: "the partition", Required: true},
				),
				Action: runProducersDescribe,
			},
		},
	}
}

func runProducersDescribe(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	topic, partition := c.String("topic"), c.Int("partition")
	if topic == "" {
		return fmt.Errorf("--topic must name a topic")
	}
	if partition < 0 || partition > 1<<31-1 {
		return fmt.Errorf("--partition must be between 0 and 2147483647, got %d", partition)
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	set := kadm.TopicsSet{}
	set.Add(topic, int32(partition))
	described, err := cl.Admin().DescribeProducers(ctx, set)
	if err != nil {
		return fmt.Errorf("describe producers of %s-%d: %w", topic, partition, cl.Explain(err))
	}
	p, ok := described[topic].Partitions[int32(partition)]
	if !ok {
		return fmt.Errorf("describe producers of %s-%d: no answer for the partition", topic, partition)
	}
	if p.Err != nil {
		return fmt.Errorf("describe producers of %s-%d: %w", topic, partition, kafkaError(p.Err, p.ErrMessage))
	}
	if asJSON {
		type producer struct {
			ProducerID                    int64 `json:"producer_id"`
			ProducerEpoch                 int16 `json:"producer_epoch"`
			CoordinatorEpoch              int32 `json:"coordinator_epoch"`
			LastSequence                  int32 `json:"last_sequence"`
			LastTimestamp                 int64 `json:"last_timestamp"`
			CurrentTransactionStartOffset int64 `json:"current_transaction_start_offset"` // -1: none
		}
		listed := []producer{}
		for _, pr := range p.ActiveProducers.Sorted() {
			listed = append(listed, producer{pr.ProducerID, pr.ProducerEpoch, pr.CoordinatorEpoch, pr.LastSequence, pr.LastTimestamp, pr.CurrentTxnStartOffset})
		}
		return writeJSON(c.App.Writer, struct {
			Topic     string     `json:"topic"`
			Partition int        `json:"partition"`
			Producers []producer `json:"producers"`
		}{topic, partition, listed})
	}
	var out strings.Builder
	w := tabwriter.NewWriter(&out, 0, 0, 1, ' ', 0)
	fmt.Fprintln(w, "ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset")
	for _, pr := range p.ActiveProducers.Sorted() {
		fmt.Fprintln(w, strings.Join([]string{strconv.FormatInt(pr.ProducerID, 10), strconv.Itoa(int(pr.ProducerEpoch)),
			strconv.Itoa(int(pr.CoordinatorEpoch)), strconv.Itoa(int(pr.LastSequence)), strconv.FormatInt(pr.LastTimestamp, 10),
			strconv.FormatInt(pr.CurrentTxnStartOffset, 10)}, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
}
