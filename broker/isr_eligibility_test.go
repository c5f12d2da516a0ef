package broker

import (
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// A broker becomes eligible for ISRs when it is unfenced in the new image and was not
// unfenced at the same epoch in the old one: unfenced, registered again, or new.
func TestNewlyEligibleBrokers(t *testing.T) {
	im := func(brokers ...*metadata.Broker) *metadata.Image {
		m := metadata.NewImage()
		m.Brokers = map[int32]*metadata.Broker{}
		for _, b := range brokers {
			m.Brokers[b.ID] = b
		}
		return m
	}
	prev := im(
		&metadata.Broker{ID: 1, Epoch: 10},
		&metadata.Broker{ID: 2, Epoch: 11, Fenced: true},
		&metadata.Broker{ID: 3, Epoch: 12},
		&metadata.Broker{ID: 4, Epoch: 13},
		&metadata.Broker{ID: 5, Epoch: 14, Fenced: true},
	)
	next := im(
		&metadata.Broker{ID: 1, Epoch: 10},               // unchanged
		&metadata.Broker{ID: 2, Epoch: 11},               // unfenced
		&metadata.Broker{ID: 3, Epoch: 20},               // registered again
		&metadata.Broker{ID: 4, Epoch: 13, Fenced: true}, // fenced
		&metadata.Broker{ID: 5, Epoch: 21, Fenced: true}, // registered again, still fenced
		&metadata.Broker{ID: 6, Epoch: 22},               // new
	)
	got := newlyEligibleBrokers(prev, next)
	slices.Sort(got)
	if want := []int32{2, 3, 6}; !slices.Equal(got, want) {
		t.Fatalf("newly eligible %v, want %v", got, want)
	}
	if got := newlyEligibleBrokers(next, next); len(got) != 0 {
		t.Fatalf("newly eligible %v between an image and itself", got)
	}
}
