package broker

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopicsRaw sends one CreateTopics request with topics of the given partition
// counts (replication factor 1) and returns its topics' results.
func createTopicsRaw(t *testing.T, cl *kgo.Client, validateOnly bool, topics map[string]int32) []kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
	for name, n := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, n, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != len(topics) {
		t.Fatalf("%d topics answered, %d asked", len(resp.Topics), len(topics))
	}
	return resp.Topics
}

func wantPolicyViolation(t *testing.T, topics []kmsg.CreateTopicsResponseTopic, msg string) {
	t.Helper()
	for _, rt := range topics {
		if rt.ErrorCode != kerr.PolicyViolation.Code || rt.ErrorMessage == nil || !strings.Contains(*rt.ErrorMessage, msg) {
			t.Fatalf("topic %s: code %d message %v, want POLICY_VIOLATION saying %q", rt.Topic, rt.ErrorCode, rt.ErrorMessage, msg)
		}
	}
}

// TestCreateTopicsMillionPartitions: CreateTopics with 1,000,000 partitions is refused
// with POLICY_VIOLATION at once, and an ordinary CreateTopics sent at the same time
// succeeds; neither topic of the refused request exists afterwards.
func TestCreateTopicsMillionPartitions(t *testing.T) {
	b := startTestBroker(t, "", nil)
	cl := newClient(t, b)
	var wg sync.WaitGroup
	var big []kmsg.CreateTopicsResponseTopic
	var bigTook time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "huge", 1_000_000, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testContext(t), cl)
		bigTook = time.Since(start)
		if err != nil {
			t.Error(err)
			return
		}
		big = resp.Topics
	}()
	small := createTopicsRaw(t, cl, false, map[string]int32{"ordinary": 1})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	wantPolicyViolation(t, big, "excessively large number of partitions per request: 1000000, the limit is 10000")
	if small[0].ErrorCode != 0 {
		t.Fatalf("the ordinary topic: code %d %v", small[0].ErrorCode, small[0].ErrorMessage)
	}
	// Not a speed assertion: a guard against the old behaviour (minutes of work and a
	// REQUEST_TIMED_OUT). The time itself is logged for the record.
	t.Logf("1,000,000-partition CreateTopics refused in %v", bigTook)
	if bigTook > 10*time.Second {
		t.Fatalf("the refusal took %v", bigTook)
	}
	if b.Image().Topic("huge") != nil || b.Image().Topic("ordinary") == nil {
		t.Fatal("the image does not hold exactly the ordinary topic")
	}
}

// TestAdminRequestBounds: each bound of controller/limits.go, just past and at its value.
func TestAdminRequestBounds(t *testing.T) {
	b := startTestBroker(t, "", nil)
	cl := newClient(t, b)

	// Summed over topics: 6,000 + 5,000 partitions.
	wantPolicyViolation(t, createTopicsRaw(t, cl, false, map[string]int32{"a": 6000, "b": 5000}), "11000, the limit is 10000")
	// validate_only is bounded alike.
	wantPolicyViolation(t, createTopicsRaw(t, cl, true, map[string]int32{"c": 20000}), "20000, the limit is 10000")
	// An explicit assignment counts its entries.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "assigned", -1, -1
	for i := range 10_001 {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), []int32{0}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	wantPolicyViolation(t, resp.Topics, "10001, the limit is 10000")
	// 10,000 partitions is allowed by the partition bound, but with its topic record it
	// is 10,001 metadata records: Kafka's MAX_RECORDS_PER_USER_OP refuses it too.
	wantPolicyViolation(t, createTopicsRaw(t, cl, false, map[string]int32{"d": 10000}), "10001 metadata records, the limit is 10000")
	// Too many topics in one request.
	many := map[string]int32{}
	for i := range controller.MaxResourcesPerRequest + 1 {
		many[fmt.Sprintf("t%05d", i)] = 1
	}
	wantPolicyViolation(t, createTopicsRaw(t, cl, false, many), "names 10001 resources, the limit is 10000")
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis = 30000
	for name := range many {
		n := name
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = &n
		del.Topics = append(del.Topics, dt)
		del.TopicNames = append(del.TopicNames, n)
	}
	dresp, err := del.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(dresp.Topics) != len(many) {
		t.Fatalf("DeleteTopics answered %d of %d topics", len(dresp.Topics), len(many))
	}
	for _, dt := range dresp.Topics {
		if dt.ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("DeleteTopics %v: code %d", dt.Topic, dt.ErrorCode)
		}
	}
	for _, name := range []string{"a", "b", "c", "assigned", "d", "t00000"} {
		if b.Image().Topic(name) != nil {
			t.Fatalf("refused topic %s exists", name)
		}
	}
}

// TestLargestAllowedTopicLetsOthersThrough creates the largest topic the bounds allow
// (9,999 partitions, one Raft entry of 10,000 records) while an ordinary CreateTopics
// runs beside it: both succeed. The time each took is logged (the ordinary one waits at
// most for the large entry to apply).
func TestLargestAllowedTopicLetsOthersThrough(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 9,999 partitions")
	}
	b := startTestBroker(t, "", nil)
	cl := newClient(t, b)
	var wg sync.WaitGroup
	var large []kmsg.CreateTopicsResponseTopic
	var largeTook time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 60000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "large", 9_999, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testContext(t), cl)
		largeTook = time.Since(start)
		if err != nil {
			t.Error(err)
			return
		}
		large = resp.Topics
	}()
	start := time.Now()
	small := createTopicsRaw(t, cl, false, map[string]int32{"ordinary": 1})
	smallTook := time.Since(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if large[0].ErrorCode != 0 || small[0].ErrorCode != 0 {
		t.Fatalf("large: code %d %v; ordinary: code %d %v", large[0].ErrorCode, large[0].ErrorMessage, small[0].ErrorCode, small[0].ErrorMessage)
	}
	if n := len(b.Image().Topic("large").Partitions); n != 9_999 {
		t.Fatalf("the large topic has %d partitions", n)
	}
	t.Logf("9,999-partition CreateTopics took %v; the ordinary one beside it %v", largeTook, smallTook)
}
