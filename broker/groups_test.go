package broker

import (
	"fmt"
	"testing"
)

func TestOffsetsReplicationFactorDefaultsByShape(t *testing.T) {
	voters := func(n int) []Voter {
		var out []Voter
		for i := range n {
			out = append(out, Voter{ID: int32(i), Addr: fmt.Sprintf("127.0.0.1:%d", 9093+2*i)})
		}
		return out
	}
	for _, tc := range []struct {
		voters int
		props  map[string]string
		want   int
	}{
		{0, nil, 1}, // petrel server without --voters, petrel dev
		{1, nil, 1},
		{2, nil, 2}, // petrel dev --nodes 2
		{3, nil, 3},
		{5, nil, 3}, // Kafka's default
		{1, map[string]string{"offsets.topic.replication.factor": "3"}, 3},
		{5, map[string]string{"offsets.topic.replication.factor": "2"}, 2},
		{5, map[string]string{"offsets.topic.replication.factor": " 2 "}, 2}, // Kafka trims, as the validator did
	} {
		cfg := Config{Voters: voters(tc.voters), Properties: tc.props}
		if got := cfg.offsetsReplicationFactor(); got != tc.want {
			t.Errorf("%d voters, %v: replication factor %d, want %d", tc.voters, tc.props, got, tc.want)
		}
	}
}

func TestCompactedTopicsAreNeverTrimmed(t *testing.T) {
	cfg := Config{Properties: map[string]string{}}
	sc := segmentConfig(cfg.topicConfigs(map[string]string{"cleanup.policy": "compact", "segment.bytes": "104857600"}))
	if sc.RetentionMs != -1 || sc.RetentionBytes != -1 || sc.SegmentBytes != 104857600 {
		t.Fatalf("compacted topic: retention.ms %d retention.bytes %d segment.bytes %d", sc.RetentionMs, sc.RetentionBytes, sc.SegmentBytes)
	}
	if sc := segmentConfig(cfg.topicConfigs(nil)); sc.RetentionMs != 604800000 {
		t.Fatalf("default topic retention.ms %d", sc.RetentionMs)
	}
}
