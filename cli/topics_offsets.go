package cli

// `petrel topics offsets`: each partition's log start offset, high watermark and last
// stable offset (ListOffsets -2, -1 read_uncommitted, -1 read_committed), like rpk topic
// describe -p; with --time, kafka-get-offsets.sh's topic:partition:offset lines.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

func topicsOffsetsCommand() *ucli.Command {
	return &ucli.Command{
		Name: "offsets",
		Usage: "each partition's log start offset, high watermark (latest) and last stable offset; " +
			"with --time, kafka-get-offsets.sh's topic:partition:offset",
		ArgsUsage: "[TOPIC...]",
		Flags: withOutputFlags(
			topicFlag("a topic (repeatable, with or instead of TOPIC...; default every topic)"),
			&ucli.StringFlag{Name: "partitions", Usage: "only these partitions: 0,1,2"},
			&ucli.StringFlag{Name: "time", Usage: "as kafka-get-offsets.sh: latest (-1), earliest (-2), max-timestamp (-3), " +
				"or a timestamp in ms (the first offset at or after it)"},
			&ucli.BoolFlag{Name: "exclude-internal-topics", Usage: "leave out internal topics when listing every topic"},
		),
		Action: runTopicsOffsets,
	}
}

// partitionOffsets is one partition of `topics offsets -o json`; a null offset could not
// be listed (error says why).
type partitionOffsets struct {
	Topic            string  `json:"topic"`
	Partition        int32   `json:"partition"`
	Leader           int32   `json:"leader"` // -1: none
	LogStartOffset   *int64  `json:"log_start_offset"`
	HighWatermark    *int64  `json:"high_watermark"`
	LastStableOffset *int64  `json:"last_stable_offset"`
	Error            *string `json:"error"`
}

// timedOffset is one partition of `topics offsets --time T -o json`.
type timedOffset struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    *int64  `json:"offset"`    // null: none found
	Timestamp *int64  `json:"timestamp"` // the record's timestamp, for a timestamp or max-timestamp query
	Error     *string `json:"error"`
}

// offsetSpec is --time: -1 latest, -2 earliest, -3 max timestamp, or a timestamp (>= 0).
func parseOffsetTime(s string) (int64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "latest", "-1":
		return -1, nil
	case "earliest", "-2":
		return -2, nil
	case "max-timestamp", "-3":
		return -3, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad --time %q: want latest (-1), earliest (-2), max-timestamp (-3) or a timestamp in ms", s)
	}
	return n, nil
}

