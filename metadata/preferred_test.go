package metadata

import (
	"errors"
	"testing"
)

// imageWithLeaders is threeBrokerImage with partition leaders changed as given
// (partition -> leader).
func imageWithLeaders(t *testing.T, leaders map[int32]int32) *Image {
	t.Helper()
	im := threeBrokerImage(t)
	tp := im.Topic("t")
	var recs []Record
	for p, l := range leaders {
		leader := l
		recs = append(recs, PartitionChangeRecord{TopicID: tp.ID, PartitionID: p, Leader: &leader})
	}
	return mustApply(t, im, 2, recs...)
}

func TestPreferredLeaderChange(t *testing.T) {
	// Partition 0 is {0,1,2}, led by 0; partition 1 is {1,2,0}.
	im := imageWithLeaders(t, map[int32]int32{1: 2})
	tp := im.Topic("t")
	if _, err := PreferredLeaderChange(im, tp, tp.Partitions[0]); !errors.Is(err, ErrElectionNotNeeded) {
		t.Fatalf("preferred already leads: %v", err)
	}
	c, err := PreferredLeaderChange(im, tp, tp.Partitions[1])
	if err != nil || c.Leader == nil || *c.Leader != 1 {
		t.Fatalf("move partition 1 back to 1: %+v %v", c, err)
	}
	fenced := mustApply(t, im, 3, FenceBrokerRecords(im, 1, nil)...)
	ftp := fenced.Topic("t")
	if _, err := PreferredLeaderChange(fenced, ftp, ftp.Partitions[1]); !errors.Is(err, ErrPreferredLeaderNotAvailable) {
		t.Fatalf("preferred fenced: %v", err)
	}
}

func TestUncleanLeaderChange(t *testing.T) {
	im := threeBrokerImage(t)
	for _, id := range []int32{0, 1} {
		im = mustApply(t, im, im.Offset+1, FenceBrokerRecords(im, id, nil)...)
	}
	tp := im.Topic("t")
	// Partition 1 ({1,2,0}) kept 2 in its ISR: led by 2, no election needed.
	if _, err := UncleanLeaderChange(im, tp, tp.Partitions[1]); !errors.Is(err, ErrElectionNotNeeded) {
		t.Fatalf("led partition: %v", err)
	}
	// Fence 2 as well, then unfence only 0: partitions whose last ISR member is 1 or 2
	// stay leaderless, and 0 may lead them only uncleanly.
	im = mustApply(t, im, im.Offset+1, FenceBrokerRecords(im, 2, nil)...)
	im = mustApply(t, im, im.Offset+1, UnfenceBrokerRecord{BrokerID: 0, BrokerEpoch: im.Brokers[0].Epoch})
	tp = im.Topic("t")
	for _, p := range tp.Partitions {
		if p.Leader >= 0 {
			continue
		}
		c, err := UncleanLeaderChange(im, tp, p)
		if err != nil || *c.Leader != 0 || !c.Unclean || len(c.ISR) != 1 || c.ISR[0] != 0 {
			t.Fatalf("unclean election of partition %d (isr %v): %+v %v", p.ID, p.ISR, c, err)
		}
	}
	im = mustApply(t, im, im.Offset+1, FenceBrokerRecords(im, 0, nil)...)
	tp = im.Topic("t")
	if _, err := UncleanLeaderChange(im, tp, tp.Partitions[0]); !errors.Is(err, ErrEligibleLeadersNotAvailable) {
		t.Fatalf("no live replica: %v", err)
	}
}

func TestImbalancedPartitions(t *testing.T) {
	// Four partitions placed from start 0: preferred leaders 0, 1, 2, 0.
	tests := []struct {
		name       string
		leaders    map[int32]int32
		percentage int
		want       []TopicPartitionID
	}{
		{"balanced", nil, 10, nil},
		{"one of broker 0's two moved: 50 % > 10 %", map[int32]int32{3: 1}, 10, []TopicPartitionID{{"t", 3}}},
		{"50 % is not above 50 %", map[int32]int32{3: 1}, 50, nil},
		{"both of broker 0's moved, one of broker 1's", map[int32]int32{0: 1, 3: 2, 1: 2}, 60,
			[]TopicPartitionID{{"t", 0}, {"t", 3}, {"t", 1}}},
		{"0 % rebalances any imbalance", map[int32]int32{1: 0}, 0, []TopicPartitionID{{"t", 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			im := threeBrokerImage(t)
			if tc.leaders != nil {
				im = imageWithLeaders(t, tc.leaders)
			}
			got := ImbalancedPartitions(im, tc.percentage)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
	// A fenced preferred replica is never a candidate.
	im := imageWithLeaders(t, map[int32]int32{3: 1})
	im = mustApply(t, im, im.Offset+1, FenceBrokerRecords(im, 0, nil)...)
	if got := ImbalancedPartitions(im, 0); len(got) != 0 {
		t.Fatalf("fenced preferred replica: %v", got)
	}
}
