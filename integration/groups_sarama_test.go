package integration

// Consumer groups through IBM/sarama's ConsumerGroup (default Version 2.8.0, range
// strategy, auto-commit every second).

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/IBM/sarama"
)

// saramaGroupHandler records every message of its claims and marks it consumed; after
// stopAfter messages (0: never) it commits, reports on done and stops reading.
type saramaGroupHandler struct {
	m         *groupMember
	stopAfter int
	done      chan struct{}
	count     int // messages seen; touched by one ConsumeClaim at a time in these tests
	mu        sync.Mutex
}

func (h *saramaGroupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaGroupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		h.mu.Lock()
		if h.stopAfter > 0 && h.count >= h.stopAfter {
			h.mu.Unlock()
			return nil
		}
		h.m.add(msg.Partition, msg.Offset, string(msg.Value))
		s.MarkMessage(msg, "")
		h.count++
		reached := h.stopAfter > 0 && h.count == h.stopAfter
		h.mu.Unlock()
		if reached {
			s.Commit()
			close(h.done)
			return nil
		}
	}
	return nil
}

// saramaGroupConfig is sarama's default config with the test's client id, session
// timeout, the oldest offset where nothing is committed, and ks as the dialer.
func saramaGroupConfig(clientID string, ks *killSwitch) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = clientID
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Session.Timeout = groupSessionTimeout
	cfg.Consumer.Group.Heartbeat.Interval = groupHeartbeat
	if ks != nil {
		cfg.Net.Proxy.Enable = true
		cfg.Net.Proxy.Dialer = ks
	}
	return cfg
}

// runSaramaGroup runs cg.Consume in a loop (it returns at every rebalance) until ctx
// ends or the group is closed.
func runSaramaGroup(ctx context.Context, cg sarama.ConsumerGroup, topic string, h sarama.ConsumerGroupHandler) {
	for ctx.Err() == nil {
		if err := cg.Consume(ctx, []string{topic}, h); errors.Is(err, sarama.ErrClosedConsumerGroup) {
			return
		}
	}
}

// startSaramaMember is a startMember for sarama's ConsumerGroup.
func startSaramaMember(t testing.TB, c *Cluster, group, topic, clientID string) *groupMember {
	t.Helper()
	ks := &killSwitch{}
	cg, err := bounded(t, saramaTimeout, "NewConsumerGroup", func() (sarama.ConsumerGroup, error) {
		return sarama.NewConsumerGroup(c.Addrs(), group, saramaGroupConfig(clientID, ks))
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &groupMember{clientID: clientID}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runSaramaGroup(ctx, cg, topic, &saramaGroupHandler{m: m})
	}()
	stop := func() {
		cancel()
		bounded(t, saramaTimeout, "ConsumerGroup.Close", func() (struct{}, error) { return struct{}{}, cg.Close() })
		wg.Wait()
	}
	m.setStop(t, stop, func() { // Close sends LeaveGroup
		ks.kill()
		stop()
	})
	return m
}

// TestGroupsSarama_SplitRebalanceLeaveExpire runs the split scenario with sarama.
func TestGroupsSarama_SplitRebalanceLeaveExpire(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	runSplitScenario(t, c, "sarama", startSaramaMember)
}

// TestGroupsSarama_CommitAndResume consumes 500 of 1000 records through a sarama
// ConsumerGroup, commits, closes; a new member starts at 500 exactly.
func TestGroupsSarama_CommitAndResume(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	const topic, group = "sarama-resume", "sarama-resume-group"
	c.CreateTopic(t, topic, 1, nil)
	produceN(t, c, topic, 1000)

	resume := func(stopAfter int) *groupMember {
		cg, err := bounded(t, saramaTimeout, "NewConsumerGroup", func() (sarama.ConsumerGroup, error) {
			return sarama.NewConsumerGroup(c.Addrs(), group, saramaGroupConfig("sarama-resume", nil))
		})
		if err != nil {
			t.Fatal(err)
		}
		m := &groupMember{clientID: "sarama-resume"}
		h := &saramaGroupHandler{m: m, stopAfter: stopAfter, done: make(chan struct{})}
		ctx, cancel := context.WithCancel(testContext(t))
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			runSaramaGroup(ctx, cg, topic, h)
		}()
		select {
		case <-h.done:
		case <-ctx.Done():
			t.Fatalf("sarama consumed %d of %d records: %v", len(m.records()), stopAfter, ctx.Err())
		}
		cancel()
		bounded(t, saramaTimeout, "ConsumerGroup.Close", func() (struct{}, error) { return struct{}{}, cg.Close() })
		<-finished
		return m
	}
	first := resume(500).records()
	for i, r := range first {
		if r.offset != int64(i) {
			t.Fatalf("record %d at offset %d", i, r.offset)
		}
	}
	if got := committedOffset(t, c, group, topic); got != 500 {
		t.Fatalf("committed offset %d, want 500", got)
	}
	if next := resume(1).records(); next[0].offset != 500 {
		t.Fatalf("a new member started at %d, want 500", next[0].offset)
	}
}
