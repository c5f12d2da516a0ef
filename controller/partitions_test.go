package controller

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// CreatePartitions adds partitions with the topic's replication factor, continuing the
// numbering; a lower count, a bad assignment, an unknown or internal topic are refused
// and write nothing; validate_only writes nothing.
func TestCreatePartitionsDecision(t *testing.T) {
	c, q := activeController(t, 0, 1, 2)
	ctx := testCtx(t)
	if _, _, err := c.createTopic(ctx, TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	offset := q.Image().Offset
	refused := []struct {
		spec PartitionsSpec
		want error
	}{
		{PartitionsSpec{Topic: "t", Count: 1}, metadata.ErrInvalidPartitions},
		{PartitionsSpec{Topic: "t", Count: 2}, metadata.ErrInvalidPartitions},
		{PartitionsSpec{Topic: "t", Count: 3, Assignment: [][]int32{{0}}}, metadata.ErrInvalidReplicaAssignment},
		{PartitionsSpec{Topic: "t", Count: 3, Assignment: [][]int32{{0, 0}}}, metadata.ErrInvalidReplicaAssignment},
		{PartitionsSpec{Topic: "t", Count: 4, Assignment: [][]int32{{0, 1}}}, metadata.ErrInvalidReplicaAssignment},
		{PartitionsSpec{Topic: "missing", Count: 3}, metadata.ErrUnknownTopic},
		{PartitionsSpec{Topic: OffsetsTopic, Count: 3}, ErrInternalTopic},
	}
	for _, r := range refused {
		if _, err := c.CreatePartitions(ctx, r.spec, false); !errors.Is(err, r.want) {
			t.Errorf("%+v: %v, want %v", r.spec, err, r.want)
		}
	}
	if _, err := c.CreatePartitions(ctx, PartitionsSpec{Topic: "t", Count: 5}, true); err != nil {
		t.Fatalf("validate only: %v", err)
	}
	if q.Image().Offset != offset {
		t.Fatal("a refused or validate-only request wrote")
	}
	im, err := c.CreatePartitions(ctx, PartitionsSpec{Topic: "t", Count: 4, Assignment: [][]int32{{2, 1}, {1, 0}}}, false)
	if err != nil {
		t.Fatal(err)
	}
	parts := im.Topic("t").Partitions
	if len(parts) != 4 || parts[2].Leader != 2 || len(parts[3].ISR) != 2 || parts[3].Replicas[0] != 1 {
		t.Fatalf("partitions after the increase: %+v", parts)
	}
	im, err = c.CreatePartitions(ctx, PartitionsSpec{Topic: "t", Count: 6}, false)
	if err != nil || len(im.Topic("t").Partitions) != 6 || len(im.Topic("t").Partitions[5].Replicas) != 2 {
		t.Fatalf("placed increase: %v, err %v", im.Topic("t"), err)
	}
}

// DeleteTopic removes a topic by name or id; an unknown one, an internal one, and any
// with delete.topic.enable=false are refused.
func TestDeleteTopicDecision(t *testing.T) {
	c, q := activeController(t, 0)
	ctx := testCtx(t)
	for _, name := range []string{"a", "b"} {
		if _, _, err := c.createTopic(ctx, TopicSpec{Name: name, Partitions: 1, ReplicationFactor: 1}); err != nil {
			t.Fatal(err)
		}
	}
	name := "a"
	if im, err := c.DeleteTopic(ctx, TopicRef{Name: &name}); err != nil || im.Topic("a") != nil {
		t.Fatalf("delete by name: %v", err)
	}
	if im, err := c.DeleteTopic(ctx, TopicRef{ID: q.Image().Topic("b").ID}); err != nil || im.Topic("b") != nil {
		t.Fatalf("delete by id: %v", err)
	}
	if _, err := c.DeleteTopic(ctx, TopicRef{Name: &name}); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := c.DeleteTopic(ctx, TopicRef{ID: metadata.Uuid{1}}); !errors.Is(err, metadata.ErrUnknownTopicID) {
		t.Fatalf("unknown id: %v", err)
	}
	internal := TransactionStateTopic
	if _, _, err := c.createTopic(ctx, TopicSpec{Name: internal, Partitions: 1, ReplicationFactor: 1, Internal: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteTopic(ctx, TopicRef{Name: &internal}); !errors.Is(err, ErrInternalTopic) {
		t.Fatalf("internal: %v", err)
	}
	c.cfg.DeleteTopicEnable = false
	if _, err := c.DeleteTopic(ctx, TopicRef{Name: &internal}); !errors.Is(err, ErrTopicDeletionDisabled) {
		t.Fatalf("delete.topic.enable=false: %v", err)
	}
}
