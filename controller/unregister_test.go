package controller

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// UnregisterBroker removes a fenced broker that holds no replica; an unknown broker, an
// unfenced one and one holding replicas are refused and stay.
func TestUnregisterBrokerDecision(t *testing.T) {
	c, q := activeController(t, 0, 1, 2)
	ctx := testCtx(t)
	if _, _, err := c.createTopic(ctx, TopicSpec{Name: "t", Assignment: [][]int32{{1}}, Partitions: -1, ReplicationFactor: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, func(*metadata.Image) ([]metadata.Record, error) {
		return []metadata.Record{metadata.FenceBrokerRecord{BrokerID: 1}, metadata.FenceBrokerRecord{BrokerID: 2}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.UnregisterBroker(ctx, 9); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Fatalf("unknown broker: %v", err)
	}
	if err := c.UnregisterBroker(ctx, 0); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("unfenced broker: %v", err)
	}
	if err := c.UnregisterBroker(ctx, 1); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("broker holding a replica: %v", err)
	}
	if err := c.UnregisterBroker(ctx, 2); err != nil {
		t.Fatal(err)
	}
	im := q.Image()
	if im.Brokers[2] != nil || im.Brokers[1] == nil || im.Brokers[0] == nil {
		t.Fatalf("brokers after unregistering 2: %v", im.Brokers)
	}
}
