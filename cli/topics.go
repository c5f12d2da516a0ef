package cli

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// topicsCommand is `petrel topics`: create, list, describe, alter and delete topics,
// like kafka-topics.sh (whose --create, --list, --describe, --alter and --delete work as
// well: see normalizeArgs), and list their offsets like kafka-get-offsets.sh. Topics are
// named positionally or with --topic.
func topicsCommand() *ucli.Command {
	return &ucli.Command{
		Name:    "topics",
		Aliases: []string{"topic"},
		Usage:   "create, list, describe, alter and delete topics; list their offsets",
		Subcommands: []*ucli.Command{
			{
				Name:      "create",
				Usage:     "create a topic",
				ArgsUsage: "TOPIC",
				Flags: clientcmd.WithFlags(
					topicFlag("the topic to create (instead of TOPIC)"),
					&ucli.IntFlag{Name: "partitions", Usage: "number of partitions (-1: the broker's num.partitions)", Value: -1},
					&ucli.IntFlag{Name: "replication-factor", Usage: "replicas per partition (-1: the broker's default.replication.factor)", Value: -1},
					repeatableFlag("config", "a topic config override, key=value, the value taken whole (repeatable)"),
					&ucli.BoolFlag{Name: "if-not-exists", Usage: "succeed if the topic already exists"},
				),
				Action: runTopicsCreate,
			},
			{
				Name:  "list",
				Usage: "list topic names, one per line",
				Flags: withOutputFlags(
					topicFlag("list only these topics, if they exist (repeatable)"),
					&ucli.BoolFlag{Name: "exclude-internal", Usage: "leave out internal topics"},
				),
				Action: runTopicsList,
			},
			topicsDescribeCommand(),
			topicsOffsetsCommand(),
			{
				Name:      "alter",
				Usage:     "add partitions to a topic, as kafka-topics.sh --alter",
				ArgsUsage: "TOPIC",
				Flags: clientcmd.WithFlags(
					topicFlag("the topic to alter (instead of TOPIC)"),
					&ucli.IntFlag{Name: "partitions", Usage: "the new, larger number of partitions (required)"},
					&ucli.StringFlag{Name: "replica-assignment", Usage: "replicas of each new partition: 1:2,2:0 (partitions separated by commas, replicas by colons)"},
				),
				Action: runTopicsAlter,
			},
			{
				Name:      "delete",
				Usage:     "delete topics",
				ArgsUsage: "TOPIC...",
				Flags: clientcmd.WithFlags(
					topicFlag("a topic to delete (repeatable, with or instead of TOPIC...)"),
					&ucli.BoolFlag{Name: "if-exists", Usage: "succeed for topics that do not exist"},
				),
				Action: runTopicsDelete,
			},
		},
	}
}

func runTopicsCreate(c *ucli.Context) error {
	topic, err := oneNameArg(c, "topic", "TOPIC")
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
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	resp, err := cl.Admin().CreateTopic(ctx, int32(partitions), int16(replication), configs, topic)
	if errors.Is(err, kerr.TopicAlreadyExists) && c.Bool("if-not-exists") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create topic %q: %w", topic, cl.Explain(kafkaError(err, resp.ErrMessage)))
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

// topicListing is one topic of `topics list -o json`.
type topicListing struct {
	Name              string `json:"name"`
	TopicID           string `json:"topic_id"`
	Internal          bool   `json:"internal"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
}

func runTopicsList(c *ucli.Context) error {
	names, err := namesArgs(c, "topic")
	if err != nil {
		return err
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	topics, err := cl.Admin().ListTopicsWithInternal(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", cl.Explain(err))
	}
	if c.Bool("exclude-internal") {
		topics.FilterInternal()
	}
	listed := []topicListing{}
	for _, d := range topics.Sorted() {
		if len(names) > 0 && !slices.Contains(names, d.Topic) {
			continue
		}
		l := topicListing{Name: d.Topic, Internal: d.IsInternal, Partitions: len(d.Partitions)}
		if d.ID != (kadm.TopicID{}) {
			l.TopicID = kafkaUUID(d.ID)
		}
		if ps := d.Partitions.Sorted(); len(ps) > 0 {
			l.ReplicationFactor = len(ps[0].Replicas)
		}
		listed = append(listed, l)
	}
	if asJSON {
		return writeJSON(c.App.Writer, struct {
			Topics []topicListing `json:"topics"`
		}{listed})
	}
	var out strings.Builder
	for _, l := range listed {
		out.WriteString(l.Name + "\n")
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
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
	names, err := namesArgs(c, "topic")
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("topics delete needs at least one TOPIC (or --topic)")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	resps, err := cl.Admin().DeleteTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("delete topics: %w", cl.Explain(err))
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
