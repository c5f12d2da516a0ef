package cli

// `petrel topics describe`: kafka-topics.sh --describe, with its partition reports
// (--under-replicated-partitions, --unavailable-partitions, --under-min-isr-partitions,
// --at-min-isr-partitions, --topics-with-overrides) and -o json.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

func topicsDescribeCommand() *ucli.Command {
	return &ucli.Command{
		Name: "describe",
		Usage: "describe topics (all when none are named) in kafka-topics.sh's format; the report flags " +
			"print only the partitions they match (any of them), without the topic lines",
		ArgsUsage: "[TOPIC...]",
		Flags: withOutputFlags(
			topicFlag("a topic to describe (repeatable, with or instead of TOPIC...)"),
			&ucli.BoolFlag{Name: "exclude-internal", Usage: "leave out internal topics when describing all"},
			&ucli.BoolFlag{Name: "under-replicated-partitions", Usage: "report partitions with fewer in-sync replicas than replicas"},
			&ucli.BoolFlag{Name: "unavailable-partitions", Usage: "report partitions whose leader is none or not a live broker"},
			&ucli.BoolFlag{Name: "under-min-isr-partitions", Usage: "report partitions with no leader, or fewer in-sync replicas than min.insync.replicas"},
			&ucli.BoolFlag{Name: "at-min-isr-partitions", Usage: "report partitions with exactly min.insync.replicas in-sync replicas"},
			&ucli.BoolFlag{Name: "topics-with-overrides", Usage: "only the topic lines of topics with config overrides"},
		),
		Action: runTopicsDescribe,
	}
}

// partitionReports are the report flags of topics describe: a partition is printed
// when it matches any that is set.
type partitionReports struct {
	underReplicated, unavailable, underMinISR, atMinISR bool
}

func (r partitionReports) any() bool {
	return r.underReplicated || r.unavailable || r.underMinISR || r.atMinISR
}

// partitionHealth is what the reports test, by kafka-topics.sh's rules.
type partitionHealth struct {
	UnderReplicated bool `json:"under_replicated"`
	Unavailable     bool `json:"unavailable"`
	UnderMinISR     bool `json:"under_min_isr"`
	AtMinISR        bool `json:"at_min_isr"`
}

// matches reports whether h is one the reports ask for (every partition without any).
func (r partitionReports) matches(h partitionHealth) bool {
	if !r.any() {
		return true
	}
	return (r.underReplicated && h.UnderReplicated) || (r.unavailable && h.Unavailable) ||
		(r.underMinISR && h.UnderMinISR) || (r.atMinISR && h.AtMinISR)
}

// classifyPartition applies kafka-topics.sh's rules. The replication factor leaves out
// replicas being added by a reassignment in progress; under min ISR includes having no
// leader; unavailable is no leader or a leader that is not a live broker. minISR < 0
// (unknown) matches neither min-ISR report but no leader.
func classifyPartition(p kadm.PartitionDetail, reassignment *kadm.ListPartitionReassignmentsResponse, minISR int, live map[int32]bool) partitionHealth {
	rf := len(p.Replicas)
	if reassignment != nil && reassignmentInProgress(p.Replicas, reassignment) {
		rf = len(reassignment.Replicas) - len(reassignment.AddingReplicas)
	}
	hasLeader := p.Leader >= 0
	return partitionHealth{
		UnderReplicated: rf-len(p.ISR) > 0,
		Unavailable:     !hasLeader || !live[p.Leader],
		UnderMinISR:     !hasLeader || (minISR >= 0 && len(p.ISR) < minISR),
		AtMinISR:        minISR >= 0 && len(p.ISR) == minISR,
	}
}

// reassignmentInProgress is Kafka's rule: a replica of the partition is still being
// added or removed.
func reassignmentInProgress(replicas []int32, r *kadm.ListPartitionReassignmentsResponse) bool {
	for _, id := range replicas {
		if containsID(r.AddingReplicas, id) || containsID(r.RemovingReplicas, id) {
			return true
		}
	}
	return false
}

// describedTopic is one topic of `topics describe -o json`.
type describedTopic struct {
	Name              string               `json:"name"`
	TopicID           string               `json:"topic_id"`
	Internal          bool                 `json:"internal"`
	PartitionCount    int                  `json:"partition_count"`
	ReplicationFactor int                  `json:"replication_factor"`
	Configs           map[string]*string   `json:"configs"` // overrides (non-default), sensitive ones null
	MinInSyncReplicas *int                 `json:"min_insync_replicas"`
	Partitions        []describedPartition `json:"partitions"`
}

