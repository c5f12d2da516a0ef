package integration

// Group coordinator scenarios (P5): __consumer_offsets created on first need and
// protected, coordinator failover under a consuming and committing kgo group, every
// node restarted, bad input over raw requests, and the admin APIs' outcomes.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawTo is a client bound to node i alone (no routing), for requests whose error codes
// the test checks as the node sends them.
type rawTo struct {
	t  testing.TB
	cl *kgo.Client
}

func (c *Cluster) rawTo(t testing.TB, i int) *rawTo {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(i)), byNameGroupVersions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &rawTo{t, cl}
}

func (r *rawTo) do(ctx context.Context, req kmsg.Request) kmsg.Response {
	r.t.Helper()
	resp, err := r.cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		r.t.Fatalf("%T: %v", req, err)
	}
	return resp
}

// byNameGroupVersions caps the group APIs at the last versions that name topics and
// describe an unknown group without an error (OffsetCommit and OffsetFetch v9,
// DescribeGroups v5): the raw helpers here build their requests by topic name. Their
// v10 (topic ids) and v6 are tested in broker/offsets_consumer_group_test.go.
func byNameGroupVersions() kgo.Opt {
	v := namedTopicVersions()
	// TxnOffsetCommit v5 is Transactions V2's (an implicit add; TRANSACTION_ABORTABLE
	// for a refused verification): the raw transaction helpers speak V1.
	v.SetMaxKeyVersion(kmsg.TxnOffsetCommit.Int16(), 4)
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	v.SetMaxKeyVersion(kmsg.OffsetFetch.Int16(), 9)
	v.SetMaxKeyVersion(kmsg.DescribeGroups.Int16(), 5)
	return kgo.MaxVersions(v)
}

// coordinatorOf polls FindCoordinator through node via until group has a coordinator
// and returns its node id.
func coordinatorOf(t testing.TB, c *Cluster, via int, group string) int {
	t.Helper()
	node := liveCoordinator(t, c, via, group, 0)
	// FindCoordinator names the leader of the group's partition at once, as Kafka does;
	// the partition may still be loading (COORDINATOR_LOAD_IN_PROGRESS, which clients
	// retry). Wait until the coordinator serves the group.
	coordinator := c.rawTo(t, int(node))
	testwait.For(t, groupWait, func() error {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp := coordinator.do(testContext(t), req).(*kmsg.DescribeGroupsResponse)
		if len(resp.Groups) == 1 && resp.Groups[0].ErrorCode != 0 {
			return fmt.Errorf("DescribeGroups at the coordinator: %v", kerr.ErrorForCode(resp.Groups[0].ErrorCode))
		}
		return nil
	})
	return int(node)
}

// joinRaw joins group at node with a v5 JoinGroup (MEMBER_ID_REQUIRED first, then the
// rejoin with the given id) and returns the final answer.
func joinRaw(ctx context.Context, r *rawTo, group, protocolType string, instanceID *string, topics ...string) *kmsg.JoinGroupResponse {
	r.t.Helper()
	join := func(memberID string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 5
		req.Group, req.MemberID, req.InstanceID = group, memberID, instanceID
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
		req.ProtocolType = protocolType
		p := kmsg.NewJoinGroupRequestProtocol()
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = topics
		p.Name, p.Metadata = "range", meta.AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		return r.do(ctx, req).(*kmsg.JoinGroupResponse)
	}
	resp := join("")
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		resp = join(resp.MemberID)
	}
	return resp
}

// syncRaw sends the leader's SyncGroup (assigning nothing) and returns its code.
func syncRaw(ctx context.Context, r *rawTo, group, memberID string, generation int32) int16 {
	r.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = group, memberID, generation
	return r.do(ctx, req).(*kmsg.SyncGroupResponse).ErrorCode
}

func heartbeatRaw(ctx context.Context, r *rawTo, group, memberID string, generation int32) int16 {
	r.t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = group, memberID, generation
	return r.do(ctx, req).(*kmsg.HeartbeatResponse).ErrorCode
}

