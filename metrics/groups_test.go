package metrics

import (
	"testing"
	"time"
)

// The coordinated groups are counted by protocol and state under Kafka's names, each
// with its members; a consumer group's epoch bumps and a classic group's completed
// rebalances are counted, and every completed rebalance's time is observed per type.
func TestMetrics_Groups(t *testing.T) {
	snap := Snapshot{Groups: []GroupState{
		{Group: "billing", Type: "classic", State: "Stable", Members: 3},
		{Group: "old", Type: "classic", State: "Empty"},
		{Group: "orders", Type: "consumer", State: "Reconciling", Members: 2},
		{Group: "audit", Type: "consumer", State: "Stable", Members: 5},
	}}
	reg := New(Options{Snapshot: func() Snapshot { return snap }})
	reg.GroupRebalanced("consumer", false, 0)
	reg.GroupRebalanced("consumer", false, 0)
	reg.GroupRebalanced("consumer", true, 1500*time.Millisecond)
	reg.GroupRebalanced("classic", true, 3*time.Second)
	fams := scrape(t, serveTest(t, reg, nil))

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kafka_server_group_coordinator_metrics_group_count", map[string]string{"protocol": "classic"}, 2},
		{"kafka_server_group_coordinator_metrics_group_count", map[string]string{"protocol": "consumer"}, 2},
		{"kafka_server_group_coordinator_metrics_consumer_group_count", map[string]string{"state": "Stable"}, 1},
		{"kafka_server_group_coordinator_metrics_consumer_group_count", map[string]string{"state": "Reconciling"}, 1},
		{"kafka_server_group_coordinator_metrics_consumer_group_count", map[string]string{"state": "Assigning"}, 0},
		{"kafka_coordinator_group_groupmetadatamanager_numgroups", nil, 2},
		{"kafka_coordinator_group_groupmetadatamanager_numgroupsstable", nil, 1},
		{"kafka_coordinator_group_groupmetadatamanager_numgroupsempty", nil, 1},
		{"kafka_coordinator_group_groupmetadatamanager_numgroupspreparingrebalance", nil, 0},
		{"petrel_group_members", map[string]string{"group": "audit", "type": "consumer"}, 5},
		{"petrel_group_members", map[string]string{"group": "old", "type": "classic"}, 0},
		{"kafka_server_group_coordinator_metrics_consumer_group_rebalance_total", nil, 2},
		{"kafka_server_group_coordinator_metrics_group_completed_rebalance_total", nil, 1},
		{"petrel_group_rebalance_time_ms", map[string]string{"type": "consumer"}, 1},
		{"petrel_group_rebalance_time_ms", map[string]string{"type": "classic"}, 1},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	h := fams["petrel_group_rebalance_time_ms"]
	for _, m := range h.Metric {
		if m.Label[0].GetValue() == "consumer" && m.Histogram.GetSampleSum() != 1500 {
			t.Errorf("consumer rebalance time sum %v ms, want 1500", m.Histogram.GetSampleSum())
		}
	}
}
