package replication

import (
	"errors"
	"testing"
	"time"
)

// TestListOffset: latest is the high watermark for a consumer and the log end for a
// broker; earliest the log start; a time the first record at or after it below the
// end, with the epoch it was written in (none: -1); current_leader_epoch fences
// (KIP-320), and only the debugging replica id asks a follower.
func TestListOffset(t *testing.T) {
	p, _ := newPartition(t, false)
	if err := p.BecomeLeaderOf(1, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{3, 2} {
		if _, err := p.AppendAsLeader(batch(n), 0); err != nil {
			t.Fatal(err)
		}
	}
	future := time.Now().Add(time.Hour).UnixMilli()
	for _, c := range []struct {
		name string
		q    OffsetQuery
		want ListedOffset
		err  error
	}{
		{"latest", OffsetQuery{Timestamp: -1, CurrentLeaderEpoch: -1, ReplicaID: -1}, ListedOffset{5, -1, 1}, nil},
		{"latest read_committed", OffsetQuery{Timestamp: -1, CurrentLeaderEpoch: 1, ReplicaID: -1, ReadCommitted: true}, ListedOffset{5, -1, 1}, nil},
		{"earliest", OffsetQuery{Timestamp: -2, CurrentLeaderEpoch: -1, ReplicaID: -1}, ListedOffset{0, -1, 1}, nil},
		{"future", OffsetQuery{Timestamp: future, CurrentLeaderEpoch: -1, ReplicaID: -1}, ListedOffset{-1, -1, -1}, nil},
		{"fenced", OffsetQuery{Timestamp: -1, CurrentLeaderEpoch: 0, ReplicaID: -1}, ListedOffset{}, ErrFencedLeaderEpoch},
		{"unknown epoch", OffsetQuery{Timestamp: -1, CurrentLeaderEpoch: 2, ReplicaID: -1}, ListedOffset{}, ErrUnknownLeaderEpoch},
	} {
		got, err := p.ListOffset(c.q)
		if !errors.Is(err, c.err) || (err == nil && got != c.want) {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, err, c.want, c.err)
		}
	}
	o, err := p.ListOffset(OffsetQuery{Timestamp: 0, CurrentLeaderEpoch: -1, ReplicaID: -1})
	if err != nil || o.Offset != 0 || o.Timestamp <= 0 || o.LeaderEpoch != 1 {
		t.Fatalf("time 0: %+v %v", o, err)
	}
	if o, err := p.ListOffset(OffsetQuery{Timestamp: -3, CurrentLeaderEpoch: -1, ReplicaID: -1}); err != nil || o.Offset < 0 || o.Offset >= 5 || o.LeaderEpoch != 1 {
		t.Fatalf("max timestamp: %+v %v", o, err)
	}

	if err := p.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListOffset(OffsetQuery{Timestamp: -1, CurrentLeaderEpoch: -1, ReplicaID: -1}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("consumer's query to a follower: %v", err)
	}
	if o, err := p.ListOffset(OffsetQuery{Timestamp: -1, CurrentLeaderEpoch: -1, ReplicaID: DebuggingReplicaID}); err != nil || o.Offset != 5 {
		t.Fatalf("debugging replica's query to a follower: %+v %v", o, err)
	}
}

// TestListOffsetNewLeaderBelowItsEpochStart: a new leader whose high watermark has not
// reached its epoch's start cannot answer a consumer's latest nor a time found at or
// past the high watermark (ErrOffsetNotAvailable); a broker reads to its log end.
func TestListOffsetNewLeaderBelowItsEpochStart(t *testing.T) {
	p, _ := newPartition(t, false)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(2), 0); err != nil {
		t.Fatal(err)
	}
	if err := p.BecomeLeaderOf(2, 1, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	if st := p.State(); st.HighWatermark >= st.LeaderEpochStartOffset {
		t.Fatalf("state %+v: the high watermark is not behind the epoch start", st)
	}
	for _, ts := range []int64{-1, 0} {
		if _, err := p.ListOffset(OffsetQuery{Timestamp: ts, CurrentLeaderEpoch: -1, ReplicaID: -1}); !errors.Is(err, ErrOffsetNotAvailable) {
			t.Errorf("consumer's query %d: %v", ts, err)
		}
	}
	if o, err := p.ListOffset(OffsetQuery{Timestamp: -1, CurrentLeaderEpoch: -1, ReplicaID: 1}); err != nil || o.Offset != 2 || o.LeaderEpoch != 2 {
		t.Fatalf("broker's latest: %+v %v", o, err)
	}
	if o, err := p.ListOffset(OffsetQuery{Timestamp: 0, CurrentLeaderEpoch: -1, ReplicaID: 1}); err != nil || o.Offset != 0 || o.LeaderEpoch != 1 {
		t.Fatalf("broker's time 0: %+v %v", o, err)
	}
}