func commitRaw(ctx context.Context, r *rawTo, group, memberID string, generation int32, topic string, offset int64, metadata string) int16 {
	r.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = group, memberID, generation
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.Metadata = 0, offset, &metadata
	rt.Partitions = append(rt.Partitions, p)
	req.Topics = append(req.Topics, rt)
	resp := r.do(ctx, req).(*kmsg.OffsetCommitResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		r.t.Fatalf("OffsetCommit answered %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// committedOffsets fetches group's committed offsets through a routing client.
func committedOffsets(ctx context.Context, cl *kgo.Client, group string) (map[int32]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	code, topics := resp.ErrorCode, resp.Topics
	out := map[int32]int64{}
	if len(resp.Groups) > 0 {
		code = resp.Groups[0].ErrorCode
		for _, t := range resp.Groups[0].Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return nil, kerr.ErrorForCode(p.ErrorCode)
				}
				out[p.Partition] = p.Offset
			}
		}
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	if code != 0 {
		return nil, kerr.ErrorForCode(code)
	}
	return out, nil
}

func describeRaw(ctx context.Context, r *rawTo, group string) kmsg.DescribeGroupsResponseGroup {
	r.t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp := r.do(ctx, req).(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != 1 {
		r.t.Fatalf("DescribeGroups answered %d groups", len(resp.Groups))
	}
	return resp.Groups[0]
}

func TestGroupCoordinator_OffsetsTopicCreatedOnFirstNeedAndProtected(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, WithProperty("offsets.topic.num.partitions", "6"))
	ctx := testContext(t)
	if im := c.WaitConverged(); im.Topics[offsetsTopicName].Name != "" {
		t.Fatal("__consumer_offsets exists before any group asked for it")
	}
	coord := coordinatorOf(t, c, 1, "g-first")
	var view imageView
	testwait.For(t, convergeTimeout, func() error {
		view = c.WaitConverged()
		if view.Topics[offsetsTopicName].Name == "" {
			return errors.New("no __consumer_offsets yet")
		}
		return nil
	})
	topic := view.Topics[offsetsTopicName]
	if len(topic.Partitions) != 6 {
		t.Fatalf("__consumer_offsets has %d partitions, want offsets.topic.num.partitions=6", len(topic.Partitions))
	}
	for _, p := range topic.Partitions {
		if len(p.Replicas) != 3 {
			t.Fatalf("partition %d has replicas %v, want 3 (offsets.topic.replication.factor defaults to 3 with 3 voters)", p.ID, p.Replicas)
		}
	}
	cfg := view.topicConfigs(offsetsTopicName)
	if cfg["cleanup.policy"] != "compact" || cfg["segment.bytes"] != "104857600" {
		t.Fatalf("__consumer_offsets configs %v, want cleanup.policy=compact segment.bytes=104857600", cfg)
	}
	t.Logf("coordinator of g-first: node %d", coord)

	raw := c.rawTo(t, 1)
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(offsetsTopicName)
	md.Topics = append(md.Topics, mt)
	mresp := raw.do(ctx, md).(*kmsg.MetadataResponse)
	if len(mresp.Topics) != 1 || !mresp.Topics[0].IsInternal {
		t.Fatalf("Metadata does not report __consumer_offsets as internal: %+v", mresp.Topics)
	}
	// Users may not produce to it, delete it or create it (from any node).
	pcl := c.Client(t, kgo.DefaultProduceTopic(offsetsTopicName), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
	for i := range 3 {
		r := c.rawTo(t, i)
		del := kmsg.NewPtrDeleteTopicsRequest()
		del.TopicNames = []string{offsetsTopicName}
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(offsetsTopicName)
		del.Topics = append(del.Topics, dt)
		dresp := r.do(ctx, del).(*kmsg.DeleteTopicsResponse)
		if len(dresp.Topics) != 1 || dresp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("node %d: delete __consumer_offsets answered %+v, want INVALID_REQUEST", i, dresp.Topics)
		}
		ct := kmsg.NewPtrCreateTopicsRequest()
		for _, name := range []string{offsetsTopicName, "__transaction_state"} {
			tt := kmsg.NewCreateTopicsRequestTopic()
			tt.Topic, tt.NumPartitions, tt.ReplicationFactor = name, 1, 1
			ct.Topics = append(ct.Topics, tt)
		}
		cresp := r.do(ctx, ct).(*kmsg.CreateTopicsResponse)
		for _, rt := range cresp.Topics {
			if rt.ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("node %d: create %s answered %v, want INVALID_REQUEST", i, rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
		}
	}
	if c.WaitConverged().Topics["__transaction_state"].Name != "" {
		t.Fatal("a user created __transaction_state")
	}
	// A non-coordinator answers group requests NOT_COORDINATOR.
	other := (coord + 1) % 3
	if code := heartbeatRaw(ctx, c.rawTo(t, other), "g-first", "m", 1); code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat at a non-coordinator: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
}

// offsetsTopicName is __consumer_offsets.
const offsetsTopicName = "__consumer_offsets"

func TestGroupCoordinator_NotCreatedWithFewerBrokersThanReplicationFactor(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, WithProperty("offsets.topic.replication.factor", "3"),
		WithProperty("transaction.state.log.replication.factor", "3"))
	ctx := testContext(t)
	raw := c.rawTo(t, 0)
	for range 3 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{"g"}
		resp := raw.do(ctx, req).(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("FindCoordinator with 1 broker and RF 3: %+v, want COORDINATOR_NOT_AVAILABLE", resp.Coordinators)
		}
	}
	if c.WaitConverged().Topics[offsetsTopicName].Name != "" {
		t.Fatal("__consumer_offsets created with fewer brokers than its replication factor")
	}
	// Key types: 1 (transaction) is not available either (__transaction_state follows the
	// same rule), others are invalid; batched keys.
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKeys = 1, []string{"txn-a", "txn-b"}
	resp := raw.do(ctx, req).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 2 || resp.Coordinators[1].ErrorCode != kerr.CoordinatorNotAvailable.Code || resp.Coordinators[1].Key != "txn-b" {
		t.Fatalf("transaction coordinator: %+v", resp.Coordinators)
	}
	if c.WaitConverged().Topics["__transaction_state"].Name != "" {
		t.Fatal("__transaction_state created with fewer brokers than its replication factor")
	}
	req.CoordinatorType = 7
	resp = raw.do(ctx, req).(*kmsg.FindCoordinatorResponse)
	if resp.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown key type: %v, want INVALID_REQUEST", kerr.ErrorForCode(resp.Coordinators[0].ErrorCode))
	}
}

