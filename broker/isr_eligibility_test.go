package broker

import (
	"slices"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
)

// A follower left out of an ISR as ineligible makes its partition ask again in any
// image where it is unfenced, once; while fenced it stays noted; an unregistered one is
// forgotten.
func TestISRRefusalsTakenOnceTheFollowerIsUnfenced(t *testing.T) {
	im := func(brokers ...*metadata.Broker) *metadata.Image {
		m := metadata.NewImage()
		m.Brokers = map[int32]*metadata.Broker{}
		for _, b := range brokers {
			m.Brokers[b.ID] = b
		}
		return m
	}
	tp := func(name string) segment.TopicPartition { return segment.TopicPartition{Topic: name} }
	var r isrRefusals
	r.add(tp("a"), 2)
	r.add(tp("a"), 2) // noted once
	r.add(tp("a"), 3)
	r.add(tp("b"), 3)
	r.add(tp("c"), 4)
	fenced := im(&metadata.Broker{ID: 2, Fenced: true}, &metadata.Broker{ID: 3, Fenced: true}, &metadata.Broker{ID: 4, Fenced: true})
	if got := r.takeUnfenced(fenced); len(got) != 0 {
		t.Fatalf("partitions %v taken while every follower is fenced", got)
	}
	// 2 unfenced; 3 still fenced; 4 no longer registered.
	got := r.takeUnfenced(im(&metadata.Broker{ID: 2}, &metadata.Broker{ID: 3, Fenced: true}))
	if !slices.Equal(got, []segment.TopicPartition{tp("a")}) {
		t.Fatalf("taken %v, want [a]", got)
	}
	got = r.takeUnfenced(im(&metadata.Broker{ID: 2}, &metadata.Broker{ID: 3}, &metadata.Broker{ID: 4}))
	slices.SortFunc(got, func(x, y segment.TopicPartition) int { return strings.Compare(x.Topic, y.Topic) })
	if !slices.Equal(got, []segment.TopicPartition{tp("a"), tp("b")}) {
		t.Fatalf("taken %v, want [a b] (c's follower was forgotten when unregistered)", got)
	}
	if len(r.refused) != 0 {
		t.Fatalf("refusals left: %v", r.refused)
	}
}