// parsePartitionList parses --partitions 0,1,2 (nil: every partition).
func parsePartitionList(s string) ([]int32, error) {
	var out []int32
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		n, err := strconv.ParseInt(part, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad --partitions %q: want partition numbers like 0,1,2", s)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

func runTopicsOffsets(c *ucli.Context) error {
	names, err := namesArgs(c, "topic")
	if err != nil {
		return err
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	only, err := parsePartitionList(c.String("partitions"))
	if err != nil {
		return err
	}
	timed := c.IsSet("time")
	var at int64
	if timed {
		if at, err = parseOffsetTime(c.String("time")); err != nil {
			return err
		}
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	details, err := describeTopicDetails(ctx, cl, names, c.Bool("exclude-internal-topics"))
	if err != nil {
		return err
	}
	var topics []string
	var partitions []kadm.PartitionDetail
	for _, d := range details {
		topics = append(topics, d.Topic)
		for _, p := range d.Partitions.Sorted() {
			if only == nil || slices.Contains(only, p.Partition) {
				partitions = append(partitions, p)
			}
		}
	}
	if len(only) > 0 && len(partitions) == 0 {
		return fmt.Errorf("no partition %s in %s", joinIDs(only), strings.Join(topics, ", "))
	}
	adm := cl.Admin()
	if timed {
		return printTimedOffsets(ctx, c, cl, adm, topics, partitions, at, asJSON)
	}
	lists := []func(context.Context, ...string) (kadm.ListedOffsets, error){adm.ListStartOffsets, adm.ListEndOffsets, adm.ListCommittedOffsets}
	var listed [3]kadm.ListedOffsets
	for i, list := range lists {
		if len(topics) == 0 {
			break
		}
		if listed[i], err = list(ctx, topics...); err != nil && len(listed[i]) == 0 {
			return fmt.Errorf("list offsets: %w", cl.Explain(err))
		}
	}
	rows := []partitionOffsets{}
	for _, p := range partitions {
		row := partitionOffsets{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader}
		fields := []**int64{&row.LogStartOffset, &row.HighWatermark, &row.LastStableOffset}
		for i := range listed {
			o, ok := listed[i].Lookup(p.Topic, p.Partition)
			switch {
			case !ok:
				row.Error = stringPtr("no answer for the partition")
			case o.Err != nil:
				row.Error = stringPtr(describeKafkaError(o.Err))
			default:
				v := o.Offset
				*fields[i] = &v
			}
		}
		rows = append(rows, row)
	}
	if asJSON {
		return writeJSON(c.App.Writer, struct {
			Partitions []partitionOffsets `json:"partitions"`
		}{rows})
	}
	var out strings.Builder
	tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tLOG-START-OFFSET\tHIGH-WATERMARK\tLAST-STABLE-OFFSET")
	for _, r := range rows {
		leader := "none"
		if r.Leader >= 0 {
			leader = strconv.Itoa(int(r.Leader))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Topic, r.Partition, leader,
			optOffset(r.LogStartOffset), optOffset(r.HighWatermark), optOffset(r.LastStableOffset))
	}
	tw.Flush()
	if _, err := io.WriteString(c.App.Writer, out.String()); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Error != nil {
			fmt.Fprintf(c.App.ErrWriter, "Warning: %s-%d: %s\n", r.Topic, r.Partition, *r.Error)
		}
	}
	return nil
}

// printTimedOffsets is kafka-get-offsets.sh: one topic:partition:offset line per
// partition (the offset empty when there is none); partitions that fail are skipped
// with a warning.
func printTimedOffsets(ctx context.Context, c *ucli.Context, cl *clientcmd.Client, adm *kadm.Client, topics []string, partitions []kadm.PartitionDetail, at int64, asJSON bool) error {
	var listed kadm.ListedOffsets
	var err error
	switch at {
	case -1:
		listed, err = adm.ListEndOffsets(ctx, topics...)
	case -2:
		listed, err = adm.ListStartOffsets(ctx, topics...)
	case -3:
		listed, err = adm.ListMaxTimestampOffsets(ctx, topics...)
	default:
		listed, err = adm.ListOffsetsAfterMilli(ctx, at, topics...)
	}
	if err != nil && len(listed) == 0 {
		return fmt.Errorf("list offsets: %w", cl.Explain(err))
	}
	rows := []timedOffset{}
	var out strings.Builder
	var failed []string
	for _, p := range partitions {
		row := timedOffset{Topic: p.Topic, Partition: p.Partition}
		o, ok := listed.Lookup(p.Topic, p.Partition)
		switch {
		case !ok:
			row.Error = stringPtr("no answer for the partition")
		case o.Err != nil:
			row.Error = stringPtr(describeKafkaError(o.Err))
		default:
			if o.Offset >= 0 {
				v := o.Offset
				row.Offset = &v
			}
			if o.Timestamp >= 0 && at != -1 && at != -2 {
				ts := o.Timestamp
				row.Timestamp = &ts
			}
		}
		rows = append(rows, row)
		if row.Error != nil {
			failed = append(failed, fmt.Sprintf("%s-%d (%s)", p.Topic, p.Partition, *row.Error))
			continue
		}
		offset := "" // kafka-get-offsets.sh prints nothing after the colon when there is none
		if row.Offset != nil {
			offset = strconv.FormatInt(*row.Offset, 10)
		}
		fmt.Fprintf(&out, "%s:%d:%s\n", p.Topic, p.Partition, offset)
	}
	if asJSON {
		return writeJSON(c.App.Writer, struct {
			Time       int64         `json:"time"`
			Partitions []timedOffset `json:"partitions"`
		}{at, rows})
	}
	if _, err := io.WriteString(c.App.Writer, out.String()); err != nil {
		return err
	}
	if len(failed) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "Skip getting offsets for: %s\n", strings.Join(failed, ", "))
		if len(failed) == len(partitions) {
			return errors.New("no offsets could be listed")
		}
	}
	return nil
}

// optOffset prints a known offset, or "-".
func optOffset(o *int64) string {
	if o == nil {
		return "-"
	}
	return strconv.FormatInt(*o, 10)
}

func stringPtr(s string) *string { return &s }
