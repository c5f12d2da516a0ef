package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// activeController starts the leader's controller over a log holding brokers, all
// unfenced, with num.partitions 3, default.replication.factor 2 and topic deletion on.
func activeController(t *testing.T, brokers ...int32) (*Controller, *memQuorum) {
	t.Helper()
	var records []metadata.Record
	for _, id := range brokers {
		records = append(records, metadata.RegisterBrokerRecord{BrokerID: id})
	}
	q := newMemQuorum(t, records...)
	q.leader.Store(true)
	c := startController(t, q, time.Minute, func(cfg *Config) {
		cfg.TopicDefaults = TopicDefaults{NumPartitions: 3, ReplicationFactor: 2}
		cfg.DeleteTopicEnable = true
	})
	return c, q
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createTopic plans and commits one topic, returning it and the image after it: the
// tests' way to set up a topic (the broker asks CreateTopics).
func (c *Controller) createTopic(ctx context.Context, spec TopicSpec) (*CreatedTopic, *metadata.Image, error) {
	var plan *CreatedTopic
	im, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		var err error
		if plan, err = c.planTopic(im, spec, nil); err != nil {
			return nil, err
		}
		return plan.Records, nil
	})
	if err != nil {
		return nil, nil, err // the plan may still run when ctx ended: plan is not read
	}
	return plan, im, nil
}

// CreateTopics commits the valid topics with the broker defaults and refuses each bad
// one on its own: an existing name, a colliding name, a name listed twice, a user's
// internal topic, a replication factor above the brokers.
func TestCreateTopicsDecidesEachTopic(t *testing.T) {
	c, q := activeController(t, 0, 1, 2)
	ctx := testCtx(t)
	if _, _, err := c.createTopic(ctx, TopicSpec{Name: "a.b", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	specs := []TopicSpec{
		{Name: "fresh", Partitions: -1, ReplicationFactor: -1, Configs: map[string]string{"retention.ms": "1000"}},
		{Name: "a.b", Partitions: 1, ReplicationFactor: 1},
		{Name: "a_b", Partitions: 1, ReplicationFactor: 1},
		{Name: "twice", Partitions: 1, ReplicationFactor: 1},
		{Name: "twice", Partitions: 1, ReplicationFactor: 1},
		{Name: OffsetsTopic, Partitions: 1, ReplicationFactor: 1},
		{Name: "wide", Partitions: 1, ReplicationFactor: 4},
		{Name: "badconfig", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "x"}},
	}
	results, committed, err := c.CreateTopics(ctx, specs, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, metadata.ErrTopicExists, metadata.ErrInvalidTopic, ErrDuplicateTopic, ErrDuplicateTopic,
		ErrInternalTopic, metadata.ErrInvalidReplicationFactor, metadata.ErrInvalidConfig}
	for i, w := range want {
		if got := results[i].Err; (w == nil) != (got == nil) || (w != nil && !errors.Is(got, w)) {
			t.Errorf("%s: %v, want %v", specs[i].Name, got, w)
		}
	}
	created := results[0].Topic
	if created == nil || created.Partitions != 3 || created.ReplicationFactor != 2 {
		t.Fatalf("fresh: %+v, want num.partitions 3 and default.replication.factor 2", created)
	}
	im := q.Image()
	if committed != im.Offset {
		t.Errorf("committed offset %d, image at %d", committed, im.Offset)
	}
	topic := im.Topic("fresh")
	if topic == nil || topic.ID != created.ID || len(topic.Partitions) != 3 || im.Topic("wide") != nil || im.Topic("twice") != nil {
		t.Fatalf("image after CreateTopics: fresh %+v, wide %v, twice %v", topic, im.Topic("wide"), im.Topic("twice"))
	}
	for _, p := range topic.Partitions {
		if len(p.Replicas) != 2 || p.Leader != p.Replicas[0] || len(p.ISR) != 2 {
			t.Errorf("partition %+v: want 2 replicas, all in the ISR, the first leading", p)
		}
	}
	if v := im.ResourceConfigs(metadata.ConfigResource{Type: metadata.TopicResource, Name: "fresh"})["retention.ms"]; v != "1000" {
		t.Errorf("retention.ms of fresh: %q", v)
	}
}

// validate_only plans and refuses as a creation does but writes nothing; a request past
// the bounds is refused whole.
func TestCreateTopicsValidateOnlyAndBounds(t *testing.T) {
	c, q := activeController(t, 0)
	ctx := testCtx(t)
	offset := q.Image().Offset
	results, committed, err := c.CreateTopics(ctx, []TopicSpec{{Name: "v", Partitions: 2, ReplicationFactor: 1}, {Name: "w", Partitions: 0, ReplicationFactor: 1}}, true)
	if err != nil || committed != 0 || results[0].Err != nil || results[0].Topic.Partitions != 2 || !errors.Is(results[1].Err, metadata.ErrInvalidPartitions) {
		t.Fatalf("validate only: %+v, committed %d, err %v", results, committed, err)
	}
	if q.Image().Offset != offset || q.Image().Topic("v") != nil {
		t.Fatal("validate only wrote")
	}
	_, _, err = c.CreateTopics(ctx, []TopicSpec{{Name: "huge", Partitions: MaxPartitionsPerRequest + 1, ReplicationFactor: 1}}, false)
	if !errors.Is(err, ErrPolicyViolation) {
		t.Fatalf("past the partition bound: %v, want ErrPolicyViolation", err)
	}
	spec := TopicSpec{Name: "x", Assignment: [][]int32{{0}, {0, 7}}, Partitions: -1, ReplicationFactor: -1}
	if results, _, _ := c.CreateTopics(ctx, []TopicSpec{spec}, false); !errors.Is(results[0].Err, metadata.ErrInvalidReplicaAssignment) {
		t.Fatalf("uneven assignment: %v", results[0].Err)
	}
}

// TestCollisionIndex: the index names the smallest topic of each colliding form, as
// the scan over sorted names did.
func TestCollisionIndex(t *testing.T) {
	im := metadata.NewImage()
	for _, name := range []string{"a_b", "a.b", "c"} {
		im.Topics[name] = &metadata.Topic{Name: name}
	}
	idx := collisionIndex(im)
	if idx["a_b"] != "a.b" || idx["c"] != "c" || len(idx) != 2 {
		t.Fatalf("collision index %v", idx)
	}
}
