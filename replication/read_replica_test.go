package replication

import (
	"testing"
	"time"
)

// Kafka's RackAwareReplicaSelector: no rack or the leader in the client's rack keeps
// the consumer on the leader; otherwise the follower in the rack with the highest log
// end offset, then the most recently caught up; the leader when the rack has none.
func TestSelectRackAware(t *testing.T) {
	leader := ReplicaView{BrokerID: 0, Rack: "a", LogEndOffset: 100}
	followers := []ReplicaView{
		{BrokerID: 1, Rack: "b", LogEndOffset: 90, SinceCaughtUp: time.Second},
		{BrokerID: 2, Rack: "b", LogEndOffset: 100, SinceCaughtUp: 2 * time.Second},
		{BrokerID: 3, Rack: "c", LogEndOffset: 100, SinceCaughtUp: 3 * time.Second},
		{BrokerID: 4, Rack: "c", LogEndOffset: 100, SinceCaughtUp: time.Second},
	}
	for _, tc := range []struct {
		rack string
		want int32
	}{
		{"", -1}, {"a", -1}, {"b", 2}, {"c", 4}, {"d", -1},
	} {
		if got := SelectRackAware(tc.rack, leader, followers); got != tc.want {
			t.Errorf("client rack %q: %d, want %d", tc.rack, got, tc.want)
		}
	}
}

// A leader offers only in-sync followers that hold the fetch offset; a follower offers
// nothing.
func TestReadReplicaCandidates(t *testing.T) {
	p, _ := newPartition(t, false)
	if _, _, ok := p.ReadReplicaCandidates(0, time.Now()); ok {
		t.Fatal("a follower offered read replicas")
	}
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1, 2}, []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(5), 0); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, _, err := followerRead(p, FollowerFetch{ReplicaID: 1, FetchOffset: 5, CurrentLeaderEpoch: 1, MaxBytes: 1 << 20, LogStartOffset: 0, LastFetchedEpoch: -1}, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := followerRead(p, FollowerFetch{ReplicaID: 2, FetchOffset: 3, CurrentLeaderEpoch: 1, MaxBytes: 1 << 20, LogStartOffset: 0, LastFetchedEpoch: -1}, now); err != nil {
		t.Fatal(err)
	}
	ids := func(fetchOffset int64) []int32 {
		leader, followers, ok := p.ReadReplicaCandidates(fetchOffset, now)
		if !ok || leader.BrokerID != 0 || leader.LogEndOffset != 5 {
			t.Fatalf("leader view %+v %v", leader, ok)
		}
		var out []int32
		for _, f := range followers {
			out = append(out, f.BrokerID)
		}
		return out
	}
	if got := ids(3); len(got) != 2 {
		t.Fatalf("offset 3: %v, want followers 1 and 2", got)
	}
	if got := ids(5); len(got) != 1 || got[0] != 1 {
		t.Fatalf("offset 5: %v, want follower 1 only (2 ends at 3)", got)
	}
	p.UpdateISROf(1, []int32{0, 2})
	if got := ids(3); len(got) != 1 || got[0] != 2 {
		t.Fatalf("after 1 left the ISR: %v, want follower 2 only", got)
	}
}
