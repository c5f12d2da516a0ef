package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// Effects are carried out in group.Effects' order: Committed with the write's outcome
// (which may change the responses), then the replies, then the further Effects.
func TestEffectsBecomeResultsInOrder(t *testing.T) {
	g := &groupShard{gc: &groupCoordinator{}, s: group.NewShard(group.Config{NewMemberID: randomUUID})}
	var order []string
	resp := kmsg.NewPtrHeartbeatResponse()
	eff := group.Effects{
		Timers:  []group.Timer{{Key: "session", At: time.Unix(10, 0)}},
		Records: []group.Record{{Key: []byte("k"), Value: []byte("v")}, {Key: []byte("t")}},
		Committed: func(code int16) group.Effects {
			order = append(order, fmt.Sprint("committed ", code))
			resp.ErrorCode = code
			return group.Effects{Records: []group.Record{{Key: []byte("next")}}}
		},
		Replies: []group.Reply{{Send: func(r kmsg.Response) {
			order = append(order, fmt.Sprint("reply ", r.(*kmsg.HeartbeatResponse).ErrorCode))
		}, Response: resp}},
	}
	res := g.convert(eff)
	if len(res.Timers) != 1 || res.Timers[0].Key != "session" || len(res.Records) != 2 || res.Records[1].Value != nil {
		t.Fatalf("result %+v", res)
	}
	next := res.Committed(time.Now(), kerr.NotCoordinator.Code)
	if fmt.Sprint(order) != fmt.Sprintf("[committed %d reply %d]", kerr.NotCoordinator.Code, kerr.NotCoordinator.Code) {
		t.Fatalf("order %v", order)
	}
	if len(next.Records) != 1 || string(next.Records[0].Key) != "next" {
		t.Fatalf("further effects %+v", next)
	}
	if none := g.convert(group.Effects{}); none.Committed != nil || len(none.Records) != 0 {
		t.Fatal("the zero Effects does something")
	}
}
