package integration

// Admin requests reach whichever broker a client picked; the ones that are not the
// controller forward them.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCluster_AdminViaNonController sends CreateTopics, DeleteTopics and Metadata with
// auto-creation to a broker that is not the controller, pinned to it (no client-side
// routing to the controller): each succeeds, with no NOT_CONTROLLER on a healthy
// cluster, and every node sees the outcome. Then a kgo producer seeded with that broker
// only auto-creates its topic, and a produce/consume round trip on a replication factor
// 1 topic works from every seed.
func TestCluster_AdminViaNonController(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	ctrl := c.Controller()
	other := (ctrl + 1) % 3

	c.mustCreateTopicVia(t, other, "via-other", 3, 3, map[string]string{"retention.ms": "7200000"})
	im := c.WaitConverged()
	if tp, ok := im.Topics["via-other"]; !ok || len(tp.Partitions) != 3 || im.topicConfigs("via-other")["retention.ms"] != "7200000" {
		t.Fatalf("via-other after creation via node-%d: %s %v", other, tp, im.topicConfigs("via-other"))
	}

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr("via-other")
	req.Topics = append(req.Topics, rt)
	req.TopicNames = []string{"via-other"}
	for attempt := 1; ; attempt++ {
		var code int16
		election := c.electionDuring(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := c.RequestTo(ctx, t, other, req)
			if err != nil {
				t.Fatalf("DeleteTopics via node-%d: %v", other, err)
			}
			topics := resp.(*kmsg.DeleteTopicsResponse).Topics
			if len(topics) != 1 {
				t.Fatalf("DeleteTopics via node-%d: %+v", other, topics)
			}
			code = topics[0].ErrorCode
		})
		if attempt > 1 && code == kerr.UnknownTopicOrPartition.Code {
			code = 0 // the first attempt, answered during an election, had committed
		}
		if code == kerr.NotController.Code && election && attempt < 5 {
			t.Logf("DeleteTopics via node-%d: NOT_CONTROLLER during a controller election; retrying", other)
			continue
		}
		if code != 0 {
			t.Fatalf("DeleteTopics via node-%d: %v", other, kerr.ErrorForCode(code))
		}
		break
	}
	im = c.WaitConverged()
	if _, ok := im.Topics["via-other"]; ok {
		t.Fatalf("via-other still exists after deletion via node-%d", other)
	}

	// Metadata with allow_auto_topic_creation, to the non-controller: the creating
	// request gets LEADER_NOT_AVAILABLE without partitions (as from Kafka), the next one
	// the partitions.
	for attempt := 1; ; attempt++ {
		var md *kmsg.MetadataResponse
		election := c.electionDuring(func() {
			md = c.metadataVia(t, other, []string{"auto-raw"}, true)
			if len(md.Topics) == 1 && md.Topics[0].ErrorCode == kerr.LeaderNotAvailable.Code && len(md.Topics[0].Partitions) == 0 {
				md = c.metadataVia(t, other, []string{"auto-raw"}, true)
			}
		})
		if len(md.Topics) == 1 && md.Topics[0].ErrorCode == 0 && len(md.Topics[0].Partitions) == 1 {
			break
		}
		if !election || attempt == 5 {
			t.Fatalf("auto-creating Metadata via node-%d: %+v", other, md.Topics)
		}
		t.Logf("auto-creating Metadata via node-%d failed during a controller election; retrying", other)
	}
	im = c.WaitConverged()
	if tp, ok := im.Topics["auto-raw"]; !ok || len(tp.Partitions) != 1 || len(tp.Partitions[0].Replicas) != 1 {
		t.Fatalf("auto-raw: %s (expected num.partitions 1, default.replication.factor 1)", tp)
	}

	// A kgo producer that knows only the non-controller auto-creates its topic.
	prod := c.ClientTo(t, other, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("auto-kgo"))
	if err := prod.ProduceSync(testContext(t), kgo.StringRecord("first")).FirstErr(); err != nil {
		t.Fatalf("producing to auto-kgo through node-%d: %v", other, err)
	}
	if _, ok := c.WaitConverged().Topics["auto-kgo"]; !ok {
		t.Fatalf("auto-kgo was not created")
	}

	// Round trip from every seed on a replication factor 1 topic with a partition per
	// broker (the placement puts one leader on each).
	c.mustCreateTopicVia(t, other, "round-trip", 3, 1, nil)
	leaders := map[int32]bool{}
	for _, p := range c.WaitConverged().Topics["round-trip"].Partitions {
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("round-trip leaders %v: not one per broker", leaders)
	}
	const perSeed = 30
	var want []string
	for seed := range 3 {
		cl := c.ClientTo(t, seed, kgo.DefaultProduceTopic("round-trip"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		var records []*kgo.Record
		for i := range perSeed {
			v := recordValue(fmt.Sprintf("seed%d", seed), i)
			want = append(want, v)
			records = append(records, &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(v)})
		}
		if err := cl.ProduceSync(testContext(t), records...).FirstErr(); err != nil {
			t.Fatalf("producing through seed node-%d: %v", seed, err)
		}
	}
	slices.Sort(want)
	for seed := range 3 {
		cl := c.ClientTo(t, seed, kgo.ConsumeTopics("round-trip"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for len(got) < len(want) && ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			fetches.EachError(func(topic string, p int32, err error) {
				if ctx.Err() == nil {
					t.Errorf("consuming through seed node-%d: %s/%d: %v", seed, topic, p, err)
				}
			})
			fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		cancel()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("consumed through seed node-%d: %d records, expected %d", seed, len(got), len(want))
		}
	}
	if r := c.createTopicVia(t, other, "round-trip", 1, 1, nil); r.ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("creating round-trip again via node-%d: %v", other, kerr.ErrorForCode(r.ErrorCode))
	}
}
