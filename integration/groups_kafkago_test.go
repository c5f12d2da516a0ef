package integration

// Consumer groups through segmentio/kafka-go's Reader with a GroupID (its Conn stack:
// old, hard-coded API versions; range then round-robin balancers).

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafkaGoGroupReader is a group Reader with the test's client id, session timeout and
// dialer, the first offset where nothing is committed, and a short MaxWait so that
// Close does not wait out a parked fetch.
func kafkaGoGroupReader(c *Cluster, group, topic, clientID string, ks *killSwitch, commitInterval time.Duration) *kafka.Reader {
	dialer := &kafka.Dialer{ClientID: clientID, Timeout: 10 * time.Second}
	if ks != nil {
		dialer.DialFunc = ks.DialContext
	}
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:           c.Addrs(),
		GroupID:           group,
		Topic:             topic,
		Dialer:            dialer,
		StartOffset:       kafka.FirstOffset,
		SessionTimeout:    groupSessionTimeout,
		HeartbeatInterval: groupHeartbeat,
		RebalanceTimeout:  10 * time.Second,
		CommitInterval:    commitInterval,
		MaxWait:           500 * time.Millisecond,
	})
}

// startKafkaGoMember is a startMember for kafka-go's group Reader.
func startKafkaGoMember(t testing.TB, c *Cluster, group, topic, clientID string) *groupMember {
	t.Helper()
	ks := &killSwitch{}
	r := kafkaGoGroupReader(c, group, topic, clientID, ks, time.Second)
	m := &groupMember{clientID: clientID}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			msg, err := r.ReadMessage(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				continue
			}
			m.add(int32(msg.Partition), msg.Offset, string(msg.Value))
		}
	}()
	stop := func() {
		cancel()
		wg.Wait()
		bounded(t, saramaTimeout, "kafka-go Reader.Close", func() (struct{}, error) { return struct{}{}, r.Close() })
	}
	m.setStop(t, stop, func() { // Close sends LeaveGroup
		ks.kill()
		stop()
	})
	return m
}

// TestGroupsKafkaGo_SplitRebalanceLeaveExpire runs the split scenario with kafka-go.
func TestGroupsKafkaGo_SplitRebalanceLeaveExpire(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	runSplitScenario(t, c, "kafkago", startKafkaGoMember)
}

// TestGroupsKafkaGo_CommitAndResume fetches 500 of 1000 records with a group Reader,
// commits the 500th synchronously, closes; a new Reader of the group starts at 500.
func TestGroupsKafkaGo_CommitAndResume(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	const topic, group = "kafkago-resume", "kafkago-resume-group"
	c.CreateTopic(t, topic, 1, nil)
	produceN(t, c, topic, 1000)
	ctx := testContext(t)

	r := kafkaGoGroupReader(c, group, topic, "kafkago-resume", nil, 0)
	var last kafka.Message
	for i := range 500 {
		msg, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if msg.Offset != int64(i) {
			t.Fatalf("record %d at offset %d", i, msg.Offset)
		}
		last = msg
	}
	if err := r.CommitMessages(ctx, last); err != nil {
		t.Fatalf("commit: %v", err)
	}
	bounded(t, saramaTimeout, "kafka-go Reader.Close", func() (struct{}, error) { return struct{}{}, r.Close() })
	if got := committedOffset(t, c, group, topic); got != 500 {
		t.Fatalf("committed offset %d, want 500", got)
	}

	r = kafkaGoGroupReader(c, group, topic, "kafkago-resume", nil, 0)
	t.Cleanup(func() { r.Close() })
	msg, err := r.FetchMessage(ctx)
	if err != nil {
		t.Fatalf("new reader: %v", err)
	}
	if msg.Offset != 500 {
		t.Fatalf("a new reader started at %d, want 500", msg.Offset)
	}
}