func TestGroupCoordinator_FailoverKeepsCommittedOffsets(t *testing.T) {
	t.Parallel()
	opts := append(groupOptions(), WithProperty("offsets.topic.num.partitions", "5"))
	c := StartCluster(t, 3, opts...)
	ctx := testContext(t)
	const topic, group, total = "failover", "g-failover", 4000
	c.CreateTopicRF(t, topic, 4, 3, nil)
	pcl := c.Client(t, kgo.DefaultProduceTopic(topic))
	var recs []*kgo.Record
	for i := range total {
		recs = append(recs, &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(recordValue("v", i))})
	}
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	coord := coordinatorOf(t, c, 0, group)
	t.Logf("coordinator of %s: node %d", group, coord)

	// Every commit the coordinator acknowledged, per partition.
	var mu sync.Mutex
	acked := map[int32]int64{}
	seen := map[string]bool{}
	cl := c.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(groupSessionTimeout), kgo.HeartbeatInterval(groupHeartbeat),
		kgo.FetchMaxPartitionBytes(2000), kgo.FetchMaxBytes(8000))
	// A watcher checks that no committed offset ever moves backwards. It starts a new
	// client after a failure: kgo keeps dialing a dead coordinator it cached for a
	// sharded OffsetFetch.
	fresh := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	watch := fresh()
	stopWatch := make(chan struct{})
	watchDone := make(chan error, 1)
	go func() {
		defer func() { watch.Close() }()
		last := map[int32]int64{}
		for {
			select {
			case <-stopWatch:
				watchDone <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			got, err := committedOffsets(wctx, watch, group)
			cancel()
			if err != nil {
				watch.Close() // the coordinator is moving
				watch = fresh()
				continue
			}
			for p, o := range got {
				if o < last[p] {
					watchDone <- fmt.Errorf("partition %d: committed offset went from %d back to %d", p, last[p], o)
					return
				}
				last[p] = max(last[p], o)
			}
		}
	}()
	killed := false
	var ackedAtKill map[int32]int64
	deadline := time.Now().Add(groupWait)
	for len(seen) < total {
		if time.Now().After(deadline) {
			t.Fatalf("consumed %d of %d records before the deadline", len(seen), total)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollRecords(pctx, 100)
		cancel()
		batch := fs.Records()
		for _, r := range batch {
			seen[string(r.Value)] = true
		}
		if len(batch) > 0 {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := cl.CommitRecords(cctx, batch...); err == nil {
				mu.Lock()
				for _, r := range batch {
					acked[r.Partition] = max(acked[r.Partition], r.Offset+1)
				}
				mu.Unlock()
			}
			cancel()
		}
		if !killed && len(seen) >= total/4 {
			mu.Lock()
			ackedAtKill = map[int32]int64{}
			for p, o := range acked {
				ackedAtKill[p] = o
			}
			mu.Unlock()
			t.Logf("killing the coordinator (node %d) after %d records", coord, len(seen))
			c.Kill(coord)
			killed = true
		}
	}
	if !killed {
		t.Fatal("everything was consumed before the kill")
	}
	// Commit the last position and check it on the new coordinator.
	var final map[int32]int64
	testwait.For(t, groupWait, func() error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := cl.CommitUncommittedOffsets(cctx); err != nil {
			return err
		}
		check := fresh()
		defer check.Close()
		got, err := committedOffsets(cctx, check, group)
		if err != nil {
			return err
		}
		sum := int64(0)
		for _, o := range got {
			sum += o
		}
		if sum != total {
			return fmt.Errorf("committed offsets %v sum to %d, want %d", got, sum, total)
		}
		final = got
		return nil
	})
	for p, o := range ackedAtKill {
		if final[p] < o {
			t.Fatalf("partition %d: committed %d after the failover, below the %d acknowledged before it", p, final[p], o)
		}
	}
	close(stopWatch)
	if err := <-watchDone; err != nil {
		t.Fatal(err)
	}
	newCoord := coordinatorOf(t, c, (coord+1)%3, group)
	if newCoord == coord {
		t.Fatalf("the coordinator is still the killed node %d", coord)
	}
	testwait.For(t, groupWait, func() error {
		g := describeRaw(ctx, c.rawTo(t, newCoord), group)
		if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 1 {
			return fmt.Errorf("group at node %d: %v state %q, %d members", newCoord, kerr.ErrorForCode(g.ErrorCode), g.State, len(g.Members))
		}
		return nil
	})
}

