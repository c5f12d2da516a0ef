package broker

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The error each partition API gives for a partition without an open local replica
// (noReplicaError), asked over the wire: Kafka's rule, UNKNOWN_TOPIC_OR_PARTITION only
// for a topic or partition absent from a caught-up image, NOT_LEADER_OR_FOLLOWER when the
// partition exists but is not hosted here, its replica is opening or stopping, or the
// broker has not caught up.

// oneRecordBatch is a valid uncompressed RecordBatch v2 holding one record.
func oneRecordBatch() []byte {
	r := kmsg.Record{Key: []byte("k"), Value: []byte("v")}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: r.AppendTo(nil)}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// partitionErrors asks b, as clientID, for topic-partition with Produce, Fetch,
// ListOffsets, OffsetForLeaderEpoch and DescribeProducers and returns each answer's
// error code.
func partitionErrors(t *testing.T, b *Broker, clientID, topic string, partition int32) map[string]int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var d net.Dialer
	cl, err := rpc.DialWith(ctx, d.DialContext, b.Addr().String(), clientID)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	do := func(req kmsg.Request) kmsg.Response {
		resp, err := cl.Do(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
		return resp
	}
	out := map[string]int16{}

	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis = 9, 1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = partition, oneRecordBatch()
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	out["Produce"] = do(produce).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MaxBytes, fetch.MaxWaitMillis = 12, -1, 1<<20, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = partition, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	out["Fetch"] = do(fetch).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode

	list := kmsg.NewPtrListOffsetsRequest()
	list.Version, list.ReplicaID = 7, -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = partition, -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	list.Topics = append(list.Topics, lt)
	out["ListOffsets"] = do(list).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode

	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofle.Version, ofle.ReplicaID = 4, -1
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = topic
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.Partition, op.CurrentLeaderEpoch, op.LeaderEpoch = partition, -1, 0
	ot.Partitions = append(ot.Partitions, op)
	ofle.Topics = append(ofle.Topics, ot)
	out["OffsetForLeaderEpoch"] = do(ofle).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode

	producers := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = topic, []int32{partition}
	producers.Topics = append(producers.Topics, dt)
	out["DescribeProducers"] = do(producers).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
	return out
}

func expectEveryAPI(t *testing.T, what string, got map[string]int16, want int16) {
	t.Helper()
	for api, code := range got {
		if code != want {
			t.Errorf("%s: %s answered %v, want %v", what, api, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
	}
}

// createAssigned creates topic with one partition on broker replica, through b.
func createAssigned(t *testing.T, b *Broker, topic string, replica int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{replica}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), newClient(t, b))
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %v", topic, err, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
}

func TestNoReplicaErrorChoice(t *testing.T) {
	c := startTestCluster(t, 2, 2, nil)
	b := c.brokers[0]
	createAssigned(t, b, "here", 0)
	createAssigned(t, b, "elsewhere", 1)
	testwait.For(t, 20*time.Second, func() error {
		if c.brokers[0].Image().Topic("elsewhere") == nil || c.brokers[0].partitions.get("here", 0) == nil {
			return context.DeadlineExceeded
		}
		if st := c.brokers[0].partitions.get("here", 0).State(); st.LeaderEpoch < 0 {
			return context.DeadlineExceeded
		}
		return nil
	})
	const client = "test-client"

	if got := partitionErrors(t, b, client, "here", 0); got["Produce"] != 0 || got["ListOffsets"] != 0 {
		t.Fatalf("the hosted partition: %v", got)
	}
	expectEveryAPI(t, "topic absent", partitionErrors(t, b, client, "absent", 0), kerr.UnknownTopicOrPartition.Code)
	expectEveryAPI(t, "partition absent", partitionErrors(t, b, client, "here", 3), kerr.UnknownTopicOrPartition.Code)
	expectEveryAPI(t, "topic present, not hosted here", partitionErrors(t, b, client, "elsewhere", 0), kerr.NotLeaderForPartition.Code)

	// A replica still opening: the image assigns it here, the reconciler has not
	// added it yet.
	tp := segment.TopicPartition{Topic: "here", Partition: 0}
	pm := b.partitions
	pm.mu.Lock()
	lp := pm.parts[tp]
	delete(pm.parts, tp)
	pm.mu.Unlock()
	expectEveryAPI(t, "replica opening", partitionErrors(t, b, client, "here", 0), kerr.NotLeaderForPartition.Code)

	// A broker that has not caught up with the metadata log cannot tell that a topic is
	// absent. Clients wait (readiness_test.go); brokers pass and are told
	// NOT_LEADER_OR_FOLLOWER.
	b.ready.Store(false)
	expectEveryAPI(t, "not caught up, topic absent from the image", partitionErrors(t, b, forwardedClientPrefix+"1", "absent", 0), kerr.NotLeaderForPartition.Code)
	b.ready.Store(true)

	// A replica stopping: still found, answers as stopped.
	pm.mu.Lock()
	pm.parts[tp] = lp
	pm.mu.Unlock()
	if err := lp.Stop(false); err != nil {
		t.Fatal(err)
	}
	expectEveryAPI(t, "replica stopping", partitionErrors(t, b, client, "here", 0), kerr.NotLeaderForPartition.Code)
}

func TestDescribeConfigsUnknownTopicOnlyWhenAbsent(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "present", 1, nil)
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, name := range []string{"present", "absent"} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(testContext(t), newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Resources[0].ErrorCode; got != 0 {
		t.Errorf("present topic: %v", kerr.ErrorForCode(got))
	}
	if got := resp.Resources[1].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("absent topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(got))
	}
}
