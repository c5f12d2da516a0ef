package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// reassignCommand is `petrel reassign`, shaped like kafka-reassign-partitions.sh: one
// of --generate, --execute, --verify, --cancel or --list, with its JSON files.
func reassignCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "reassign",
		Usage: "move partition replicas between brokers, like kafka-reassign-partitions.sh",
		Flags: clientcmd.WithFlags(
			&ucli.BoolFlag{Name: "generate", Usage: "propose an assignment of --topics-to-move-json-file onto --broker-list"},
			&ucli.BoolFlag{Name: "execute", Usage: "start the reassignment of --reassignment-json-file"},
			&ucli.BoolFlag{Name: "verify", Usage: "report the status of --reassignment-json-file, with progress; clears throttles once all are done"},
			&ucli.BoolFlag{Name: "cancel", Usage: "cancel the reassignments of --reassignment-json-file"},
			&ucli.BoolFlag{Name: "list", Usage: "list every running reassignment"},
			&ucli.StringFlag{Name: "topics-to-move-json-file", Usage: `{"version":1,"topics":[{"topic":"t"}]}`},
			&ucli.StringFlag{Name: "broker-list", Usage: "brokers to place replicas on, e.g. 0,1,2 (--generate)"},
			&ucli.BoolFlag{Name: "disable-rack-aware", Usage: "--generate without regard to the brokers' racks (broker.rack)"},
			&ucli.StringFlag{Name: "reassignment-json-file", Usage: `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}`},
			&ucli.Int64Flag{Name: "throttle", Usage: "inter-broker replication throttle in bytes/s while moving (--execute)", Value: -1},
			&ucli.BoolFlag{Name: "additional", Usage: "--execute even though other reassignments are running"},
			&ucli.BoolFlag{Name: "preserve-throttles", Usage: "do not clear the throttles when --verify finds every move done"},
			&ucli.DurationFlag{Name: "rate-interval", Usage: "--verify samples the moving replicas' sizes twice this far apart to show the copy rate (0: no rate)", Value: time.Second},
		),
		Action: runReassign,
	}
}

// reassignmentFile is kafka-reassign-partitions.sh's reassignment JSON.
type reassignmentFile struct {
	Version    int                     `json:"version"`
	Partitions []reassignmentPartition `json:"partitions"`
}

type reassignmentPartition struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// topicsToMoveFile is the --topics-to-move-json-file format.
type topicsToMoveFile struct {
	Version int `json:"version"`
	Topics  []struct {
		Topic string `json:"topic"`
	} `json:"topics"`
}

func runReassign(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	var modes []string
	for _, m := range []string{"generate", "execute", "verify", "cancel", "list"} {
		if c.Bool(m) {
			modes = append(modes, "--"+m)
		}
	}
	if len(modes) != 1 {
		return errors.New("reassign needs exactly one of --generate, --execute, --verify, --cancel, --list")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	w := c.App.Writer
	switch modes[0] {
	case "--generate":
		return reassignGenerate(ctx, c, cl, w)
	case "--list":
		return reassignList(ctx, cl, w)
	}
	plan, err := readReassignmentFile(c.String("reassignment-json-file"))
	if err != nil {
		return err
	}
	switch modes[0] {
	case "--execute":
		if !c.Bool("additional") {
			running, err := listReassignments(ctx, cl, nil)
			if err != nil {
				return err
			}
			if len(running) > 0 {
				return errors.New("cannot execute because there is an existing partition assignment; use --additional to override this and create a new partition assignment in addition to the existing one")
			}
		}
		return reassignExecute(ctx, cl, w, plan, c.Int64("throttle"))
	case "--verify":
		return reassignVerify(ctx, cl, w, plan, c.Bool("preserve-throttles"), c.Duration("rate-interval"))
	default:
		return reassignCancel(ctx, cl, w, plan)
	}
}

func readJSONFile(path, flag string, v any) error {
	if path == "" {
		return fmt.Errorf("--%s is required", flag)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--%s: %w", flag, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("--%s %s: not valid JSON: %w", flag, path, err)
	}
	return nil
}

func readReassignmentFile(path string) (reassignmentFile, error) {
	if path == "" {
		return reassignmentFile{}, errors.New("--reassignment-json-file is required")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return reassignmentFile{}, fmt.Errorf("--reassignment-json-file: %w", err)
	}
	return parseReassignmentJSON(data)
}

// parseReassignmentJSON parses and checks kafka-reassign-partitions.sh's reassignment
// JSON: every partition named once, with a topic, a partition number, replicas, and
// log_dirs (if given) all "any".
func parseReassignmentJSON(data []byte) (reassignmentFile, error) {
	var f reassignmentFile
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("--reassignment-json-file: not valid JSON: %w", err)
	}
	if len(f.Partitions) == 0 {
		return f, errors.New("--reassignment-json-file names no partitions")
	}
	seen := map[string]bool{}
	for _, p := range f.Partitions {
		key := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		switch {
		case p.Topic == "" || p.Partition < 0:
			return f, fmt.Errorf("--reassignment-json-file: partition %q has no topic or a negative number", key)
		case seen[key]:
			return f, fmt.Errorf("--reassignment-json-file: partition %s is listed twice", key)
		case len(p.Replicas) == 0:
			return f, fmt.Errorf("--reassignment-json-file: partition %s has no replicas", key)
		case len(p.LogDirs) > 0 && len(p.LogDirs) != len(p.Replicas):
			return f, fmt.Errorf("--reassignment-json-file: partition %s has %d log_dirs for %d replicas", key, len(p.LogDirs), len(p.Replicas))
		}
		for _, d := range p.LogDirs {
			if d != "any" {
				return f, fmt.Errorf("--reassignment-json-file: partition %s: moving replicas between log directories (%q) is not supported; use \"any\"", key, d)
			}
		}
		seen[key] = true
	}
	return f, nil
}