func TestGroupCoordinator_RestartEveryNode(t *testing.T) {
	t.Parallel()
	opts := append(groupOptions(), WithProperty("offsets.topic.num.partitions", "3"))
	c := StartCluster(t, 3, opts...)
	ctx := testContext(t)
	const topic, group = "restart-all", "g-restart"
	c.CreateTopicRF(t, topic, 2, 3, nil)
	produce := func(from, to int) {
		pcl := c.Client(t, kgo.DefaultProduceTopic(topic))
		defer pcl.Close()
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(recordValue("r", i))})
		}
		if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(want int) []*kgo.Record {
		cl := c.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.SessionTimeout(groupSessionTimeout), kgo.HeartbeatInterval(groupHeartbeat))
		defer cl.Close()
		var got []*kgo.Record
		for len(got) < want {
			pctx, cancel := context.WithTimeout(ctx, groupWait)
			fs := cl.PollFetches(pctx)
			err := pctx.Err()
			cancel()
			if err != nil {
				t.Fatalf("consumed %d of %d: %v", len(got), want, err)
			}
			got = append(got, fs.Records()...)
		}
		if err := cl.CommitRecords(ctx, got...); err != nil {
			t.Fatal(err)
		}
		cl.LeaveGroup()
		return got
	}
	produce(0, 100)
	if got := consume(100); len(got) != 100 {
		t.Fatalf("consumed %d records, want 100", len(got))
	}
	watch := c.Client(t)
	before, err := committedOffsets(ctx, watch, group)
	if err != nil {
		t.Fatal(err)
	}
	coord := coordinatorOf(t, c, 0, group)
	described := describeRaw(ctx, c.rawTo(t, coord), group)
	t.Logf("before the restart: offsets %v, group %q %q", before, described.State, described.ProtocolType)

	for i := range 3 {
		c.Kill(i)
	}
	c.Restart(0, 1, 2)
	watch = c.Client(t)
	testwait.For(t, groupWait, func() error {
		got, err := committedOffsets(ctx, watch, group)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(before) {
			return fmt.Errorf("offsets after the restart %v, want %v", got, before)
		}
		return nil
	})
	coord = coordinatorOf(t, c, 0, group)
	g := describeRaw(ctx, c.rawTo(t, coord), group)
	if g.ErrorCode != 0 || g.State != "Empty" || g.ProtocolType != "consumer" {
		t.Fatalf("group after the restart: %v state %q protocol type %q, want Empty consumer", kerr.ErrorForCode(g.ErrorCode), g.State, g.ProtocolType)
	}
	// A new member resumes exactly at the committed offsets.
	produce(100, 110)
	got := consume(10)
	for _, r := range got {
		if r.Offset < before[r.Partition] {
			t.Fatalf("record at %d-%d consumed again below the committed %d", r.Partition, r.Offset, before[r.Partition])
		}
	}
	if len(got) != 10 {
		t.Fatalf("resumed with %d records, want the 10 new ones", len(got))
	}
}

// liveCoordinator asks node via for the coordinator of key (keyType 0: a group, 1: a
// transactional id) until it names a live node. The asked broker answers from its own
// image, which may still name a node that has just stopped (its controlled shutdown
// moved the leadership, and the entry has not reached this broker yet): a client
// would fail to connect and ask again.
func liveCoordinator(t testing.TB, c *Cluster, via int, key string, keyType int8) int32 {
	t.Helper()
	raw := c.rawTo(t, via)
	var node int32 = -1
	testwait.For(t, groupWait, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = keyType
		req.CoordinatorKey = key
		req.CoordinatorKeys = []string{key}
		resp := raw.do(testContext(t), req).(*kmsg.FindCoordinatorResponse)
		code, id := resp.ErrorCode, resp.NodeID
		if len(resp.Coordinators) > 0 {
			code, id = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		if code != 0 {
			return fmt.Errorf("FindCoordinator: %v", kerr.ErrorForCode(code))
		}
		if !slices.Contains(c.live(), int(id)) {
			return fmt.Errorf("FindCoordinator names node-%d, which is stopped", id)
		}
		node = id
		return nil
	})
	return node
}
