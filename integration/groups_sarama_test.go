package integration

// Consumer groups through IBM/sarama's ConsumerGroup (default Version 2.8.0, range
// strategy, auto-commit every second).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
)

// saramaGroupHandler records every message of its claims and marks it consumed; after
// stopAfter messages (0: never) it commits, reports on done and stops reading.
type saramaGroupHandler struct {
	m          *groupMember
	generation atomic.Int32 // the session's generation, set by Setup
	stopAfter  int
	done       chan struct{}
	count      int // messages seen; guarded by mu
	mu         sync.Mutex
}

func (h *saramaGroupHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.generation.Store(s.GenerationID())
	return nil
}
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
	return startSaramaMemberWith(nil)(t, c, group, topic, clientID)
}

// startSaramaMemberWith is a startMember for sarama's ConsumerGroup whose config
// configure adjusts (nil: none).
func startSaramaMemberWith(configure func(*sarama.Config)) startMember {
	return func(t testing.TB, c *Cluster, group, topic, clientID string) *groupMember {
		t.Helper()
		ks := &killSwitch{}
		cfg := saramaGroupConfig(clientID, ks)
		if configure != nil {
			configure(cfg)
		}
		cg, err := bounded(t, saramaTimeout, "NewConsumerGroup", func() (sarama.ConsumerGroup, error) {
			return sarama.NewConsumerGroup(c.Addrs(), group, cfg)
		})
		if err != nil {
			t.Fatal(err)
		}
		m := &groupMember{clientID: clientID}
		h := &saramaGroupHandler{m: m}
		m.generation = h.generation.Load
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			runSaramaGroup(ctx, cg, topic, h)
		}()
		stop := func() {
			cancel()
			bounded(t, saramaTimeout, "ConsumerGroup.Close", func() (struct{}, error) { return struct{}{}, cg.Close() })
			wg.Wait()
		}
		m.setStop(t, stop, func() { // Close sends LeaveGroup, except for static members
			ks.kill()
			stop()
		})
		return m
	}
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

// TestGroupsSarama_StaticMembership restarts a static sarama member
// (Consumer.Group.InstanceId; Close sends no LeaveGroup) within its session timeout: it
// gets its partitions back in the same generation and the other member is not
// rebalanced.
func TestGroupsSarama_StaticMembership(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	const topic, group = "sarama-static", "sarama-static-group"
	c.CreateTopic(t, topic, 4, nil)
	static := func(instance string) startMember {
		return startSaramaMemberWith(func(cfg *sarama.Config) {
			cfg.Consumer.Group.InstanceId = instance
			cfg.Consumer.Group.Session.Timeout = 20 * time.Second
		})
	}
	a := static("static-a")(t, c, group, topic, "sarama-static-a")
	b := static("static-b")(t, c, group, topic, "sarama-static-b")
	before := waitSplit(t, c, group, topic, 4, "sarama-static-a", "sarama-static-b")
	var gen int32
	testwait.For(t, groupWait, func() error {
		gen = a.generation()
		if gen < 1 || b.generation() != gen {
			return fmt.Errorf("generations: a %d, b %d", gen, b.generation())
		}
		return nil
	})

	b.leave()
	b2 := static("static-b")(t, c, group, topic, "sarama-static-b")
	testwait.For(t, groupWait, func() error {
		if got := b2.generation(); got != gen {
			return fmt.Errorf("the restarted member is in generation %d, want %d", got, gen)
		}
		return nil
	})
	after := waitSplit(t, c, group, topic, 4, "sarama-static-a", "sarama-static-b")
	if !slices.Equal(after["sarama-static-a"], before["sarama-static-a"]) || !slices.Equal(after["sarama-static-b"], before["sarama-static-b"]) {
		t.Fatalf("assignment %v after the restart, %v before", after, before)
	}
	if got := a.generation(); got != gen {
		t.Fatalf("the other member is in generation %d, was %d: the group rebalanced", got, gen)
	}
	t.Logf("generation %d before and after the static member's restart; assignment %v", gen, before)
	checkPhase(t, c, group, topic, "static", 4, a, b2)
}
