package controller

import (
	"maps"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// holdImage has brokers 1 (self), 2 and 3 unfenced at epoch 10, and topic t whose
// partitions 0, 1, 2 are led by 1, 2 and 3.
func holdImage() *metadata.Image {
	im := metadata.NewImage()
	for id := int32(1); id <= 3; id++ {
		im.Brokers[id] = &metadata.Broker{ID: id, Epoch: 10}
	}
	im.Topics["t"] = &metadata.Topic{Name: "t", Partitions: []*metadata.Partition{{ID: 0, Leader: 1}, {ID: 1, Leader: 2}, {ID: 2, Leader: 3}}}
	return im
}

// Answers wait for a refused broker for RefusedLeaderHold after its first refusal, and
// only while the image has it unfenced at the refused epoch.
func TestRefusalHoldsUntilFenceOrWindow(t *testing.T) {
	r := NewRefusals()
	im := holdImage()
	now := time.Unix(1000, 0)
	if _, ok := r.HoldUntil(im, now); ok || r.HoldingRecently(now) {
		t.Fatal("a hold with no refusal")
	}
	r.Refused(2, 10, now)
	r.Refused(2, 10, now.Add(time.Second)) // the window starts at the first refusal
	later := now.Add(time.Second)
	if until, ok := r.HoldUntil(im, later); !ok || !until.Equal(now.Add(RefusedLeaderHold)) {
		t.Fatalf("HoldUntil = %v %v, want %v", until, ok, now.Add(RefusedLeaderHold))
	}
	if !r.HoldingRecently(later) || !r.Holds(im, 2, later) || r.Holds(im, 3, later) {
		t.Fatal("broker 2 is not held, or broker 3 is")
	}
	if _, ok := r.HoldUntil(im, now.Add(RefusedLeaderHold)); ok || r.Holds(im, 2, now.Add(RefusedLeaderHold)) || r.HoldingRecently(now.Add(RefusedLeaderHold)) {
		t.Fatal("held past the window")
	}
	fenced := holdImage()
	fenced.Brokers[2] = &metadata.Broker{ID: 2, Epoch: 10, Fenced: true}
	if _, ok := r.HoldUntil(fenced, later); ok || r.Holds(fenced, 2, later) {
		t.Fatal("held once fenced")
	}
	restarted := holdImage()
	restarted.Brokers[2] = &metadata.Broker{ID: 2, Epoch: 20}
	if _, ok := r.HoldUntil(restarted, later); ok || r.Holds(restarted, 2, later) {
		t.Fatal("held at a new epoch")
	}
}

// A Produce is held when it names a partition led elsewhere (or unknown), and waits
// for a fence when that leader refused.
func TestRefusalProduceHold(t *testing.T) {
	r := NewRefusals()
	im := holdImage()
	now := time.Unix(1000, 0)
	r.Refused(2, 10, now)
	for _, tc := range []struct {
		name               string
		topics             map[string][]int32
		elsewhere, refused bool
	}{
		{"led here", map[string][]int32{"t": {0}}, false, false},
		{"led by a live broker", map[string][]int32{"t": {0, 2}}, true, false},
		{"led by the refused broker", map[string][]int32{"t": {1}}, true, true},
		{"unknown partition", map[string][]int32{"t": {7}}, true, false},
		{"unknown topic", map[string][]int32{"u": nil}, true, false},
	} {
		e, f := r.ProduceHold(im, 1, maps.All(tc.topics), true, now)
		if e != tc.elsewhere || f != tc.refused {
			t.Errorf("%s: elsewhere %v refused %v, want %v %v", tc.name, e, f, tc.elsewhere, tc.refused)
		}
	}
	if _, f := r.ProduceHold(im, 1, maps.All(map[string][]int32{"t": {1}}), false, now); f {
		t.Error("refused without recent refusals")
	}
}
