package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

// transactionsCommand is `petrel transactions list | describe | abort | find-hanging`,
// in the columns of kafka-transactions.sh. All are plain admin requests
// (ListTransactions, DescribeTransactions, DescribeProducers, WriteTxnMarkers), so they
// work against Apache Kafka too.
func transactionsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "transactions",
		Usage: "list, describe, find hanging and abort transactions, as kafka-transactions.sh",
		Subcommands: []*ucli.Command{
			{
				Name:   "list",
				Usage:  "list the transactional ids known to their coordinators",
				Flags:  withOutputFlags(),
				Action: runTransactionsList,
			},
			{
				Name:  "describe",
				Usage: "describe the state of one transactional id",
				Flags: withOutputFlags(
					&ucli.StringFlag{Name: "transactional-id", Usage: "the transactional id", Required: true},
				),
				Action: runTransactionsDescribe,
			},
			transactionsAbortCommand(),
			transactionsFindHangingCommand(),
		},
	}
}

func runTransactionsList(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	listed, err := cl.Admin().ListTransactions(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("list transactions: %w", cl.Explain(err))
	}
	if asJSON {
		type transaction struct {
			TransactionalID string `json:"transactional_id"`
			Coordinator     int32  `json:"coordinator"`
			ProducerID      int64  `json:"producer_id"`
			State           string `json:"state"`
		}
		txns := []transaction{}
		for _, l := range listed.Sorted() {
			txns = append(txns, transaction{l.TxnID, l.Coordinator, l.ProducerID, l.State})
		}
		return writeJSON(c.App.Writer, struct {
			Transactions []transaction `json:"transactions"`
		}{txns})
	}
	var out strings.Builder
	w := tabwriter.NewWriter(&out, 0, 0, 1, ' ', 0)
	fmt.Fprintln(w, "TransactionalId\tCoordinator\tProducerId\tTransactionState")
	for _, l := range listed.Sorted() {
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", l.TxnID, l.Coordinator, l.ProducerID, l.State)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
}

func runTransactionsDescribe(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	id := c.String("transactional-id")
	if id == "" {
		return fmt.Errorf("--transactional-id must name a transactional id")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	described, err := cl.Admin().DescribeTransactions(ctx, id)
	if err != nil {
		return fmt.Errorf("describe transaction %s: %w", id, cl.Explain(err))
	}
	d, ok := described[id]
	if !ok {
		return fmt.Errorf("describe transaction %s: no answer from its coordinator", id)
	}
	if d.Err != nil {
		return fmt.Errorf("describe transaction %s: %s", id, describeKafkaError(d.Err))
	}
	if asJSON {
		type partition struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
		}
		parts := []partition{}
		for _, tp := range d.Topics.Sorted() {
			for _, p := range tp.Partitions {
				parts = append(parts, partition{tp.Topic, p})
			}
		}
		var start *int64
		if d.StartTimestamp >= 0 {
			start = &d.StartTimestamp
		}
		return writeJSON(c.App.Writer, struct {
			Coordinator     int32       `json:"coordinator"`
			TransactionalID string      `json:"transactional_id"`
			ProducerID      int64       `json:"producer_id"`
			ProducerEpoch   int16       `json:"producer_epoch"`
			State           string      `json:"state"`
			TimeoutMs       int32       `json:"timeout_ms"`
			StartTimeMs     *int64      `json:"start_time_ms"` // null: no transaction open
			Partitions      []partition `json:"partitions"`
		}{d.Coordinator, d.TxnID, d.ProducerID, d.ProducerEpoch, d.State, d.TimeoutMillis, start, parts})
	}
	var out strings.Builder
	w := tabwriter.NewWriter(&out, 0, 0, 1, ' ', 0)
	fmt.Fprintln(w, "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions")
	start, duration := "None", "None"
	if d.StartTimestamp >= 0 {
		start = strconv.FormatInt(d.StartTimestamp, 10)
		duration = strconv.FormatInt(time.Now().UnixMilli()-d.StartTimestamp, 10)
	}
	fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", d.Coordinator, d.TxnID, d.ProducerID, d.ProducerEpoch, d.State,
		d.TimeoutMillis, start, duration, topicPartitionList(d.Topics))
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
}

// topicPartitionList prints partitions as kafka-transactions.sh does: topic-partition,
// comma-separated (by topic, then partition).
func topicPartitionList(set kadm.TopicsSet) string {
	var out []string
	for _, tp := range set.Sorted() {
		for _, p := range tp.Partitions {
			out = append(out, tp.Topic+"-"+strconv.Itoa(int(p)))
		}
	}
	return strings.Join(out, ",")
}
