package integration

// Share state survives the loss of its share coordinator (KIP-932, issue P21 item 3):
// what a share-partition leader writes through the broker's Persister is in
// __share_group_state (RF 3, min.insync.replicas 2) once acknowledged, so that after
// the coordinator's node is killed (as kill -9) the next leader of that
// __share_group_state partition replays it and answers the same state, and fences
// the old leader epoch.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestShareState_SurvivesCoordinatorKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration")
	}
	c := StartCluster(t, 3, WithProperty("share.coordinator.state.topic.num.partitions", "3"))
	c.CreateTopicRF(t, "queue", 6, 3, nil)
	c.WaitConverged()
	id := [16]byte(c.Node(0).Image().Topic("queue").ID)

	persist := func(node int, call func(ctx context.Context) (int16, error)) {
		t.Helper()
		testwait.ForWhat(t, 60*time.Second, fmt.Sprintf("node-%d's persister", node), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			code, err := call(ctx)
			if err != nil {
				return err
			}
			if code != 0 {
				return kerr.ErrorForCode(code)
			}
			return nil
		})
	}
	p0 := c.Node(0).SharePersister()
	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = "workers"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = id
	// Every partition of the topic, in reverse order: their keys spread over the
	// share coordinators, and the answer keeps the request's order.
	for partition := int32(5); partition >= 0; partition-- {
		ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		ip.Partition, ip.StateEpoch, ip.StartOffset = partition, 1, 0
		it.Partitions = append(it.Partitions, ip)
	}
	init.Topics = append(init.Topics, it)
	coordinators := map[int]bool{}
	for partition := int32(0); partition < 6; partition++ {
		coordinators[shareCoordinatorNode(t, c, "workers:"+metadata.Uuid(id).String()+":"+fmt.Sprint(partition))] = true
	}
	t.Logf("the 6 share partitions' keys are on %d coordinators", len(coordinators))
	persist(0, func(ctx context.Context) (int16, error) {
		resp, err := p0.InitializeState(ctx, init)
		if err != nil {
			return 0, err
		}
		for i, rp := range resp.Topics[0].Partitions {
			if rp.Partition != 5-int32(i) {
				return 0, testwait.Permanent(fmt.Errorf("answer %d is partition %d", i, rp.Partition))
			}
			if rp.ErrorCode != 0 {
				return rp.ErrorCode, nil
			}
		}
		return 0, nil
	})

	// The leader (epoch 4) acknowledged 0-9, archived 10 after its delivery limit, and
	// moved the start offset to 5.
	write := kmsg.NewPtrWriteShareGroupStateRequest()
	write.GroupID = "workers"
	wt := kmsg.NewWriteShareGroupStateRequestTopic()
	wt.TopicID = id
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset = 1, 4, 5
	for _, b := range [][4]int64{{0, 9, 2, 1}, {10, 10, 4, 5}} {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b[0], b[1], int8(b[2]), int16(b[3])
		wp.StateBatches = append(wp.StateBatches, sb)
	}
	wt.Partitions = append(wt.Partitions, wp)
	write.Topics = append(write.Topics, wt)
	persist(0, func(ctx context.Context) (int16, error) {
		resp, err := p0.WriteState(ctx, write)
		if err != nil {
			return 0, err
		}
		return resp.Topics[0].Partitions[0].ErrorCode, nil
	})

	// Kill the share coordinator of the key.
	key := "workers:" + metadata.Uuid(id).String() + ":0"
	coord := shareCoordinatorNode(t, c, key)
	c.Kill(coord)
	other := (coord + 1) % 3

	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "workers"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.LeaderEpoch = 5 // the queue partition's next leader
	rt.Partitions = append(rt.Partitions, rp)
	read.Topics = append(read.Topics, rt)
	var got kmsg.ReadShareGroupStateResponseTopicPartition
	p := c.Node(other).SharePersister()
	persist(other, func(ctx context.Context) (int16, error) {
		resp, err := p.ReadState(ctx, read)
		if err != nil {
			return 0, err
		}
		got = resp.Topics[0].Partitions[0]
		return got.ErrorCode, nil
	})
	if now := shareCoordinatorNode(t, c, key); now == coord {
		t.Fatalf("node-%d still coordinates after its kill", coord)
	}
	if got.StateEpoch != 1 || got.StartOffset != 5 || len(got.StateBatches) != 2 ||
		got.StateBatches[0].FirstOffset != 5 || got.StateBatches[0].LastOffset != 9 || got.StateBatches[0].DeliveryState != 2 ||
		got.StateBatches[1].FirstOffset != 10 || got.StateBatches[1].DeliveryState != 4 || got.StateBatches[1].DeliveryCount != 5 {
		t.Fatalf("state read from the new coordinator: %+v", got)
	}
	// The old leader epoch is fenced by the new coordinator.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := p.WriteState(ctx, write)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("a write from leader epoch 4 after a read in 5: %v", kerr.ErrorForCode(code))
	}
}

