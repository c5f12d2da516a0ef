package replication

import (
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

func TestReplicationQuota(t *testing.T) {
	var q Quota
	now := time.Unix(1000, 0)
	const rate = 1000
	if q.Exceeded(rate, now) {
		t.Fatal("a fresh quota is exceeded")
	}
	q.Record(rate, 1500, now) // one second of burst, then 500 over
	if !q.Exceeded(rate, now.Add(400*time.Millisecond)) {
		t.Fatal("not exceeded 500 bytes over the rate after 0.4 s")
	}
	if q.Exceeded(rate, now.Add(600*time.Millisecond)) {
		t.Fatal("still exceeded after the debt was repaid")
	}
	// Idle time saves at most one second of rate.
	later := now.Add(time.Hour)
	q.Record(rate, 2001, later)
	if !q.Exceeded(rate, later) {
		t.Fatal("an hour idle saved more than one second of rate")
	}
}

func TestReplicaThrottled(t *testing.T) {
	im := metadata.NewImage()
	val := func(s string) *string { return &s }
	im, err := im.Apply(1, []metadata.Record{metadata.TopicRecord{Name: "t", TopicID: metadata.Uuid{1}},
		metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: "t", Name: "leader.replication.throttled.replicas", Value: val("0:1, 2:3")},
		metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: "t", Name: "follower.replication.throttled.replicas", Value: val("*")}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key       string
		partition int32
		broker    int32
		want      bool
	}{
		{"leader.replication.throttled.replicas", 0, 1, true},
		{"leader.replication.throttled.replicas", 2, 3, true},
		{"leader.replication.throttled.replicas", 1, 0, false},
		{"follower.replication.throttled.replicas", 7, 7, true},
	}
	for _, c := range cases {
		if got := ReplicaThrottled(im, c.key, "t", c.partition, c.broker); got != c.want {
			t.Errorf("%s %d:%d = %v", c.key, c.partition, c.broker, got)
		}
	}
	if ReplicaThrottled(im, "leader.replication.throttled.replicas", "other", 0, 1) {
		t.Error("a topic without the config is throttled")
	}
}