// describedPartition is one partition of `topics describe -o json`.
type describedPartition struct {
	Partition        int32   `json:"partition"`
	Leader           int32   `json:"leader"` // -1: none
	LeaderEpoch      int32   `json:"leader_epoch"`
	Replicas         []int32 `json:"replicas"`
	ISR              []int32 `json:"isr"`
	OfflineReplicas  []int32 `json:"offline_replicas"`
	AddingReplicas   []int32 `json:"adding_replicas"`   // a reassignment in progress; [] when none
	RemovingReplicas []int32 `json:"removing_replicas"` // a reassignment in progress; [] when none
	// ELR and LastKnownELR are the eligible leader replicas (KIP-966, topics_elr.go);
	// null when the cluster does not serve DescribeTopicPartitions.
	ELR          []int32 `json:"elr"`
	LastKnownELR []int32 `json:"last_known_elr"`
	// Tiered are the offsets of a topic with remote.storage.enable=true
	// (topics_describe_tiered.go); absent otherwise.
	Tiered *tieredOffsets `json:"tiered,omitempty"`
	partitionHealth
}

func runTopicsDescribe(c *ucli.Context) error {
	names, err := namesArgs(c, "topic")
	if err != nil {
		return err
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	reports := partitionReports{c.Bool("under-replicated-partitions"), c.Bool("unavailable-partitions"),
		c.Bool("under-min-isr-partitions"), c.Bool("at-min-isr-partitions")}
	overridesOnly := c.Bool("topics-with-overrides")
	if overridesOnly && reports.any() {
		return errors.New("--topics-with-overrides cannot be used with the partition reports")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	details, err := describeTopicDetails(ctx, cl, names, c.Bool("exclude-internal"))
	if err != nil {
		return err
	}
	configs, err := topicConfigs(ctx, cl, details)
	if err != nil {
		return err
	}
	live := map[int32]bool{}
	brokers, err := cl.Admin().ListBrokers(ctx)
	if err != nil {
		return fmt.Errorf("list brokers: %w", cl.Explain(err))
	}
	for _, b := range brokers {
		live[b.NodeID] = true
	}
	// As kafka-topics.sh, a cluster that does not list reassignments (too old, or not
	// authorized) is described without them.
	reassignments, _ := cl.Admin().ListPartitionReassignments(ctx, nil)
	elrs, withELR, err := describeELRs(ctx, cl, names)
	if err != nil {
		return fmt.Errorf("describe topic partitions: %w", cl.Explain(err))
	}
	var tieredTopics []string
	for _, d := range details {
		if remoteStorageEnabled(configs[d.Topic]) {
			tieredTopics = append(tieredTopics, d.Topic)
		}
	}
	tiered, err := listTieredOffsets(ctx, cl, tieredTopics)
	if err != nil {
		return err
	}

	var out strings.Builder
	described := []describedTopic{}
	for _, d := range details {
		tc := configs[d.Topic]
		if overridesOnly && len(tc.overrides) == 0 {
			continue
		}
		dt := describedTopic{Name: d.Topic, Internal: d.IsInternal, PartitionCount: len(d.Partitions),
			Configs: map[string]*string{}, Partitions: []describedPartition{}}
		if d.ID != (kadm.TopicID{}) {
			dt.TopicID = kafkaUUID(d.ID)
		}
		if tc.minISR >= 0 {
			dt.MinInSyncReplicas = &tc.minISR
		}
		for _, cfg := range tc.overrides {
			dt.Configs[cfg.Key] = cfg.Value
		}
		partitions := d.Partitions.Sorted()
		for i, p := range partitions {
			r := reassignmentOf(reassignments, d.Topic, p.Partition)
			h := classifyPartition(p, r, tc.minISR, live)
			if i == 0 {
				dt.ReplicationFactor = len(p.Replicas)
				if r != nil && reassignmentInProgress(p.Replicas, r) {
					dt.ReplicationFactor = len(r.Replicas) - len(r.AddingReplicas)
				}
			}
			if !reports.matches(h) {
				continue
			}
			dp := describedPartition{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: orEmpty(p.Replicas), ISR: orEmpty(p.ISR), OfflineReplicas: orEmpty(p.OfflineReplicas),
				AddingReplicas: []int32{}, RemovingReplicas: []int32{}, partitionHealth: h}
			if r != nil {
				dp.AddingReplicas, dp.RemovingReplicas = orEmpty(r.AddingReplicas), orEmpty(r.RemovingReplicas)
			}
			if withELR {
				e := elrs[d.Topic][p.Partition]
				dp.ELR, dp.LastKnownELR = orEmpty(e.ELR), orEmpty(e.LastKnownELR)
			}
			if o, ok := tiered[d.Topic][p.Partition]; ok {
				dp.Tiered = &o
			}
			dt.Partitions = append(dt.Partitions, dp)
		}
		if reports.any() && len(dt.Partitions) == 0 {
			continue
		}
		described = append(described, dt)
		if asJSON {
			continue
		}
		if !reports.any() {
			writeTopicLine(&out, dt, tc.overrides)
		}
		if !overridesOnly {
			for _, dp := range dt.Partitions {
				writePartitionLine(&out, d.Topic, dp, reassignmentOf(reassignments, d.Topic, dp.Partition) != nil)
			}
		}
	}
	if asJSON {
		return writeJSON(c.App.Writer, struct {
			Topics []describedTopic `json:"topics"`
		}{described})
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
}

func orEmpty(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func reassignmentOf(rs kadm.ListPartitionReassignmentsResponses, topic string, partition int32) *kadm.ListPartitionReassignmentsResponse {
	if r, ok := rs[topic][partition]; ok {
		return &r
	}
	return nil
}

// writeTopicLine writes kafka-topics.sh --describe's summary line of a topic.
func writeTopicLine(w *strings.Builder, d describedTopic, overrides []kadm.Config) {
	fmt.Fprintf(w, "Topic: %s", d.Name)
	if d.TopicID != "" {
		fmt.Fprintf(w, "\tTopicId: %s", d.TopicID)
	}
	fmt.Fprintf(w, "\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
		d.PartitionCount, d.ReplicationFactor, formatConfigs(overrides))
}

// writePartitionLine writes one tab-indented partition line, fields separated by tabs,
// with the replicas being added and removed while a reassignment runs.
func writePartitionLine(w *strings.Builder, topic string, p describedPartition, reassigning bool) {
	leader := "none"
	if p.Leader >= 0 {
		leader = strconv.Itoa(int(p.Leader))
	}
	fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s",
		topic, p.Partition, leader, joinIDs(p.Replicas), joinIDs(p.ISR))
	if reassigning {
		fmt.Fprintf(w, "\tAdding Replicas: %s\tRemoving Replicas: %s", joinIDs(p.AddingReplicas), joinIDs(p.RemovingReplicas))
	}
	if p.ELR != nil { // kafka-topics.sh 4.x, where DescribeTopicPartitions is served
		fmt.Fprintf(w, "\tElr: %s\tLastKnownElr: %s", joinIDs(p.ELR), joinIDs(p.LastKnownELR))
	}
	writeTieredFields(w, p.Tiered)
	w.WriteByte('\n')
}

// describeTopicDetails fetches metadata for the named topics (all topics when none are
// named), in the order given or sorted by name. A named topic that does not exist is an
// error.
func describeTopicDetails(ctx context.Context, cl *clientcmd.Client, names []string, excludeInternal bool) ([]kadm.TopicDetail, error) {
	topics, err := cl.Admin().ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", cl.Explain(err))
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

// topicConfig is what describe needs of a topic's configs.
type topicConfig struct {
	overrides []kadm.Config // every source but DEFAULT_CONFIG, sorted by name, as kafka-topics.sh shows them
	minISR    int           // min.insync.replicas in effect; -1 when not reported
}

// topicConfigs returns each topic's configs.
func topicConfigs(ctx context.Context, cl *clientcmd.Client, details []kadm.TopicDetail) (map[string]topicConfig, error) {
	out := map[string]topicConfig{}
	if len(details) == 0 {
		return out, nil
	}
	names := make([]string, len(details))
	for i, d := range details {
		names[i] = d.Topic
	}
	resources, err := cl.Admin().DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", cl.Explain(err))
	}
	for _, r := range resources {
		if r.Err != nil {
			return nil, fmt.Errorf("describe configs of topic %q: %w", r.Name, kafkaError(r.Err, r.ErrMessage))
		}
		tc := topicConfig{minISR: -1}
		for _, cfg := range r.Configs {
			if cfg.Key == "min.insync.replicas" && cfg.Value != nil {
				if n, err := strconv.Atoi(*cfg.Value); err == nil {
					tc.minISR = n
				}
			}
			if cfg.Source != kmsg.ConfigSourceDefaultConfig {
				tc.overrides = append(tc.overrides, cfg)
			}
		}
		sort.Slice(tc.overrides, func(i, j int) bool { return tc.overrides[i].Key < tc.overrides[j].Key })
		out[r.Name] = tc
	}
	return out, nil
}