// shareCoordinatorNode is the node FindCoordinator (v6, key type 2) names for key.
func shareCoordinatorNode(t *testing.T, c *Cluster, key string) int {
	t.Helper()
	var node int32 = -1
	testwait.ForWhat(t, 30*time.Second, "the share coordinator of "+key, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = 6, 2, []string{key}
		for _, i := range c.live() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := c.RequestTo(ctx, t, i, req)
			cancel()
			if err != nil {
				continue
			}
			co := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
			if co.ErrorCode != 0 {
				return kerr.ErrorForCode(co.ErrorCode)
			}
			node = co.NodeID
			return nil
		}
		return fmt.Errorf("no live node answered")
	})
	for i := range c.nodes {
		if c.Node(i).NodeID() == node {
			return i
		}
	}
	t.Fatalf("no node has id %d", node)
	return -1
}

// __share_group_state is internal like __consumer_offsets: created only by the brokers,
// on first need, and not while fewer brokers are unfenced than its replication factor;
// Metadata reports it internal; users may not create, delete or produce to it.
func TestShareState_InternalTopic(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration")
	}
	c := StartCluster(t, 1, WithProperty("share.coordinator.state.topic.replication.factor", "3"),
		WithProperty("share.coordinator.state.topic.num.partitions", "2"))
	ctx := testContext(t)
	raw := c.rawTo(t, 0)
	const topic = "__share_group_state"
	key := "g:" + metadata.Uuid{1}.String() + ":0"
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorType, find.CoordinatorKeys = 6, 2, []string{key}
	resp := raw.do(ctx, find).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("FindCoordinator with 1 broker and RF 3: %+v, want COORDINATOR_NOT_AVAILABLE", resp.Coordinators)
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	tt := kmsg.NewCreateTopicsRequestTopic()
	tt.Topic, tt.NumPartitions, tt.ReplicationFactor = topic, 1, 1
	ct.Topics = append(ct.Topics, tt)
	if rt := raw.do(ctx, ct).(*kmsg.CreateTopicsResponse).Topics[0]; rt.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("a user's CreateTopics of %s: %v, want INVALID_REQUEST", topic, kerr.ErrorForCode(rt.ErrorCode))
	}
	if c.WaitConverged().Topics[topic].Name != "" {
		t.Fatalf("%s created with fewer brokers than its replication factor, or by a user", topic)
	}

	c2 := StartCluster(t, 1, WithProperty("share.coordinator.state.topic.num.partitions", "2"))
	raw = c2.rawTo(t, 0)
	testwait.ForWhat(t, 30*time.Second, "the share coordinator", func() error {
		co := raw.do(ctx, find).(*kmsg.FindCoordinatorResponse).Coordinators[0]
		return kerr.ErrorForCode(co.ErrorCode)
	})
	view := c2.WaitConverged()
	if n := len(view.Topics[topic].Partitions); n != 2 {
		t.Fatalf("%s has %d partitions, want 2", topic, n)
	}
	if cfg := view.topicConfigs(topic); cfg["cleanup.policy"] != "delete" || cfg["retention.ms"] != "-1" ||
		cfg["segment.bytes"] != "104857600" || cfg["compression.type"] != "producer" {
		t.Fatalf("%s configs %v", topic, cfg)
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	if m := raw.do(ctx, md).(*kmsg.MetadataResponse); len(m.Topics) != 1 || !m.Topics[0].IsInternal {
		t.Fatalf("Metadata does not report %s as internal: %+v", topic, m.Topics)
	}
	pcl := c2.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", topic, err)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(topic)
	del.Topics = append(del.Topics, dt)
	del.TopicNames = []string{topic}
	if d := raw.do(ctx, del).(*kmsg.DeleteTopicsResponse); len(d.Topics) != 1 || d.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("delete %s: %+v, want INVALID_REQUEST", topic, d.Topics)
	}
}