func anyDirs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "any"
	}
	return out
}

func writeReassignmentJSON(w io.Writer, parts []reassignmentPartition) {
	for i := range parts {
		parts[i].LogDirs = anyDirs(len(parts[i].Replicas))
	}
	sort.Slice(parts, func(i, j int) bool {
		return parts[i].Topic < parts[j].Topic || parts[i].Topic == parts[j].Topic && parts[i].Partition < parts[j].Partition
	})
	data, _ := json.Marshal(reassignmentFile{Version: 1, Partitions: parts})
	fmt.Fprintln(w, string(data))
}

// currentAssignment returns the current replicas of every partition of topics.
func currentAssignment(ctx context.Context, cl *clientcmd.Client, topics []string) (map[string]map[int32][]int32, error) {
	details, err := cl.Admin().ListTopics(ctx, topics...)
	if err != nil {
		return nil, cl.Explain(err)
	}
	out := map[string]map[int32][]int32{}
	for _, name := range topics {
		d, ok := details[name]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("topic %q does not exist", name)
		}
		if d.Err != nil {
			return nil, fmt.Errorf("topic %q: %w", name, d.Err)
		}
		out[name] = map[int32][]int32{}
		for id, p := range d.Partitions {
			out[name][id] = p.Replicas
		}
	}
	return out, nil
}

func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.ParseInt(part, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--broker-list: %q is not a broker id", part)
		}
		if slices.Contains(out, int32(n)) {
			return nil, fmt.Errorf("--broker-list: broker %d is listed twice", n)
		}
		out = append(out, int32(n))
	}
	if len(out) == 0 {
		return nil, errors.New("--broker-list is required with --generate")
	}
	return out, nil
}

