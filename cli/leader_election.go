package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	ucli "github.com/urfave/cli/v2"
)

// leaderElectionCommand is `petrel leader-election`, as kafka-leader-election.sh:
// PREFERRED or UNCLEAN elections for every partition, one topic (or partition), or the
// partitions of a JSON file ({"partitions": [{"topic": "t", "partition": 0}]}).
func leaderElectionCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "leader-election",
		Usage: "elect preferred or live replicas as leaders, as kafka-leader-election.sh",
		Flags: clientcmd.WithFlags(
			&ucli.StringFlag{Name: "election-type", Usage: "PREFERRED or UNCLEAN", Required: true},
			&ucli.BoolFlag{Name: "all-topic-partitions", Usage: "every partition of every topic"},
			&ucli.StringFlag{Name: "topic", Usage: "the partitions of this topic"},
			&ucli.IntFlag{Name: "partition", Usage: "only this partition of --topic", Value: -1},
			&ucli.StringFlag{Name: "path-to-json-file", Usage: `the partitions listed in this file: {"partitions": [{"topic": "t", "partition": 0}]}`},
		),
		Action: runLeaderElection,
	}
}

// electionFile is kafka-leader-election.sh's JSON input.
type electionFile struct {
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition *int32 `json:"partition"`
	} `json:"partitions"`
}

func runLeaderElection(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	var how kadm.ElectLeadersHow
	electionType := strings.ToUpper(c.String("election-type"))
	switch electionType {
	case "PREFERRED":
		how = kadm.ElectPreferredReplica
	case "UNCLEAN":
		how = kadm.ElectLiveReplica
	default:
		return fmt.Errorf("--election-type must be PREFERRED or UNCLEAN, got %q", c.String("election-type"))
	}
	sources := 0
	for _, set := range []bool{c.Bool("all-topic-partitions"), c.String("topic") != "", c.String("path-to-json-file") != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return errors.New("exactly one of --all-topic-partitions, --topic or --path-to-json-file must be given")
	}
	if c.Int("partition") >= 0 && c.String("topic") == "" {
		return errors.New("--partition needs --topic")
	}
	set := kadm.TopicsSet{}
	switch {
	case c.String("path-to-json-file") != "":
		raw, err := os.ReadFile(c.String("path-to-json-file"))
		if err != nil {
			return err
		}
		var f electionFile
		if err := json.Unmarshal(raw, &f); err != nil {
			return fmt.Errorf("%s: %v", c.String("path-to-json-file"), err)
		}
		if len(f.Partitions) == 0 {
			return fmt.Errorf("%s lists no partitions", c.String("path-to-json-file"))
		}
		for _, p := range f.Partitions {
			if p.Topic == "" || p.Partition == nil || *p.Partition < 0 {
				return fmt.Errorf("%s: every entry needs a topic and a partition", c.String("path-to-json-file"))
			}
			set.Add(p.Topic, *p.Partition)
		}
	case c.String("topic") != "":
		if c.Int("partition") >= 0 {
			set.Add(c.String("topic"), int32(c.Int("partition")))
		}
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	if topic := c.String("topic"); topic != "" && c.Int("partition") < 0 {
		details, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return fmt.Errorf("describe topic %q: %w", topic, cl.Explain(err))
		}
		d, ok := details[topic]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("topic %q does not exist", topic)
		}
		for p := range d.Partitions {
			set.Add(topic, p)
		}
	}
	results, err := adm.ElectLeaders(ctx, how, set)
	if err != nil {
		return fmt.Errorf("leader election: %w", cl.Explain(err))
	}
	var succeeded, noop, failed []string
	failures := map[string]string{}
	for topic, ps := range results {
		for p, r := range ps {
			name := fmt.Sprintf("%s-%d", topic, p)
			switch {
			case r.Err == nil:
				succeeded = append(succeeded, name)
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				noop = append(noop, name)
			default:
				failed = append(failed, name)
				failures[name] = kafkaError(r.Err, r.ErrMessage).Error()
			}
		}
	}
	for _, s := range [][]string{succeeded, noop, failed} {
		sort.Strings(s)
	}
	var out strings.Builder
	if len(succeeded) > 0 {
		fmt.Fprintf(&out, "Successfully completed leader election (%s) for partitions %s\n", electionType, strings.Join(succeeded, ", "))
	}
	if len(noop) > 0 {
		fmt.Fprintf(&out, "Valid replica already elected for partitions %s\n", strings.Join(noop, ", "))
	}
	for _, name := range failed {
		fmt.Fprintf(&out, "Error completing leader election (%s) for partition: %s: %s\n", electionType, name, failures[name])
	}
	if _, err := fmt.Fprint(c.App.Writer, out.String()); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d replica(s) could not be elected", len(failed))
	}
	return nil
}
