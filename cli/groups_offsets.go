package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

// topicSpec is one --topic: a topic and its partitions (nil: every partition).
type topicSpec struct {
	topic      string
	partitions []int32
}

// parseTopicSpecs parses --topic values as kafka-consumer-groups.sh does: "topic" or
// "topic:0,1,2".
func parseTopicSpecs(values []string) ([]topicSpec, error) {
	var specs []topicSpec
	for _, v := range values {
		topic, parts, hasParts := strings.Cut(v, ":")
		topic = strings.TrimSpace(topic)
		if topic == "" {
			return nil, fmt.Errorf("bad --topic %q: want TOPIC or TOPIC:PARTITION,...", v)
		}
		spec := topicSpec{topic: topic}
		if hasParts {
			for _, p := range strings.Split(parts, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("bad --topic %q: partition %q is not a non-negative number", v, p)
				}
				spec.partitions = append(spec.partitions, int32(n))
			}
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// resolvePartitions expands specs into a set of existing partitions, listing the
// partitions of topics named without any. A topic or partition that does not exist is
// an error.
func resolvePartitions(ctx context.Context, cl *clientcmd.Client, specs []topicSpec) (kadm.TopicsSet, error) {
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		names = append(names, s.topic)
	}
	details, err := describeTopicDetails(ctx, cl, dedupe(names), false)
	if err != nil {
		return nil, err
	}
	byName := map[string]kadm.TopicDetail{}
	for _, d := range details {
		byName[d.Topic] = d
	}
	set := kadm.TopicsSet{}
	for _, s := range specs {
		d := byName[s.topic]
		if s.partitions == nil {
			for p := range d.Partitions {
				set.Add(s.topic, p)
			}
			continue
		}
		for _, p := range s.partitions {
			if _, ok := d.Partitions[p]; !ok {
				return nil, fmt.Errorf("partition %d of topic %q does not exist", p, s.topic)
			}
			set.Add(s.topic, p)
		}
	}
	return set, nil
}

// resetPlan is how reset-offsets computes each partition's new offset.
type resetPlan struct {
	name  string // the flag, for messages
	value int64  // --to-offset, --shift-by, or --to-datetime's Unix milliseconds
}

// parseResetPlan reads the one --to-* or --shift-by flag given.
func parseResetPlan(c *ucli.Context) (resetPlan, error) {
	var plans []resetPlan
	for _, name := range []string{"to-earliest", "to-latest", "to-current"} {
		if c.Bool(name) {
			plans = append(plans, resetPlan{name: name})
		}
	}
	if c.IsSet("to-offset") {
		n, err := strconv.ParseInt(c.String("to-offset"), 10, 64)
		if err != nil || n < 0 {
			return resetPlan{}, fmt.Errorf("bad --to-offset %q: want a non-negative number", c.String("to-offset"))
		}
		plans = append(plans, resetPlan{name: "to-offset", value: n})
	}
	if c.IsSet("shift-by") {
		n, err := strconv.ParseInt(c.String("shift-by"), 10, 64)
		if err != nil {
			return resetPlan{}, fmt.Errorf("bad --shift-by %q: want a number", c.String("shift-by"))
		}
		plans = append(plans, resetPlan{name: "shift-by", value: n})
	}
	if c.IsSet("to-datetime") {
		at, err := parseKafkaDateTime(c.String("to-datetime"))
		if err != nil {
			return resetPlan{}, err
		}
		plans = append(plans, resetPlan{name: "to-datetime", value: at.UnixMilli()})
	}
	switch len(plans) {
	case 1:
		return plans[0], nil
	case 0:
		return resetPlan{}, errors.New("reset-offsets needs one of --to-earliest, --to-latest, --to-current, --to-offset, --to-datetime, --shift-by")
	default:
		return resetPlan{}, errors.New("reset-offsets takes only one of --to-earliest, --to-latest, --to-current, --to-offset, --to-datetime, --shift-by")
	}
}

// parseResetScope checks reset-offsets' execution (--dry-run, the default, or
// --execute) and reads its scope: the --topic specs, none with --all-topics.
func parseResetScope(c *ucli.Context) ([]topicSpec, error) {
	if c.Bool("execute") && c.Bool("dry-run") {
		return nil, errors.New("--execute and --dry-run cannot be used together")
	}
	specs, err := parseTopicSpecs(c.StringSlice("topic"))
	if err != nil {
		return nil, err
	}
	if (len(specs) == 0) == !c.Bool("all-topics") {
		return nil, errors.New("reset-offsets needs either --topic or --all-topics")
	}
	return specs, nil
}

// parseKafkaDateTime parses --to-datetime as kafka-consumer-groups.sh does:
// YYYY-MM-DDTHH:mm:SS.sss with an optional zone (Z, +01:00, +0100); without a zone the
// time is UTC. The milliseconds may be left out.
func parseKafkaDateTime(s string) (time.Time, error) {
	layouts := []string{
		"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05.000",
		"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05",
	}
	for _, l := range layouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad --to-datetime %q: want YYYY-MM-DDTHH:mm:SS.sss, optionally with a zone such as Z or +01:00", s)
}

func runGroupsResetOffsets(c *ucli.Context) error {
	group, err := oneNameArg(c, "group", "GROUP")
	if err != nil {
		return err
	}
	plan, err := parseResetPlan(c)
	if err != nil {
		return err
	}
	specs, err := parseResetScope(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()

	// As in Kafka, offsets are reset only while no consumer is in the group.
	described, err := describeGroupViews(ctx, adm, []string{group})
	if err != nil {
		return fmt.Errorf("describe group %q: %w", group, cl.Explain(err))
	}
	d, ok := described[group]
	if !ok {
		return fmt.Errorf("describe group %q: no answer from its coordinator", group)
	}
	if err := d.describeError(); err != nil {
		return err
	}
	if d.state != stateEmpty && d.state != stateDead {
		return fmt.Errorf("assignments can only be reset if the group '%s' is inactive, but the current state is %s", group, d.state)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("fetch offsets of group %q: %w", group, cl.Explain(err))
	}
	if c.Bool("all-topics") {
		for t := range committed {
			specs = append(specs, topicSpec{topic: t})
		}
		if len(specs) == 0 {
			return fmt.Errorf("group %q has no committed offsets", group)
		}
	}
	offsets, err := planResetOffsets(ctx, cl, plan, specs, committed)
	if err != nil {
		return err
	}
	if c.Bool("execute") {
		resps, err := adm.CommitOffsets(ctx, group, offsets)
		if err != nil {
			return fmt.Errorf("commit offsets of group %q: %w", group, cl.Explain(err))
		}
		if err := resps.Error(); err != nil {
			return fmt.Errorf("commit offsets of group %q: %s", group, describeKafkaError(err))
		}
	}
	return writeResetOffsets(c.App.Writer, group, offsets)
}

// writeResetOffsets prints the new offsets of group as Kafka's tools' --reset-offsets
// do (OffsetsUtils.printOffsetsToReset): GROUP, TOPIC, PARTITION, NEW-OFFSET.
func writeResetOffsets(w io.Writer, group string, offsets kadm.Offsets) error {
	var out strings.Builder
	t := table{columns: []column{{"GROUP", 30, false}, {"TOPIC", 30, false}, {"PARTITION", 10, false}, {"NEW-OFFSET", 0, false}}}
	for _, o := range offsets.Sorted() {
		t.add(group, o.Topic, strconv.Itoa(int(o.Partition)), strconv.FormatInt(o.At, 10))
	}
	out.WriteByte('\n')
	t.write(&out)
	_, err := io.WriteString(w, out.String())
	return err
}

// planResetOffsets resolves specs to existing partitions and computes plan's new
// offset for each (computeResetOffsets).
func planResetOffsets(ctx context.Context, cl *clientcmd.Client, plan resetPlan, specs []topicSpec, committed kadm.OffsetResponses) (kadm.Offsets, error) {
	partitions, err := resolvePartitions(ctx, cl, specs)
	if err != nil {
		return nil, err
	}
	offsets, err := computeResetOffsets(ctx, cl.Admin(), plan, partitions, committed)
	if err != nil {
		return nil, cl.Explain(err)
	}
	return offsets, nil
}

// computeResetOffsets computes plan's new offset for each partition, kept within the
// log's earliest and latest offsets, as Kafka's tool does.
func computeResetOffsets(ctx context.Context, adm *kadm.Client, plan resetPlan, partitions kadm.TopicsSet, committed kadm.OffsetResponses) (kadm.Offsets, error) {
	topics := partitions.Topics()
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list earliest offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list latest offsets: %w", err)
	}
	var byTime kadm.ListedOffsets
	if plan.name == "to-datetime" {
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, plan.value, topics...); err != nil {
			return nil, fmt.Errorf("list offsets by time: %w", err)
		}
	}
	lookup := func(l kadm.ListedOffsets, what, t string, p int32) (int64, error) {
		o, ok := l.Lookup(t, p)
		if !ok {
			return 0, fmt.Errorf("no %s offset for %s-%d", what, t, p)
		}
		if o.Err != nil {
			return 0, fmt.Errorf("%s offset of %s-%d: %s", what, t, p, describeKafkaError(o.Err))
		}
		return o.Offset, nil
	}
	out := kadm.Offsets{}
	for _, tp := range partitions.Sorted() {
		for _, p := range tp.Partitions {
			earliest, err := lookup(starts, "earliest", tp.Topic, p)
			if err != nil {
				return nil, err
			}
			latest, err := lookup(ends, "latest", tp.Topic, p)
			if err != nil {
				return nil, err
			}
			current := int64(-1)
			if o, ok := committed.Lookup(tp.Topic, p); ok && o.Err == nil {
				current = o.At
			}
			var target int64
			switch plan.name {
			case "to-earliest":
				target = earliest
			case "to-latest":
				target = latest
			case "to-offset":
				target = plan.value
			case "to-current", "shift-by":
				if current < 0 {
					return nil, fmt.Errorf("cannot --%s partition %s-%d: the group has no committed offset for it", plan.name, tp.Topic, p)
				}
				target = current
				if plan.name == "shift-by" {
					target = current + plan.value
				}
			case "to-datetime":
				if target, err = lookup(byTime, "by-time", tp.Topic, p); err != nil {
					return nil, err
				}
				if target < 0 {
					target = latest
				}
			}
			target = min(max(target, earliest), latest)
			out.Add(kadm.Offset{Topic: tp.Topic, Partition: p, At: target, LeaderEpoch: -1})
		}
	}
	return out, nil
}