func reassignGenerate(ctx context.Context, c *ucli.Context, cl *clientcmd.Client, w io.Writer) error {
	var f topicsToMoveFile
	if err := readJSONFile(c.String("topics-to-move-json-file"), "topics-to-move-json-file", &f); err != nil {
		return err
	}
	brokers, err := parseBrokerList(c.String("broker-list"))
	if err != nil {
		return err
	}
	var topics []string
	for _, t := range f.Topics {
		if t.Topic == "" {
			return errors.New("--topics-to-move-json-file: a topic without a name")
		}
		topics = append(topics, t.Topic)
	}
	if len(topics) == 0 {
		return errors.New("--topics-to-move-json-file names no topics")
	}
	current, err := currentAssignment(ctx, cl, dedupe(topics))
	if err != nil {
		return err
	}
	var racks map[int32]string
	if !c.Bool("disable-rack-aware") {
		if racks, err = brokerRacks(ctx, cl); err != nil {
			return err
		}
	}
	var cur, proposed []reassignmentPartition
	for _, name := range dedupe(topics) {
		parts := current[name]
		rf := 0
		for id, r := range parts {
			cur = append(cur, reassignmentPartition{Topic: name, Partition: id, Replicas: r})
			rf = max(rf, len(r))
		}
		if rf > len(brokers) {
			return fmt.Errorf("topic %q has replication factor %d, more than the %d brokers of --broker-list", name, rf, len(brokers))
		}
		assignment, err := proposeReplicas(brokers, racks, len(parts), rf)
		if err != nil {
			return err
		}
		for id, r := range assignment {
			proposed = append(proposed, reassignmentPartition{Topic: name, Partition: int32(id), Replicas: r})
		}
	}
	fmt.Fprintln(w, "Current partition replica assignment")
	writeReassignmentJSON(w, cur)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Proposed partition reassignment configuration")
	writeReassignmentJSON(w, proposed)
	return nil
}

func partitionNames(parts []reassignmentPartition) string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = fmt.Sprintf("%s-%d", p.Topic, p.Partition)
	}
	return strings.Join(names, ",")
}

func reassignExecute(ctx context.Context, cl *clientcmd.Client, w io.Writer, plan reassignmentFile, throttle int64) error {
	var topics []string
	for _, p := range plan.Partitions {
		topics = append(topics, p.Topic)
	}
	current, err := currentAssignment(ctx, cl, dedupe(topics))
	if err != nil {
		return err
	}
	var cur []reassignmentPartition
	for _, p := range plan.Partitions {
		r, ok := current[p.Topic][p.Partition]
		if !ok {
			return fmt.Errorf("partition %s-%d does not exist", p.Topic, p.Partition)
		}
		cur = append(cur, reassignmentPartition{Topic: p.Topic, Partition: p.Partition, Replicas: r})
	}
	fmt.Fprintln(w, "Current partition replica assignment")
	fmt.Fprintln(w)
	writeReassignmentJSON(w, slices.Clone(cur))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Save this to use as the --reassignment-json-file option during rollback")
	if throttle >= 0 {
		if err := setThrottles(ctx, cl, plan, current, throttle); err != nil {
			return err
		}
		fmt.Fprintln(w, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
		fmt.Fprintf(w, "The inter-broker throttle limit was set to %d B/s\n", throttle)
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan.Partitions {
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	resps, err := cl.Admin().AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("alter partition reassignments: %w", cl.Explain(err))
	}
	if err := reassignFailures(resps, plan); err != nil {
		return err
	}
	fmt.Fprintf(w, "Successfully started partition reassignment%s for %s\n", plural(len(plan.Partitions)), partitionNames(plan.Partitions))
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func reassignFailures(resps kadm.AlterPartitionAssignmentsResponses, plan reassignmentFile) error {
	var failures []string
	for _, p := range plan.Partitions {
		r, ok := resps[p.Topic][p.Partition]
		switch {
		case !ok:
			failures = append(failures, fmt.Sprintf("%s-%d: missing from the broker's answer", p.Topic, p.Partition))
		case r.Err != nil:
			failures = append(failures, fmt.Sprintf("%s-%d: %v", p.Topic, p.Partition, kafkaError(r.Err, r.ErrMessage)))
		}
	}
	if len(failures) > 0 {
		return errors.New("reassignment failed: " + strings.Join(failures, "; "))
	}
	return nil
}

// setThrottles applies Kafka's --throttle: leader.replication.throttled.replicas are the
// moving partitions' current replicas, follower.replication.throttled.replicas the
// replicas being added, and both rates are set on every broker involved.
func setThrottles(ctx context.Context, cl *clientcmd.Client, plan reassignmentFile, current map[string]map[int32][]int32, rate int64) error {
	leader, follower := map[string][]string{}, map[string][]string{}
	var brokers []int32
	for _, p := range plan.Partitions {
		cur := current[p.Topic][p.Partition]
		for _, r := range cur {
			leader[p.Topic] = append(leader[p.Topic], fmt.Sprintf("%d:%d", p.Partition, r))
		}
		for _, r := range p.Replicas {
			if !slices.Contains(cur, r) {
				follower[p.Topic] = append(follower[p.Topic], fmt.Sprintf("%d:%d", p.Partition, r))
			}
		}
		for _, r := range append(slices.Clone(cur), p.Replicas...) {
			if !slices.Contains(brokers, r) {
				brokers = append(brokers, r)
			}
		}
	}
	adm := cl.Admin()
	for topic, list := range leader {
		topicAlters := []kadm.AlterConfig{kadm.AlterConfig{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: kadm.StringPtr(strings.Join(list, ","))}}
		if f := follower[topic]; len(f) > 0 {
			topicAlters = append(topicAlters, kadm.AlterConfig{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: kadm.StringPtr(strings.Join(f, ","))})
		}
		resps, err := adm.AlterTopicConfigs(ctx, topicAlters, topic)
		if err = firstAlterError(resps, err); err != nil {
			return fmt.Errorf("setting the throttled replicas of topic %s: %w", topic, cl.Explain(err))
		}
	}
	v := kadm.StringPtr(strconv.FormatInt(rate, 10))
	alters := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.rate", Value: v},
		{Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: v}}
	resps, err := adm.AlterBrokerConfigs(ctx, alters, brokers...)
	if err = firstAlterError(resps, err); err != nil {
		return fmt.Errorf("setting the throttle rate on brokers %v: %w", brokers, cl.Explain(err))
	}
	return nil
}

func firstAlterError(resps kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return kafkaError(r.Err, r.ErrMessage)
		}
	}
	return nil
}

