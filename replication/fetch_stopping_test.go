package replication

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStoppingFollowerFetch: a follower's fetch parked when the broker starts to stop
// is answered NOT_LEADER_OR_FOLLOWER for each of its partitions, in request order, with
// an empty (never null) record set and unknown offsets; it encodes as a Fetch response
// of the request's version.
func TestStoppingFollowerFetch(t *testing.T) {
	r := kmsg.NewPtrFetchRequest()
	r.Version = 12
	r.ReplicaID = 1
	for _, name := range []string{"a", "b"} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = name
		for _, p := range []int32{3, 0, 7} {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	resp := stoppingFollowerFetch(r)
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics", len(resp.Topics))
	}
	for i, st := range resp.Topics {
		if st.Topic != r.Topics[i].Topic || len(st.Partitions) != 3 {
			t.Fatalf("topic %d: %q with %d partitions", i, st.Topic, len(st.Partitions))
		}
		for j, sp := range st.Partitions {
			if sp.Partition != r.Topics[i].Partitions[j].Partition || sp.ErrorCode != kerr.NotLeaderForPartition.Code ||
				sp.RecordBatches == nil || len(sp.RecordBatches) != 0 || sp.HighWatermark != -1 || sp.LogStartOffset != -1 {
				t.Fatalf("%s/%d: %+v", st.Topic, sp.Partition, sp)
			}
		}
	}
	resp.SetVersion(r.Version)
	var back kmsg.FetchResponse
	back.SetVersion(r.Version)
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil || len(back.Topics) != 2 {
		t.Fatalf("encoded answer reads back as %d topics: %v", len(back.Topics), err)
	}
}
