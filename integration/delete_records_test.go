package integration

// DeleteRecords' low watermark (Kafka's DelayedDeleteRecords): the answer waits until
// every replica on an unfenced broker has moved its log start offset, bounded by the
// request's timeout_ms.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func deleteRecordsRequest(topic string, offset int64, timeout time.Duration) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version, req.TimeoutMillis = 2, int32(timeout/time.Millisecond)
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestCluster_DeleteRecordsLowWatermark cuts one follower of an RF 3 partition off:
// DeleteRecords then times out (REQUEST_TIMED_OUT, the low watermark still the old log
// start), and answers the new low watermark only once the cut broker is fenced and no
// longer counts; after healing, the follower's earliest offset moves too.
func TestCluster_DeleteRecordsLowWatermark(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	c.CreateTopicRF(t, "lowmark", 1, 3, map[string]*string{"segment.bytes": kmsg.StringPtr("300")})
	ctx := testContext(t)
	cl := c.Client(t)
	for i := range 40 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lowmark", Value: []byte(recordValue("lowmark", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	im := c.WaitConverged()
	leader := int(im.Topics["lowmark"].Partitions[0].Leader)
	ctrl := c.Controller()
	follower := -1
	for i := range 3 {
		if i != leader && i != ctrl && follower < 0 {
			follower = i
		}
	}
	deleteAt := func(offset int64, timeout time.Duration) kmsg.DeleteRecordsResponseTopicPartition {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, timeout+wireTimeout)
		defer cancel()
		resp, err := c.RequestTo(rctx, t, leader, deleteRecordsRequest("lowmark", offset, timeout))
		if err != nil {
			t.Fatal(err)
		}
		dr := resp.(*kmsg.DeleteRecordsResponse)
		if len(dr.Topics) != 1 || len(dr.Topics[0].Partitions) != 1 {
			t.Fatalf("DeleteRecords answered %+v", dr.Topics)
		}
		return dr.Topics[0].Partitions[0]
	}
	if p := deleteAt(10, 15*time.Second); p.ErrorCode != 0 || p.LowWatermark != 10 {
		t.Fatalf("DeleteRecords to 10 with every replica live: %+v", p)
	}
	for i := range 3 {
		if got, err := listOffsetAt(c, i, -2, "lowmark", 0, -2); err != nil || got != 10 {
			t.Fatalf("node-%d after the answer: earliest offset %d (%v), want 10", i, got, err)
		}
	}

	cut := time.Now()
	c.Partition(follower)
	p := deleteAt(25, 300*time.Millisecond)
	if fenced := c.Node(leader).Image().Brokers[int32(follower)].Fenced; !fenced &&
		(p.ErrorCode != kerr.RequestTimedOut.Code || p.LowWatermark != 10) {
		t.Fatalf("DeleteRecords to 25 with node-%d cut off: %+v, want REQUEST_TIMED_OUT at low watermark 10", follower, p)
	}
	if got, err := listOffsetAt(c, leader, -2, "lowmark", 0, -2); err != nil || got != 25 {
		t.Fatalf("leader's earliest offset after the timed-out DeleteRecords: %d (%v), want 25", got, err)
	}
	// With a long timeout the answer comes once the cut broker is fenced (it no longer
	// counts toward the low watermark).
	if p := deleteAt(25, 15*time.Second); p.ErrorCode != 0 || p.LowWatermark != 25 {
		t.Fatalf("DeleteRecords to 25 waiting for the fence: %+v", p)
	}
	if !c.Node(leader).Image().Brokers[int32(follower)].Fenced {
		t.Fatalf("DeleteRecords answered before node-%d was fenced (cut %v ago)", follower, time.Since(cut))
	}
	c.Heal()
	testwait.For(t, 20*time.Second, func() error {
		if got, err := listOffsetAt(c, follower, -2, "lowmark", 0, -2); err != nil || got != 25 {
			return fmt.Errorf("node-%d after healing: earliest offset %d (%v), want 25", follower, got, err)
		}
		return nil
	})
}
