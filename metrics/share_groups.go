package metrics

// The share-partition leader's metrics, per share group (KIP-932): the in-flight
// records of the share partitions this broker leads, by Kafka's SharePartitionMetrics
// name (InFlightMessageCount, summed per group), and Petrel's own counters of records
// acquired, redelivered and archived at the delivery-count limit.

import "github.com/prometheus/client_golang/prometheus"

// ShareGroupState is one share group's share partitions on this broker.
type ShareGroupState struct {
	Group string
	// InFlight counts the in-flight records (SPEO - SPSO + 1) of its share partitions.
	InFlight int64
	// Acquired, Redelivered and ArchivedAtDeliveryLimit count records since the broker
	// started: acquired by a member, acquired again (delivery count above 1), archived
	// when a lock expired on the last permitted delivery.
	Acquired, Redelivered, ArchivedAtDeliveryLimit int64
}

var (
	descShareInFlight = prometheus.NewDesc("kafka_server_sharepartitionmetrics_inflightmessagecount",
		"In-flight records of the share partitions this broker leads, per share group: InFlightMessageCount.", []string{"group"}, nil)
	descShareAcquired = prometheus.NewDesc("petrel_share_group_records_acquired_total",
		"Records acquired by share group members from the share partitions this broker leads.", []string{"group"}, nil)
	descShareRedelivered = prometheus.NewDesc("petrel_share_group_records_redelivered_total",
		"Records acquired again after a release or an expired lock (delivery count above 1).", []string{"group"}, nil)
	descShareArchived = prometheus.NewDesc("petrel_share_group_records_archived_delivery_limit_total",
		"Records archived because their lock expired on the last delivery group.share.delivery.count.limit permits.", []string{"group"}, nil)
	shareGroupDescs = []*prometheus.Desc{descShareInFlight, descShareAcquired, descShareRedelivered, descShareArchived}
)

// collectShareGroups reports every share group's gauges and counters.
func collectShareGroups(ch chan<- prometheus.Metric, groups []ShareGroupState) {
	for _, g := range groups {
		ch <- prometheus.MustNewConstMetric(descShareInFlight, prometheus.GaugeValue, float64(g.InFlight), g.Group)
		ch <- prometheus.MustNewConstMetric(descShareAcquired, prometheus.CounterValue, float64(g.Acquired), g.Group)
		ch <- prometheus.MustNewConstMetric(descShareRedelivered, prometheus.CounterValue, float64(g.Redelivered), g.Group)
		ch <- prometheus.MustNewConstMetric(descShareArchived, prometheus.CounterValue, float64(g.ArchivedAtDeliveryLimit), g.Group)
	}
}
