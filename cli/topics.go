package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// topicsCommand is `petrel topics`: create, list, describe and delete topics, like
// kafka-topics.sh.
func topicsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "topics",
		Usage: "create, list, describe and delete topics",
		Subcommands: []*ucli.Command{
			{
				Name:      "create",
				Usage:     "create a topic",
				ArgsUsage: "TOPIC",
				Flags: withClientFlags(
					&ucli.IntFlag{Name: "partitions", Usage: "number of partitions (-1: the broker's num.partitions)", Value: -1},
					&ucli.IntFlag{Name: "replication-factor", Usage: "replicas per partition (-1: the broker's default.replication.factor)", Value: -1},
					repeatableFlag("config", "a topic config override, key=value, the value taken whole (repeatable)"),
					&ucli.BoolFlag{Name: "if-not-exists", Usage: "succeed if the topic already exists"},
				),
				Action: runTopicsCreate,
			},
			{
				Name:   "list",
				Usage:  "list topic names, one per line",
				Flags:  withClientFlags(&ucli.BoolFlag{Name: "exclude-internal", Usage: "leave out internal topics"}),
				Action: runTopicsList,
			},
			{
				Name:      "describe",
				Usage:     "describe topics (all when none are named) in kafka-topics.sh's format",
				ArgsUsage: "[TOPIC...]",
				Flags:     withClientFlags(&ucli.BoolFlag{Name: "exclude-internal", Usage: "leave out internal topics when describing all"}),
				Action:    runTopicsDescribe,
			},
			{
				Name:      "alter",
				Usage:     "add partitions to a topic, as kafka-topics.sh --alter",
				ArgsUsage: "TOPIC",
				Flags: withClientFlags(
					&ucli.IntFlag{Name: "partitions", Usage: "the new, larger number of partitions (required)"},
					&ucli.StringFlag{Name: "replica-assignment", Usage: "replicas of each new partition: 1:2,2:0 (partitions separated by commas, replicas by colons)"},
				),
				Action: runTopicsAlter,
			},
			{
				Name:      "delete",
				Usage:     "delete topics",
				ArgsUsage: "TOPIC...",
				Flags:     withClientFlags(&ucli.BoolFlag{Name: "if-exists", Usage: "succeed for topics that do not exist"}),
				Action:    runTopicsDelete,
			},
		},
	}
}

func runTopicsCreate(c *ucli.Context) error {
	topic, err := exactlyOneArg(c, "TOPIC")
	if err != nil {
		return err
	}
	configs, err := parseTopicConfigs(repeatedValues(c, "config"))
	if err != nil {
		return err
	}
	partitions, replication := c.Int("partitions"), c.Int("replication-factor")
	if partitions == 0 || partitions < -1 || partitions > 1<<31-1 {
		return fmt.Errorf("--partitions must be positive (or -1 for the broker default), got %d", partitions)
	}
	if replication == 0 || replication < -1 || replication > 1<<15-1 {
		return fmt.Errorf("--replication-factor must be between 1 and 32767 (or -1 for the broker default), got %d", replication)
	}
	if strings.Contains(topic, ".") && strings.Contains(topic, "_") {
		// kafka-topics.sh's warning: Kafka refuses a later topic whose name differs
		// from this one only in '.' versus '_'.
		fmt.Fprintln(c.App.ErrWriter, "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.")
	}
	cl, err := newKafkaClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := cl.requestContext(c.Context)
	defer cancel()
	resp, err := cl.admin().CreateTopic(ctx, int32(partitions), int16(replication), configs, topic)
	if errors.Is(err, kerr.TopicAlreadyExists) && c.Bool("if-not-exists") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create topic %q: %w", topic, cl.explain(kafkaError(err, resp.ErrMessage)))
	}
	_, err = fmt.Fprintf(c.App.Writer, "Created topic %s.\n", topic)
	return err
}

// parseTopicConfigs turns repeated key=value flags into CreateTopics configs.
func parseTopicConfigs(pairs []string) (map[string]*string, error) {
	configs := map[string]*string{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("bad --config %q: want key=value", kv)
		}
		if _, dup := configs[k]; dup {
			return nil, fmt.Errorf("--config %s given twice", k)
		}
		configs[k] = kmsg.StringPtr(v)
	}
	return configs, nil
}

