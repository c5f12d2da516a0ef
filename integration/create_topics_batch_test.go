package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCluster_CreateTopicsManyInOneRequest: one CreateTopics of 100 topics (committed
// in one metadata entry) creates every one with its partitions, answers in request
// order, and refuses each topic on its own: an existing name, a name listed twice and
// a name colliding ('.' and '_') with another topic of the same request.
func TestCluster_CreateTopicsManyInOneRequest(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	c.CreateTopicRF(t, "batch-existing", 1, 1, nil)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	add := func(name string, partitions int32) {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 3
		req.Topics = append(req.Topics, rt)
	}
	for i := range 100 {
		add(fmt.Sprintf("batch-%03d", i), 1)
	}
	add("batch-existing", 1)
	add("batch.dot", 1)
	add("batch_dot", 1)
	add("batch-twice", 1)
	add("batch-twice", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.RequestTo(ctx, t, (c.Controller()+1)%3, req)
	if err != nil {
		t.Fatal(err)
	}
	topics := resp.(*kmsg.CreateTopicsResponse).Topics
	if len(topics) != len(req.Topics) {
		t.Fatalf("%d topics answered, %d asked", len(topics), len(req.Topics))
	}
	want := map[string]int16{"batch-existing": kerr.TopicAlreadyExists.Code, "batch.dot": 0,
		"batch_dot": kerr.InvalidTopicException.Code, "batch-twice": kerr.InvalidRequest.Code}
	for i, rt := range topics {
		if rt.Topic != req.Topics[i].Topic {
			t.Fatalf("answer %d is for %s, asked %s", i, rt.Topic, req.Topics[i].Topic)
		}
		code, special := want[rt.Topic]
		if !special {
			code = 0
		}
		if rt.ErrorCode != code {
			t.Errorf("%s: %v, want %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode), kerr.ErrorForCode(code))
		}
	}
	im := c.WaitConverged()
	for i := range 100 {
		name := fmt.Sprintf("batch-%03d", i)
		if tv, ok := im.Topics[name]; !ok || len(tv.Partitions) != 1 {
			t.Fatalf("%s missing or incomplete in the image", name)
		}
	}
	if _, ok := im.Topics["batch_dot"]; ok {
		t.Fatal("batch_dot was created beside batch.dot")
	}
}