// clearThrottles removes the throttle rates from every broker and the throttled
// replica lists from the plan's topics.
func clearThrottles(ctx context.Context, cl *clientcmd.Client, w io.Writer, plan reassignmentFile) error {
	adm := cl.Admin()
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return cl.Explain(err)
	}
	ids := meta.Brokers.NodeIDs()
	alters := []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.rate"},
		{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"}}
	resps, err := adm.AlterBrokerConfigs(ctx, alters, ids...)
	if err = firstAlterError(resps, err); err != nil {
		return fmt.Errorf("clearing broker-level throttles: %w", cl.Explain(err))
	}
	fmt.Fprintf(w, "Clearing broker-level throttles on brokers %s\n", joinIDs(ids))
	var topics []string
	for _, p := range plan.Partitions {
		topics = append(topics, p.Topic)
	}
	for _, topic := range dedupe(topics) {
		alters := []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.replicas"},
			{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.replicas"}}
		resps, err := adm.AlterTopicConfigs(ctx, alters, topic)
		if err = firstAlterError(resps, err); err != nil {
			return fmt.Errorf("clearing topic-level throttles on topic %s: %w", topic, cl.Explain(err))
		}
		fmt.Fprintf(w, "Clearing topic-level throttles on topic %s\n", topic)
	}
	return nil
}

// listReassignments returns the running reassignments of topics (all when nil).
func listReassignments(ctx context.Context, cl *clientcmd.Client, topics []string) (kadm.ListPartitionReassignmentsResponses, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = int32(cl.Timeout().Milliseconds())
	for _, t := range topics {
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	if topics != nil {
		// Name every partition: a topic with no partitions listed matches none.
		details, err := cl.Admin().ListTopics(ctx, topics...)
		if err != nil {
			return nil, cl.Explain(err)
		}
		for i := range req.Topics {
			for id := range details[req.Topics[i].Topic].Partitions {
				req.Topics[i].Partitions = append(req.Topics[i].Partitions, id)
			}
		}
	}
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return nil, cl.Explain(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, kafkaError(err, derefString(resp.ErrorMessage))
	}
	out := kadm.ListPartitionReassignmentsResponses{}
	for _, t := range resp.Topics {
		out[t.Topic] = map[int32]kadm.ListPartitionReassignmentsResponse{}
		for _, p := range t.Partitions {
			out[t.Topic][p.Partition] = kadm.ListPartitionReassignmentsResponse{Topic: t.Topic, Partition: p.Partition,
				Replicas: p.Replicas, AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas}
		}
	}
	return out, nil
}

func reassignList(ctx context.Context, cl *clientcmd.Client, w io.Writer) error {
	running, err := listReassignments(ctx, cl, nil)
	if err != nil {
		return err
	}
	if len(running) == 0 {
		fmt.Fprintln(w, "No partition reassignments found.")
		return nil
	}
	fmt.Fprintln(w, "Current partition reassignments:")
	for _, r := range running.Sorted() {
		fmt.Fprintf(w, "%s-%d: replicas: %s. adding: %s. removing: %s.\n", r.Topic, r.Partition,
			joinIDs(r.Replicas), joinIDs(r.AddingReplicas), joinIDs(r.RemovingReplicas))
	}
	return nil
}

func reassignVerify(ctx context.Context, cl *clientcmd.Client, w io.Writer, plan reassignmentFile, preserve bool, rateInterval time.Duration) error {
	var topics []string
	for _, p := range plan.Partitions {
		topics = append(topics, p.Topic)
	}
	topics = dedupe(topics)
	running, err := listReassignments(ctx, cl, topics)
	if err != nil {
		return err
	}
	adm := cl.Admin()
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return err
	}
	current, err := currentAssignment(ctx, cl, topics)
	if err != nil {
		return err
	}
	var moving []movingPartition
	for _, p := range plan.Partitions {
		if r, ok := running[p.Topic][p.Partition]; ok {
			leader := int32(-1)
			if pd, ok := details[p.Topic].Partitions[p.Partition]; ok {
				leader = pd.Leader
			}
			moving = append(moving, movingPartition{topic: p.Topic, partition: p.Partition, leader: leader, adding: r.AddingReplicas})
		}
	}
	first, second := sampleProgress(ctx, adm, moving, rateInterval)
	fmt.Fprintln(w, "Status of partition reassignment:")
	done := true
	for _, p := range plan.Partitions {
		name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		if i := slices.IndexFunc(moving, func(m movingPartition) bool { return m.topic == p.Topic && m.partition == p.Partition }); i >= 0 {
			done = false
			fmt.Fprintf(w, "Reassignment of partition %s is still in progress.\n", name)
			printProgress(w, moving[i], first, second)
			continue
		}
		cur := current[p.Topic][p.Partition]
		if slices.Equal(cur, p.Replicas) {
			fmt.Fprintf(w, "Reassignment of partition %s is completed.\n", name)
			continue
		}
		done = false
		fmt.Fprintf(w, "There is no active reassignment of partition %s, but replica set is %v rather than %v.\n", name, cur, p.Replicas)
	}
	if !done || preserve {
		return nil
	}
	fmt.Fprintln(w)
	if err := clearThrottles(ctx, cl, w, plan); err != nil {
		fmt.Fprintf(w, "Warning: %v\n", err)
	}
	return nil
}

func reassignCancel(ctx context.Context, cl *clientcmd.Client, w io.Writer, plan reassignmentFile) error {
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan.Partitions {
		req.CancelAssign(p.Topic, p.Partition)
	}
	resps, err := cl.Admin().AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("cancel partition reassignments: %w", cl.Explain(err))
	}
	var cancelled, idle []reassignmentPartition
	for _, p := range plan.Partitions {
		if r, ok := resps[p.Topic][p.Partition]; ok && errors.Is(r.Err, kerr.NoReassignmentInProgress) {
			idle = append(idle, p)
		} else {
			cancelled = append(cancelled, p)
		}
	}
	if err := reassignFailures(filterResponses(resps, kerr.NoReassignmentInProgress), plan); err != nil {
		return err
	}
	if len(cancelled) > 0 {
		fmt.Fprintf(w, "Successfully cancelled partition reassignment%s for: %s\n", plural(len(cancelled)), partitionNames(cancelled))
	}
	if len(idle) > 0 {
		fmt.Fprintf(w, "None of the specified partition reassignments are active: %s\n", partitionNames(idle))
	}
	return nil
}

// filterResponses drops the given error from responses (it is not a failure).
func filterResponses(resps kadm.AlterPartitionAssignmentsResponses, ignore error) kadm.AlterPartitionAssignmentsResponses {
	out := kadm.AlterPartitionAssignmentsResponses{}
	for t, ps := range resps {
		out[t] = map[int32]kadm.AlterPartitionAssignmentsResponse{}
		for id, r := range ps {
			if errors.Is(r.Err, ignore) {
				r.Err = nil
			}
			out[t][id] = r
		}
	}
	return out
}
