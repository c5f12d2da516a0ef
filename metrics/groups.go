package metrics

// The group coordinator's metrics, by Kafka's names where Kafka has them
// (kafka.server:type=group-coordinator-metrics and
// kafka.coordinator.group:type=GroupMetadataManager): groups by protocol and state
// from the coordinated groups at scrape time, rebalances counted as they happen. The
// members of each group and the rebalance times are Petrel's own.

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// GroupState is one group this broker coordinates.
type GroupState struct {
	Group string
	// Type is "classic" or "consumer" (KIP-848).
	Type string
	// State is the group's state as ListGroups names it.
	State   string
	Members int
}

// Group types and states as Kafka's metrics tag them.
var (
	groupTypes            = []string{"classic", "consumer"}
	consumerGroupStates   = []string{"Empty", "Assigning", "Reconciling", "Stable", "Dead"}
	classicGroupStateDesc = map[string]*prometheus.Desc{}
)

var (
	descGroupCount = prometheus.NewDesc("kafka_server_group_coordinator_metrics_group_count",
		"Groups this broker coordinates, per rebalance protocol (classic, consumer): group-count.", []string{"protocol"}, nil)
	descConsumerGroupCount = prometheus.NewDesc("kafka_server_group_coordinator_metrics_consumer_group_count",
		"Consumer groups (KIP-848) this broker coordinates, per state: consumer-group-count.", []string{"state"}, nil)
	descClassicGroups = prometheus.NewDesc("kafka_coordinator_group_groupmetadatamanager_numgroups",
		"Classic groups this broker coordinates: NumGroups.", nil, nil)
	descGroupMembers = prometheus.NewDesc("petrel_group_members",
		"Members of a group this broker coordinates.", []string{"group", "type"}, nil)
	groupDescs = []*prometheus.Desc{descGroupCount, descConsumerGroupCount, descClassicGroups, descGroupMembers}
)

func init() {
	// Kafka's NumGroups<State> gauges of classic groups, one MBean each.
	for _, st := range []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"} {
		d := prometheus.NewDesc("kafka_coordinator_group_groupmetadatamanager_numgroups"+strings.ToLower(st),
			"Classic groups this broker coordinates in state "+st+": NumGroups"+st+".", nil, nil)
		classicGroupStateDesc[st] = d
		groupDescs = append(groupDescs, d)
	}
}

// collectGroups reports the coordinated groups' counts and members.
func collectGroups(ch chan<- prometheus.Metric, groups []GroupState) {
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	byType, consumerStates, classicStates := map[string]int{}, map[string]int{}, map[string]int{}
	for _, g := range groups {
		byType[g.Type]++
		if g.Type == "consumer" {
			consumerStates[g.State]++
		} else {
			classicStates[g.State]++
		}
		gauge(descGroupMembers, g.Members, g.Group, g.Type)
	}
	for _, t := range groupTypes {
		gauge(descGroupCount, byType[t], t)
	}
	for _, st := range consumerGroupStates {
		gauge(descConsumerGroupCount, consumerStates[st], st)
	}
	gauge(descClassicGroups, byType["classic"])
	for st, d := range classicGroupStateDesc {
		gauge(d, classicStates[st])
	}
}

// rebalanceBucketsMs are the rebalance time buckets in milliseconds: 10 ms to 10 min.
var rebalanceBucketsMs = []float64{10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000}

// groupRebalances are the counters and times of the groups' rebalances.
type groupRebalances struct {
	consumer  prometheus.Counter // consumer-group-rebalance-count: epoch bumps
	completed prometheus.Counter // group-completed-rebalance-count: classic groups
	took      *prometheus.HistogramVec
}

func (g *groupRebalances) init(reg *prometheus.Registry) {
	g.consumer = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_group_coordinator_metrics_consumer_group_rebalance_total",
		Help: "Rebalances of consumer groups (KIP-848) this broker coordinates, one per group epoch bump: consumer-group-rebalance-count.",
	})
	g.completed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_group_coordinator_metrics_group_completed_rebalance_total",
		Help: "Completed rebalances of classic groups this broker coordinates: group-completed-rebalance-count.",
	})
	g.took = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "petrel_group_rebalance_time_ms",
		Help:    "Time from a rebalance's start to the group being Stable again, in milliseconds, per group type.",
		Buckets: rebalanceBucketsMs,
	}, []string{"type"})
	reg.MustRegister(g.consumer, g.completed, g.took)
	for _, t := range groupTypes {
		g.took.WithLabelValues(t)
	}
}

// GroupRebalanced counts one step of a rebalance of a group of groupType ("classic",
// "consumer"): completed, Stable again after took; otherwise a consumer group's epoch
// bump.
func (r *Registry) GroupRebalanced(groupType string, completed bool, took time.Duration) {
	if !completed {
		if groupType == "consumer" {
			r.groupRebalances.consumer.Inc()
		}
		return
	}
	if groupType == "classic" {
		r.groupRebalances.completed.Inc()
	}
	r.groupRebalances.took.WithLabelValues(groupType).Observe(float64(took) / float64(time.Millisecond))
}