func runGroupsDeleteOffsets(c *ucli.Context) error {
	group, err := oneNameArg(c, "group", "GROUP")
	if err != nil {
		return err
	}
	specs, err := parseTopicSpecs(c.StringSlice("topic"))
	if err != nil {
		return err
	}
	if len(specs) == 0 {
		return errors.New("delete-offsets needs --topic")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	partitions, err := resolvePartitions(ctx, cl, specs)
	if err != nil {
		return err
	}
	resps, err := cl.Admin().DeleteOffsets(ctx, group, partitions)
	if err != nil {
		return fmt.Errorf("delete offsets of group %q: %s", group, describeKafkaError(cl.Explain(err)))
	}
	topics := partitions.Topics()
	var failed bool
	t := table{columns: []column{{"TOPIC", 30, false}, {"PARTITION", 15, false}, {"STATUS", 0, false}}}
	for _, tp := range partitions.Sorted() {
		ps := append([]int32(nil), tp.Partitions...)
		sort.Slice(ps, func(a, b int) bool { return ps[a] < ps[b] })
		for _, p := range ps {
			status := "Successful"
			if perr, ok := resps.Lookup(tp.Topic, p); !ok {
				status, failed = "Error: missing from the broker's answer", true
			} else if perr != nil {
				status, failed = "Error: "+describeKafkaError(perr), true
			}
			t.add(tp.Topic, strconv.Itoa(int(p)), status)
		}
	}
	var out strings.Builder
	verb := "succeed"
	if failed {
		verb = "failed"
	}
	// kafka-consumer-groups.sh --delete-offsets's wording.
	fmt.Fprintf(&out, "Request %s for deleting offsets with topic %s group %s\n\n", verb, strings.Join(topics, ", "), group)
	t.write(&out)
	if _, err := io.WriteString(c.App.Writer, out.String()); err != nil {
		return err
	}
	if failed {
		return fmt.Errorf("some offsets of group %q were not deleted", group)
	}
	return nil
}
