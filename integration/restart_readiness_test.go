package integration

// Start-up readiness (issue P8 item 1, P13 item 2), seen over the wire: a broker
// restarted while producers and consumers run answers nothing from the stale image it
// restarts with. Its Raft state predates its death: in it, a topic created meanwhile
// does not exist and the partitions it led are still its own. Every response it sends
// in its first seconds must come from a caught-up image: sent only once it is ready,
// Metadata naming every topic and the leaders the controller names (in an epoch at least
// the controller's when the request was sent), and no UNKNOWN_TOPIC_OR_PARTITION for a
// topic that exists.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRestartedBrokerAnswersNoStaleImage(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	const live, created = "live", "created-while-down"
	c.CreateTopicRF(t, live, 3, 3, nil)
	ctrl := c.Controller()
	victim := (ctrl + 1) % 3

	// A producer and a consumer run throughout.
	ctx, stop := context.WithCancel(testContext(t))
	defer stop()
	var produced, failed, consumed atomic.Int64
	prod := c.Client(t, kgo.DefaultProduceTopic(live), kgo.RecordDeliveryTimeout(60*time.Second))
	cons := c.Client(t, kgo.ConsumeTopics(live))
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			<-tick.C
			prod.Produce(ctx, &kgo.Record{Value: []byte("v")}, func(_ *kgo.Record, err error) {
				switch {
				case err == nil:
					produced.Add(1)
				case ctx.Err() == nil:
					failed.Add(1)
					t.Logf("produce failed: %v", err)
				}
			})
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for ctx.Err() == nil {
			consumed.Add(int64(cons.PollFetches(ctx).NumRecords()))
		}
	}()
	defer func() {
		stop()
		<-done
		<-done
	}()

	testwait.For(t, 30*time.Second, func() error {
		if produced.Load() == 0 || consumed.Load() == 0 {
			return fmt.Errorf("%d produced, %d consumed", produced.Load(), consumed.Load())
		}
		return nil
	})

	killed := time.Now()
	c.Kill(victim)
	c.waitFenced(t, int32(victim), killed, 0)
	c.CreateTopicRF(t, created, 1, 2, nil) // on the two live brokers, not on the victim
	c.WaitConverged()

	c.Start(victim) // the listener is open at once; readiness comes later
	b := c.Node(victim)
	probe := c.ClientTo(t, victim)
	var early, answered int
	var readyAt time.Time
	for readyAt.IsZero() || time.Since(readyAt) < 2*time.Second {
		want := c.Image(ctrl) // the controller's view when the requests are sent
		sentBeforeReady := !b.Ready()
		for _, req := range staleProbeRequests(live, created) {
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			resp, err := probe.SeedBrokers()[0].Request(rctx, req)
			cancel()
			if err != nil {
				t.Fatalf("%s to the restarted node-%d: %v", kmsg.NameForKey(req.Key()), victim, err)
			}
			if !b.Ready() {
				t.Fatalf("node-%d answered %s before it was ready", victim, kmsg.NameForKey(req.Key()))
			}
			if err := checkNotStale(resp, want, live, created); err != nil {
				t.Fatalf("node-%d's answer to %s (sent %s after its restart): %v", victim, kmsg.NameForKey(req.Key()), time.Since(killed).Round(time.Millisecond), err)
			}
			answered++
		}
		if sentBeforeReady {
			early++
		}
		if readyAt.IsZero() && b.Ready() {
			readyAt = time.Now()
		}
	}
	// The clients go on after the restart.
	after, read := produced.Load(), consumed.Load()
	testwait.For(t, 30*time.Second, func() error {
		if produced.Load() <= after || consumed.Load() <= read {
			return fmt.Errorf("since node-%d was ready: %d produced, %d consumed", victim, produced.Load()-after, consumed.Load()-read)
		}
		return nil
	})
	if early == 0 {
		t.Fatalf("node-%d was ready before the first probe: the test saw no start-up", victim)
	}
	t.Logf("node-%d: %d answers checked, %d rounds sent before it was ready; %d produced (%d failed), %d consumed meanwhile",
		victim, answered, early, produced.Load(), failed.Load(), consumed.Load())
	if failed.Load() > 0 {
		t.Errorf("%d records failed to the producer", failed.Load())
	}
}