func runTopicsList(c *ucli.Context) error {
	if _, err := commandArgs(c); err != nil {
		return err
	}
	cl, err := newKafkaClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := cl.requestContext(c.Context)
	defer cancel()
	topics, err := cl.admin().ListTopicsWithInternal(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", cl.explain(err))
	}
	if c.Bool("exclude-internal") {
		topics.FilterInternal()
	}
	var out strings.Builder
	for _, name := range topics.Names() {
		out.WriteString(name + "\n")
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
}

func runTopicsDescribe(c *ucli.Context) error {
	names, err := commandArgs(c)
	if err != nil {
		return err
	}
	names = dedupe(names)
	cl, err := newKafkaClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := cl.requestContext(c.Context)
	defer cancel()
	details, err := describeTopicDetails(ctx, cl, names, c.Bool("exclude-internal"))
	if err != nil {
		return err
	}
	configs, err := topicConfigs(ctx, cl, details)
	if err != nil {
		return err
	}
	var out strings.Builder
	for _, d := range details {
		writeTopicDescription(&out, d, configs[d.Topic])
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
}

// describeTopicDetails fetches metadata for the named topics (all topics when none are
// named), in the order given or sorted by name. A named topic that does not exist is an
// error.
func describeTopicDetails(ctx context.Context, cl *kafkaClient, names []string, excludeInternal bool) ([]kadm.TopicDetail, error) {
	topics, err := cl.admin().ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", cl.explain(err))
	}
	if len(names) == 0 {
		if excludeInternal {
			topics.FilterInternal()
		}
		names = topics.Names()
	}
	var missing []string
	details := make([]kadm.TopicDetail, 0, len(names))
	for _, name := range names {
		d := topics[name]
		if errors.Is(d.Err, kerr.UnknownTopicOrPartition) || (d.Err == nil && d.Topic == "") {
			missing = append(missing, strconv.Quote(name))
			continue
		}
		if d.Err != nil {
			return nil, fmt.Errorf("describe topic %q: %w", name, d.Err)
		}
		details = append(details, d)
	}
	switch len(missing) {
	case 0:
		return details, nil
	case 1:
		return nil, fmt.Errorf("topic %s does not exist", missing[0])
	default:
		return nil, fmt.Errorf("topics %s do not exist", strings.Join(missing, ", "))
	}
}

// topicConfigs returns, per topic, the configs that differ from the broker defaults
// (every source but DEFAULT_CONFIG, as kafka-topics.sh shows them), sorted by name.
func topicConfigs(ctx context.Context, cl *kafkaClient, details []kadm.TopicDetail) (map[string][]kadm.Config, error) {
	out := map[string][]kadm.Config{}
	if len(details) == 0 {
		return out, nil
	}
	names := make([]string, len(details))
	for i, d := range details {
		names[i] = d.Topic
	}
	resources, err := cl.admin().DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", cl.explain(err))
	}
	for _, r := range resources {
		if r.Err != nil {
			return nil, fmt.Errorf("describe configs of topic %q: %w", r.Name, kafkaError(r.Err, r.ErrMessage))
		}
		var set []kadm.Config
		for _, cfg := range r.Configs {
			if cfg.Source != kmsg.ConfigSourceDefaultConfig {
				set = append(set, cfg)
			}
		}
		sort.Slice(set, func(i, j int) bool { return set[i].Key < set[j].Key })
		out[r.Name] = set
	}
	return out, nil
}

// writeTopicDescription writes one topic the way kafka-topics.sh --describe does: a
// summary line, then one tab-indented line per partition, fields separated by tabs.
func writeTopicDescription(w *strings.Builder, d kadm.TopicDetail, configs []kadm.Config) {
	partitions := d.Partitions.Sorted()
	replicationFactor := 0
	if len(partitions) > 0 {
		replicationFactor = len(partitions[0].Replicas)
	}
	fmt.Fprintf(w, "Topic: %s", d.Topic)
	if d.ID != (kadm.TopicID{}) {
		fmt.Fprintf(w, "\tTopicId: %s", kafkaUUID(d.ID))
	}
	fmt.Fprintf(w, "\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
		len(partitions), replicationFactor, formatConfigs(configs))
	for _, p := range partitions {
		leader := "none"
		if p.Leader >= 0 {
			leader = strconv.Itoa(int(p.Leader))
		}
		fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\n",
			d.Topic, p.Partition, leader, joinIDs(p.Replicas), joinIDs(p.ISR))
	}
}

// formatConfigs joins configs as k=v,k=v; a sensitive value prints as null, as Kafka's
// tool prints it.
func formatConfigs(configs []kadm.Config) string {
	parts := make([]string, len(configs))
	for i, cfg := range configs {
		value := "null"
		if cfg.Value != nil {
			value = *cfg.Value
		}
		parts[i] = cfg.Key + "=" + value
	}
	return strings.Join(parts, ",")
}

// kafkaUUID prints a topic id as Kafka's Uuid.toString does: URL-safe base64 without
// padding (22 characters).
func kafkaUUID(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

func joinIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

func dedupe(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func runTopicsDelete(c *ucli.Context) error {
	names, err := commandArgs(c)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("topics delete needs at least one TOPIC")
	}
	names = dedupe(names)
	cl, err := newKafkaClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := cl.requestContext(c.Context)
	defer cancel()
	resps, err := cl.admin().DeleteTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("delete topics: %w", cl.explain(err))
	}
	var out strings.Builder
	var failures []string
	for _, name := range names {
		r, ok := resps[name]
		switch {
		case !ok:
			failures = append(failures, fmt.Sprintf("topic %q: missing from the broker's answer", name))
		case errors.Is(r.Err, kerr.UnknownTopicOrPartition) && c.Bool("if-exists"):
		case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
			failures = append(failures, fmt.Sprintf("topic %q does not exist", name))
		case r.Err != nil:
			failures = append(failures, fmt.Sprintf("topic %q: %v", name, kafkaError(r.Err, r.ErrMessage)))
		default:
			fmt.Fprintf(&out, "Deleted topic %s.\n", name)
		}
	}
	if _, err := io.WriteString(c.App.Writer, out.String()); err != nil {
		return err
	}
	if len(failures) > 0 {
		return fmt.Errorf("delete: %s", strings.Join(failures, "; "))
	}
	return nil
}
