package metrics

import "testing"

// TestRemoteMetrics: the remote storage meters count per topic and broker-wide under
// Kafka's names, the remote log gauges sum the led partitions per topic and
// broker-wide, and a forgotten topic's series go.
func TestRemoteMetrics(t *testing.T) {
	snap := Snapshot{RemoteTasksIdle: 0.75, RemoteLogs: []RemoteLogState{
		{Topic: "a", Partition: 0, CopyLagBytes: 100, CopyLagSegments: 1, SizeBytes: 1000, MetadataCount: 3},
		{Topic: "a", Partition: 1, CopyLagBytes: 50, CopyLagSegments: 2, SizeBytes: 500, MetadataCount: 2},
		{Topic: "b", Partition: 0, SizeBytes: 10, MetadataCount: 1},
	}}
	reg := New(Options{PerPartition: true, Snapshot: func() Snapshot { return snap }})
	base := serveTest(t, reg, nil)
	reg.RemoteCopyRequest("a")
	reg.RemoteCopied("a", 1000)
	reg.RemoteCopyRequest("b")
	reg.RemoteCopyError("b")
	reg.RemoteFetchRequest("a")
	reg.RemoteFetched("a", 300)
	reg.RemoteFetchError("a")
	reg.RemoteDeleteRequest("a")
	reg.RemoteDeleteError("a")
	fams := scrape(t, base)
	for _, c := range []struct {
		name, topic string
		want        float64
	}{
		{"kafka_server_brokertopicmetrics_remotecopyrequests_total", "", 2},
		{"kafka_server_brokertopicmetrics_remotecopyrequests_total", "a", 1},
		{"kafka_server_brokertopicmetrics_remotecopybytes_total", "a", 1000},
		{"kafka_server_brokertopicmetrics_remotecopyerrors_total", "b", 1},
		{"kafka_server_brokertopicmetrics_remotefetchrequests_total", "", 1},
		{"kafka_server_brokertopicmetrics_remotefetchbytes_total", "a", 300},
		{"kafka_server_brokertopicmetrics_remotefetcherrors_total", "", 1},
		{"kafka_server_brokertopicmetrics_remotedeleterequests_total", "a", 1},
		{"kafka_server_brokertopicmetrics_remotedeleteerrors_total", "", 1},
		{"kafka_server_brokertopicmetrics_remotecopylagbytes", "", 150},
		{"kafka_server_brokertopicmetrics_remotecopylagsegments", "a", 3},
		{"kafka_server_brokertopicmetrics_remotelogsizebytes", "", 1510},
		{"kafka_server_brokertopicmetrics_remotelogsizebytes", "b", 10},
		{"kafka_server_brokertopicmetrics_remotelogmetadatacount", "a", 5},
	} {
		if got := value(t, fams, c.name, map[string]string{"topic": c.topic}); got != c.want {
			t.Errorf("%s{topic=%q} = %v, want %v", c.name, c.topic, got, c.want)
		}
	}
	if got := value(t, fams, "kafka_log_remote_remotelogmanager_remotelogmanagertasksavgidlepercent", nil); got != 0.75 {
		t.Errorf("idle percent %v", got)
	}
	reg.ForgetTopic("a")
	fams = scrape(t, base)
	for _, m := range fams["kafka_server_brokertopicmetrics_remotecopybytes_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "topic" && l.GetValue() == "a" {
				t.Errorf("topic a's series after ForgetTopic")
			}
		}
	}
}