// staleProbeRequests are requests whose answers a stale image would get wrong: the
// topic created while the broker was down is unknown to it.
func staleProbeRequests(live, created string) []kmsg.Request {
	meta := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{live, created} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		meta.Topics = append(meta.Topics, rt)
	}

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 10000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = created
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = recordBatch("probe")
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)

	list := kmsg.NewPtrListOffsetsRequest()
	list.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = created
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	list.Topics = append(list.Topics, lt)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxBytes, fetch.MaxWaitMillis = -1, 1<<20, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = created
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofle.ReplicaID = -1
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = created
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.CurrentLeaderEpoch, op.LeaderEpoch = -1, 0
	ot.Partitions = append(ot.Partitions, op)
	ofle.Topics = append(ofle.Topics, ot)

	configs := kmsg.NewPtrDescribeConfigsRequest()
	cr := kmsg.NewDescribeConfigsRequestResource()
	cr.ResourceType, cr.ResourceName = kmsg.ConfigResourceTypeTopic, created
	configs.Resources = append(configs.Resources, cr)
	return []kmsg.Request{meta, produce, list, fetch, ofle, configs}
}

// checkNotStale checks one answer against the controller's view want at sending time.
func checkNotStale(resp kmsg.Response, want imageView, live, created string) error {
	unknown := func(code int16) error {
		if code == kerr.UnknownTopicOrPartition.Code {
			return fmt.Errorf("UNKNOWN_TOPIC_OR_PARTITION for %s, which exists", created)
		}
		return nil
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		if len(r.Topics) != 2 {
			return fmt.Errorf("%d topics in the answer", len(r.Topics))
		}
		for _, mt := range r.Topics {
			name := deref(mt.Topic)
			if mt.ErrorCode != 0 {
				return fmt.Errorf("topic %s: %v", name, kerr.ErrorForCode(mt.ErrorCode))
			}
			wt, ok := want.Topics[name]
			if !ok {
				return fmt.Errorf("topic %s is not in the controller's image", name)
			}
			for _, mp := range mt.Partitions {
				wp := wt.Partitions[mp.Partition]
				if mp.LeaderEpoch < wp.LeaderEpoch || (mp.LeaderEpoch == wp.LeaderEpoch && mp.Leader != wp.Leader) {
					return fmt.Errorf("%s-%d: leader %d in epoch %d; the controller had leader %d in epoch %d",
						name, mp.Partition, mp.Leader, mp.LeaderEpoch, wp.Leader, wp.LeaderEpoch)
				}
			}
		}
	case *kmsg.ProduceResponse:
		code := r.Topics[0].Partitions[0].ErrorCode
		if code != kerr.NotLeaderForPartition.Code {
			return fmt.Errorf("%v for a partition this broker does not host; want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
		}
	case *kmsg.ListOffsetsResponse:
		return unknown(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.FetchResponse:
		return unknown(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.OffsetForLeaderEpochResponse:
		return unknown(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.DescribeConfigsResponse:
		return unknown(r.Resources[0].ErrorCode)
	}
	return nil
}

// TestRestartWithManyTopicsAnswersAtOnce restarts the one node of a cluster holding 20
// topics and queries it the moment its listener opens: Metadata lists every topic with
// a leader (never UNKNOWN_TOPIC_OR_PARTITION, never an empty answer), and a consumer
// reads every topic's record.
func TestRestartWithManyTopicsAnswersAtOnce(t *testing.T) {
	c := StartCluster(t, 1)
	ctx := testContext(t)
	const n = 20
	var topics []string
	cl := c.Client(t)
	for i := range n {
		topic := fmt.Sprintf("many-%02d", i)
		topics = append(topics, topic)
		c.CreateTopic(t, topic, 1, nil)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.Stop(0)
	c.Start(0) // not waiting: the first requests arrive while the node recovers
	probe := c.ClientTo(t, 0)
	req := kmsg.NewPtrMetadataRequest()
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	sentBeforeReady := !c.Node(0).Ready()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := probe.SeedBrokers()[0].Request(rctx, req)
	cancel()
	if err != nil {
		t.Fatalf("Metadata right after the restart: %v", err)
	}
	t.Logf("Metadata sent before node-0 was ready: %v", sentBeforeReady)
	md := resp.(*kmsg.MetadataResponse)
	if len(md.Brokers) == 0 || len(md.Topics) != n {
		t.Fatalf("Metadata right after the restart: %d brokers, %d topics, want %d", len(md.Brokers), len(md.Topics), n)
	}
	for _, mt := range md.Topics {
		if mt.ErrorCode != 0 || len(mt.Partitions) != 1 || mt.Partitions[0].ErrorCode != 0 || mt.Partitions[0].Leader != 0 {
			t.Fatalf("Metadata right after the restart, topic %v: error %v, partitions %+v", *mt.Topic, kerr.ErrorForCode(mt.ErrorCode), mt.Partitions)
		}
	}
	consumer := c.Client(t, kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); len(seen) < n && time.Now().Before(deadline); {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := consumer.PollFetches(pctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				t.Fatalf("consuming %s-%d after the restart: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { seen[r.Topic] = string(r.Value) == r.Topic })
	}
	if len(seen) != n {
		t.Fatalf("after the restart the consumer read %d of the %d topics: %v", len(seen), n, seen)
	}
}
