package integration

// Replication scenarios (P4): acks=all through follower fetches, ISR shrink and expand,
// leader failover under load, KIP-279 truncation by leader epoch, KIP-101's window.
// Replicas are observed only over the Kafka wire, as a user or a tool could:
//
//   - a replica's stored bytes and high watermark: Fetch v12 from a consumer (replica
//     id -1) sent to that replica's node. The leader serves it as always; a follower
//     serves it from its own log up to its own high watermark (KIP-392). The record
//     batches come back as stored.
//   - a replica's log end offset: ListOffsets with replica id -2 (Kafka's debugging
//     replica) and timestamp -1, which any replica answers.
//   - whether a node leads a partition: ListOffsets from a consumer (replica id -1),
//     which only the leader answers.
//   - leaders, ISRs and broker registrations: the nodes' metadata images.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestReplicationSteadyState: acks=all on replication factor 3 with
// min.insync.replicas=2 completes through follower fetches; consumers see every
// acknowledged record; the replicas' logs are byte-identical below the high watermark.
func TestReplicationSteadyState(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, WithProperty("min.insync.replicas", "2"))
	c.CreateTopicRF(t, "r3", 2, 3, nil)
	cl := c.Client(t, kgo.DefaultProduceTopic("r3"), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 300
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("value-%d", i))}
		if err := cl.ProduceSync(testContext(t), r).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	// Every replica converges to the same log end offset and high watermark.
	testwait.For(t, 30*time.Second, func() error {
		for p := int32(0); p < 2; p++ {
			var leo, hw []int64
			for i := range 3 {
				st, err := replicaOffsets(t, c, i, "r3", p)
				if err != nil {
					return err
				}
				leo, hw = append(leo, st.leo), append(hw, st.hw)
			}
			if leo[0] != leo[1] || leo[1] != leo[2] || hw[0] != leo[0] || hw[1] != leo[0] || hw[2] != leo[0] {
				return fmt.Errorf("partition %d: LEOs %v HWs %v", p, leo, hw)
			}
		}
		return nil
	})
	total := int64(0)
	for p := int32(0); p < 2; p++ {
		var logs [][]byte
		for i := range 3 {
			hw, data, err := replicaLog(t, c, i, "r3", p)
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, data)
			if i == 0 {
				total += hw
			}
		}
		if !bytes.Equal(logs[0], logs[1]) || !bytes.Equal(logs[1], logs[2]) {
			t.Fatalf("partition %d: replica logs differ below the HW (%d, %d, %d bytes)", p, len(logs[0]), len(logs[1]), len(logs[2]))
		}
	}
	if total != n {
		t.Fatalf("%d records committed, produced %d", total, n)
	}
	cons := c.Client(t, kgo.ConsumeTopics("r3"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := cons.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
}

// TestStoppedFollowerLeavesAndRejoinsTheISR: 3 voters plus 2 non-voters; a topic on
// brokers 2, 3 and 4 (leader 2) with min.insync.replicas=2. Killing follower 3 shrinks
// the ISR after replica.lag.time.max.ms and acks=all goes on with two; killing 4 too
// leaves the leader alone: acks=all gets NOT_ENOUGH_REPLICAS and nothing is written.
// Restarting 3, it catches up and rejoins the ISR, and acks=all works again.
func TestStoppedFollowerLeavesAndRejoinsTheISR(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 5, WithVoters(3),
		WithProperty("min.insync.replicas", "2"),
		WithProperty("replica.lag.time.max.ms", "1000"),
		// Lag-based shrinking (1 s) comes before fencing (4 s); a restarted broker waits
		// for its old session to end before it registers again (Kafka's rule).
		WithProperty("broker.session.timeout.ms", "4000"),
		WithProperty("broker.heartbeat.interval.ms", "500"),
	)
	createAssignedTopic(t, c, "isr", []int32{2, 3, 4}, nil)
	produce := func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0)), kgo.DefaultProduceTopic("isr"),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(15*time.Second))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr()
	}
	isrOf := func() []int32 { return mustPartitionIn(t, c, c.live()[0], "isr", 0).ISR }
	testwait.For(t, 20*time.Second, func() error {
		if err := produce(); err != nil {
			return err
		}
		if len(isrOf()) != 3 {
			return fmt.Errorf("isr %v", isrOf())
		}
		return nil
	})
	// Kafka's rule: a follower is out of sync when its log end offset differs from the
	// leader's for replica.lag.time.max.ms, so the partition must move for it to shrink.
	c.Kill(3)
	if err := produce(); err != nil {
		t.Fatalf("acks=all after a follower died (the ISR shrinks to two): %v", err)
	}
	testwait.For(t, 20*time.Second, func() error { // every node applies the change, not at once
		if isr := isrOf(); slices.Contains(isr, 3) {
			return fmt.Errorf("isr still %v", isr)
		}
		return nil
	})
	// Broker 4 dies while a produce waits for it: the append is in the log, but the ISR
	// shrinks below min.insync.replicas before the ack.
	c.Kill(4)
	if code := produceTo(t, c, 2, "isr", -1); code != kerr.NotEnoughReplicasAfterAppend.Code {
		t.Fatalf("acks=all while the ISR fell to one: %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", kerr.ErrorForCode(code))
	}
	testwait.For(t, 20*time.Second, func() error {
		if isr := isrOf(); !slices.Equal(isr, []int32{2}) {
			return fmt.Errorf("isr %v", isr)
		}
		return nil
	})
	leo := mustReplicaLEO(t, c, 2, "isr", 0)
	if code := produceTo(t, c, 2, "isr", -1); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with the leader alone: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
	}
	if got := mustReplicaLEO(t, c, 2, "isr", 0); got != leo {
		t.Fatalf("NOT_ENOUGH_REPLICAS wrote data: LEO %d -> %d", leo, got)
	}
	c.Start(3)
	testwait.For(t, 30*time.Second, func() error {
		if isr := isrOf(); !slices.Contains(isr, 3) {
			return fmt.Errorf("isr %v", isr)
		}
		return nil
	})
	if err := produce(); err != nil {
		t.Fatalf("acks=all after the follower rejoined: %v", err)
	}
}

// TestKillLeaderWhileProducing: 3 voters, replication factor 3, min.insync.replicas=2,
// acks=all without client retries (so an acknowledgement is unambiguous). The leader is
// killed mid-stream; a new leader is elected from the ISR; producing continues. Every
// acknowledged record is then readable exactly once at its acknowledged offset, the
// logs of every ISR member are byte-identical below the high watermark, and the old
// leader, restarted, truncates what it must and rejoins the ISR.
func TestKillLeaderWhileProducing(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3,
		WithProperty("min.insync.replicas", "2"),
		WithProperty("broker.session.timeout.ms", "2000"),
		WithProperty("broker.heartbeat.interval.ms", "250"),
		WithProperty("replica.lag.time.max.ms", "2000"),
	)
	c.CreateTopicRF(t, "kl", 1, 3, nil)
	testwait.For(t, 20*time.Second, func() error {
		for i := range 3 {
			if _, err := partitionIn(c, i, "kl", 0); err != nil {
				return err
			}
			if _, err := replicaLEO(t, c, i, "kl", 0); err != nil {
				return fmt.Errorf("node-%d has not opened its replica: %w", i, err)
			}
		}
		return nil
	})
	cl := c.Client(t, kgo.DefaultProduceTopic("kl"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(10*time.Second), kgo.MetadataMinAge(100*time.Millisecond))
	acked := map[string]int64{} // value -> acknowledged offset
	var ackedMu sync.Mutex
	produceSome := func(from, n int) {
		var wg sync.WaitGroup
		for i := from; i < from+n; i++ {
			wg.Add(1)
			value := fmt.Sprintf("v%05d", i)
			cl.Produce(context.Background(), kgo.StringRecord(value), func(r *kgo.Record, err error) {
				defer wg.Done()
				if err == nil {
					ackedMu.Lock()
					acked[value] = r.Offset
					ackedMu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	produceSome(0, 200)
	leader := mustPartitionIn(t, c, c.live()[0], "kl", 0).Leader
	observer := (int(leader) + 1) % 3 // stays up throughout
	midStream := make(chan struct{})
	go func() { produceSome(200, 200); close(midStream) }()
	c.Kill(int(leader))
	<-midStream
	// A new leader, other than the dead one, from the ISR.
	testwait.For(t, 30*time.Second, func() error {
		p := mustPartitionIn(t, c, observer, "kl", 0)
		if p.Leader < 0 || p.Leader == leader {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	})
	produceSome(400, 200)
	c.Start(int(leader))
	testwait.For(t, 60*time.Second, func() error {
		p := mustPartitionIn(t, c, observer, "kl", 0)
		if len(p.ISR) != 3 {
			return fmt.Errorf("isr %v", p.ISR)
		}
		return nil
	})
	ackedMu.Lock()
	before := len(acked)
	ackedMu.Unlock()
	produceSome(600, 50)
	// Without client retries, records in flight to the dead leader (and those sent on
	// stale metadata) fail; once the ISR is whole again, every record is acknowledged.
	ackedMu.Lock()
	after := len(acked)
	ackedMu.Unlock()
	if after-before != 50 {
		t.Fatalf("after recovery %d of 50 records acknowledged", after-before)
	}
	// All three replicas converge, byte-identical below the HW.
	var hws []int64
	testwait.For(t, 30*time.Second, func() error {
		var logs [][]byte
		hws = hws[:0]
		for i := range 3 {
			hw, data, err := replicaLog(t, c, i, "kl", 0)
			if err != nil {
				return err
			}
			hws, logs = append(hws, hw), append(logs, data)
		}
		if hws[0] != hws[1] || hws[1] != hws[2] {
			return fmt.Errorf("high watermarks %v", hws)
		}
		if !bytes.Equal(logs[0], logs[1]) || !bytes.Equal(logs[1], logs[2]) {
			return fmt.Errorf("replica logs differ below the HW")
		}
		return nil
	})
	// Every acknowledged record exactly once, at its acknowledged offset.
	seen := map[string][]int64{}
	cons := c.Client(t, kgo.ConsumeTopics("kl"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	end := hws[0]
	for got := int64(0); got < end; {
		fs := cons.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)] = append(seen[string(r.Value)], r.Offset)
			got = max(got, r.Offset+1)
		})
	}
	ackedMu.Lock()
	defer ackedMu.Unlock()
	for value, off := range acked {
		if offs := seen[value]; len(offs) != 1 || offs[0] != off {
			t.Fatalf("acknowledged %s at offset %d, found at %v", value, off, offs)
		}
	}
}

// TestDivergentFollowerTruncatesByLeaderEpoch builds divergent logs on purpose: a topic
// on brokers 3 and 4 (non-voters, so the metadata quorum of 0, 1, 2 survives) with
// unclean.leader.election.enable. Both have 10 records; 4 dies; leader 3 takes 5 more
// with acks=1; 3 dies. 4 returns and is elected uncleanly with its 10 records, then
// takes 3 new ones in its new epoch. When 3 returns it must truncate its 5 divergent
// records at the epoch boundary (OffsetForLeaderEpoch, KIP-279) — not to its HW, not
// keeping them — and copy 4's new records: both logs end byte-identical. (The 5 records
// were acknowledged with acks=1 only; losing them is what an unclean election means.)
func TestDivergentFollowerTruncatesByLeaderEpoch(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 5, WithVoters(3),
		WithProperty("broker.session.timeout.ms", "2000"),
		WithProperty("broker.heartbeat.interval.ms", "250"),
	)
	createAssignedTopic(t, c, "div", []int32{3, 4}, map[string]string{"unclean.leader.election.enable": "true"})
	waitAssignedReplicas(t, c, "div", 3, 4)
	for i := 0; i < 10; i++ {
		if code := produceTo(t, c, 3, "div", -1); code != 0 {
			t.Fatalf("acks=all record %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	testwait.For(t, 20*time.Second, func() error {
		if leo, err := replicaLEO(t, c, 4, "div", 0); err != nil || leo != 10 {
			return fmt.Errorf("follower 4 at LEO %d (%v)", leo, err)
		}
		return nil
	})
	c.Kill(4)
	for i := 0; i < 5; i++ {
		if code := produceTo(t, c, 3, "div", 1); code != 0 {
			t.Fatalf("acks=1 record %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	if leo := mustReplicaLEO(t, c, 3, "div", 0); leo != 15 {
		t.Fatalf("leader 3 at LEO %d", leo)
	}
	c.Kill(3)
	const observer = 0
	testwait.For(t, 20*time.Second, func() error {
		if p := mustPartitionIn(t, c, observer, "div", 0); p.Leader != -1 {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	})
	c.Start(4)
	testwait.For(t, 30*time.Second, func() error {
		if p := mustPartitionIn(t, c, observer, "div", 0); p.Leader != 4 {
			return fmt.Errorf("leader %d isr %v", p.Leader, p.ISR)
		}
		if err := leads(c, 4, "div", 0); err != nil {
			return fmt.Errorf("broker 4 not leading yet: %w", err)
		}
		return nil
	})
	if st, err := replicaOffsets(t, c, 4, "div", 0); err != nil || st.leo != 10 {
		t.Fatalf("new leader 4 at %+v (%v), expected its 10 records", st, err)
	}
	for i := 0; i < 3; i++ {
		if code := produceTo(t, c, 4, "div", 1); code != 0 {
			t.Fatalf("record %d to the new leader: %v", i, kerr.ErrorForCode(code))
		}
	}
	c.Start(3)
	// The follower's high watermark follows the leader's (13 here: the ISR is 4 alone
	// until 3 rejoins), so once it reaches 13 a consumer fetch from 3 covers its whole
	// log, as the leader's covers 4's.
	testwait.For(t, 30*time.Second, func() error {
		st, err := replicaOffsets(t, c, 3, "div", 0)
		if err != nil {
			return fmt.Errorf("replica 3: %w", err)
		}
		if st.leo != 13 || st.hw != 13 {
			leaderSt, _ := replicaOffsets(t, c, 4, "div", 0)
			return fmt.Errorf("replica 3 at %+v, leader at %+v", st, leaderSt)
		}
		return nil
	})
	var logs [][]byte
	for _, id := range []int{3, 4} {
		st, err := replicaOffsets(t, c, id, "div", 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.hw != st.leo {
			t.Fatalf("replica %d at %+v: its log is not all below its HW", id, st)
		}
		_, data, err := replicaLog(t, c, id, "div", 0)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, data)
	}
	if !bytes.Equal(logs[0], logs[1]) {
		t.Fatalf("replica 3's log (%d bytes) differs from leader 4's (%d bytes) after truncation", len(logs[0]), len(logs[1]))
	}
}

// TestFollowerRestartThenLeaderDies is KIP-101's window: follower 4 restarts (its
// high watermark checkpoint is stale) and leader 3 dies as soon as 4 is back. Old Kafka
// truncated 4 to its stale HW and could elect it, losing acknowledged records. Here a
// restarted broker is out of the ISR until it has caught up through leader-epoch
// truncation, so either 4 leads with every acknowledged record, or the partition waits
// offline until 3 returns; afterwards both replicas hold every acknowledged record.
func TestFollowerRestartThenLeaderDies(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 5, WithVoters(3),
		WithProperty("broker.session.timeout.ms", "2000"),
		WithProperty("broker.heartbeat.interval.ms", "250"),
		WithProperty("replica.high.watermark.checkpoint.interval.ms", "600000"), // stale on purpose
	)
	createAssignedTopic(t, c, "k101", []int32{3, 4}, map[string]string{"min.insync.replicas": "2"})
	waitAssignedReplicas(t, c, "k101", 3, 4)
	for i := 0; i < 20; i++ {
		if code := produceTo(t, c, 3, "k101", -1); code != 0 {
			t.Fatalf("acks=all record %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	const observer = 0
	c.Kill(4)
	c.Start(4)
	testwait.For(t, 30*time.Second, func() error { // the new process registered, not the old one's leftover
		return registeredAgain(c, observer, 4)
	})
	c.Kill(3)
	testwait.For(t, 30*time.Second, func() error {
		if p := mustPartitionIn(t, c, observer, "k101", 0); p.Leader == 3 {
			return fmt.Errorf("broker 3 still leads")
		}
		return nil
	})
	if p := mustPartitionIn(t, c, observer, "k101", 0); p.Leader == 4 {
		var leo int64
		testwait.For(t, 30*time.Second, func() error {
			var err error
			if leo, err = replicaLEO(t, c, 4, "k101", 0); err != nil {
				return fmt.Errorf("broker 4 has not opened its replica: %w", err)
			}
			return nil
		})
		if leo < 20 {
			t.Fatalf("broker 4 leads with %d of 20 acknowledged records", leo)
		}
	} else if p.Leader != -1 {
		t.Fatalf("unexpected leader %d", p.Leader)
	}
	c.Start(3)
	testwait.For(t, 30*time.Second, func() error {
		p := mustPartitionIn(t, c, observer, "k101", 0)
		if p.Leader < 0 || len(p.ISR) != 2 {
			return fmt.Errorf("leader %d isr %v", p.Leader, p.ISR)
		}
		for _, id := range []int{3, 4} {
			if st, err := replicaOffsets(t, c, id, "k101", 0); err != nil || st.leo < 20 || st.hw < 20 {
				return fmt.Errorf("broker %d at %+v (%v)", id, st, err)
			}
		}
		return nil
	})
	var logs [][]byte
	for _, id := range []int{3, 4} {
		_, data, err := replicaLog(t, c, id, "k101", 0)
		if err != nil {
			t.Fatal(err)
		}
		below, err := batchesBelow(data, 20)
		if err != nil {
			t.Fatalf("replica %d: %v", id, err)
		}
		logs = append(logs, below)
	}
	if !bytes.Equal(logs[0], logs[1]) {
		t.Fatal("the replicas differ in the acknowledged records")
	}
}

// TestKIP392FollowerReads checks the wire behaviour the tests above observe replicas
// with. After N records with acks=all on replication factor 3: a consumer's Fetch v12
// to each follower returns the leader's bytes and the follower's own high watermark
// (N), as does v11; a Fetch v10 to a follower gets NOT_LEADER_OR_FOLLOWER; ListOffsets with replica
// id -2 to a follower returns its log end offset, with replica id -1 it gets
// NOT_LEADER_OR_FOLLOWER.
func TestKIP392FollowerReads(t *testing.T) {
	t.Parallel()
	const topic, n = "kip392", 50
	c, p := startWithCommittedRecords(t, topic, n)
	leader := int(p.Leader)
	if len(p.Replicas) != 3 || !slices.Contains(p.Replicas, p.Leader) {
		t.Fatalf("partition %s", p)
	}
	hw, leaderLog, err := replicaLog(t, c, leader, topic, 0)
	if err != nil || hw != n {
		t.Fatalf("leader %d: HW %d (%v), want %d", leader, hw, err, n)
	}
	if latest, err := listOffsetAt(c, leader, -1, topic, 0, -1); err != nil || latest != n {
		t.Fatalf("leader %d: consumer ListOffsets latest %d (%v), want %d", leader, latest, err, n)
	}
	if r, err := fetchAt(c, leader, 10, topic, 0, 0); err != nil || r.ErrorCode != 0 || r.HighWatermark != n {
		t.Fatalf("leader %d: Fetch v10: %v, %+v", leader, err, r)
	}
	for _, f := range without(p.Replicas, p.Leader) {
		node := int(f)
		// A follower learns the leader's HW in its next fetch response, which the leader
		// may hold for up to replica.fetch.wait.max.ms when there is no new data.
		testwait.For(t, 10*time.Second, func() error {
			hw, data, err := replicaLog(t, c, node, topic, 0)
			if err != nil {
				return fmt.Errorf("follower %d: %w", node, err)
			}
			if hw != n || !bytes.Equal(data, leaderLog) {
				return fmt.Errorf("follower %d: HW %d, %d bytes; leader HW %d, %d bytes", node, hw, len(data), n, len(leaderLog))
			}
			return nil
		})
		if r, err := fetchAt(c, node, 11, topic, 0, 0); err != nil || r.ErrorCode != 0 || r.HighWatermark != n || len(r.RecordBatches) == 0 {
			t.Fatalf("follower %d: Fetch v11 (the first KIP-392 version): %v, %+v", node, err, r)
		}
		r, err := fetchAt(c, node, 10, topic, 0, 0)
		if err != nil {
			t.Fatalf("follower %d: Fetch v10: %v", node, err)
		}
		if r.ErrorCode != kerr.NotLeaderForPartition.Code || len(r.RecordBatches) != 0 {
			t.Fatalf("follower %d: Fetch v10 answered %v with %d bytes, want NOT_LEADER_OR_FOLLOWER", node, kerr.ErrorForCode(r.ErrorCode), len(r.RecordBatches))
		}
		if leo, err := replicaLEO(t, c, node, topic, 0); err != nil || leo != n {
			t.Fatalf("follower %d: ListOffsets replica -2 latest %d (%v), want %d", node, leo, err, n)
		}
		if _, err := listOffsetAt(c, node, -1, topic, 0, -1); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("follower %d: consumer ListOffsets: %v, want NOT_LEADER_OR_FOLLOWER", node, err)
		}
	}
}

// TestDivergingFollowerFetchIsAnsweredAtOnce: a follower's Fetch v12 whose last
// fetched epoch ends before its fetch offset gets the diverging epoch in the answer at
// once, even with min_bytes 1 and a long max_wait (Kafka answers it immediately: the
// follower must truncate before anything else can happen).
func TestDivergingFollowerFetchIsAnsweredAtOnce(t *testing.T) {
	const topic, n = "diverge", 5
	c, p := startWithCommittedRecords(t, topic, n)
	follower := without(p.Replicas, p.Leader)[0]
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = follower // as that follower's fetcher would send it
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 120_000, 1, 8<<20
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, n+100, 1<<20
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = p.LeaderEpoch, p.LeaderEpoch, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Parked, the fetch would outlive this bound (max_wait is two minutes).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := requestAt(ctx, c, int(p.Leader), req)
	if err != nil {
		t.Fatalf("diverging follower fetch: %v", err)
	}
	got := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.DivergingEpoch.Epoch != p.LeaderEpoch || got.DivergingEpoch.EndOffset != n || len(got.RecordBatches) != 0 {
		t.Fatalf("answer %v, diverging epoch %+v, %d bytes; want epoch %d ending at %d, no records",
			kerr.ErrorForCode(got.ErrorCode), got.DivergingEpoch, len(got.RecordBatches), p.LeaderEpoch, n)
	}
}

// startWithCommittedRecords starts 3 nodes, creates topic with one partition on all
// three and produces n records with acks=all; it returns the cluster and the
// partition as node 0 sees it.
func startWithCommittedRecords(t *testing.T, topic string, n int) (*Cluster, partitionView) {
	t.Helper()
	c := StartCluster(t, 3)
	c.CreateTopicRF(t, topic, 1, 3, nil)
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range n {
		if err := cl.ProduceSync(testContext(t), kgo.StringRecord(recordValue(topic, i))).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	return c, mustPartitionIn(t, c, 0, topic, 0)
}

// wireTimeout bounds one request of the replica helpers below.
const wireTimeout = 10 * time.Second

// requestAt sends req to node i at exactly req's version: through a kgo client seeded
// with node i only (no metadata routing) whose highest version for req's key is capped
// there (kgo otherwise sends the highest version both sides support). A node that does
// not support that version is an error.
func requestAt(ctx context.Context, c *Cluster, i int, req kmsg.Request) (kmsg.Response, error) {
	version := req.GetVersion()
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(req.Key(), version)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(i)), kgo.MaxVersions(versions))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	name := kmsg.NameForKey(req.Key())
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("node-%d: %s v%d: %w", i, name, version, err)
	}
	if got := req.GetVersion(); got != version {
		return nil, fmt.Errorf("node-%d: %s sent at v%d, not v%d", i, name, got, version)
	}
	return resp, nil
}

// fetchAt sends a consumer's Fetch (replica id -1, read_uncommitted, no wait, no
// session) of version for one partition from offset to node i and returns the
// partition's answer.
func fetchAt(c *Cluster, i int, version int16, topic string, partition int32, offset int64) (kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID, req.IsolationLevel = -1, 0
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 8<<20
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel()
	resp, err := requestAt(ctx, c, i, req)
	if err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return kmsg.FetchResponseTopicPartition{}, fmt.Errorf("node-%d: fetch: %w", i, kerr.ErrorForCode(fr.ErrorCode))
	}
	if len(fr.Topics) != 1 || fr.Topics[0].Topic != topic || len(fr.Topics[0].Partitions) != 1 || fr.Topics[0].Partitions[0].Partition != partition {
		return kmsg.FetchResponseTopicPartition{}, fmt.Errorf("node-%d: fetch of %s-%d answered %+v", i, topic, partition, fr.Topics)
	}
	return fr.Topics[0].Partitions[0], nil
}

// listOffsetAt sends ListOffsets v7 for one partition with replicaID (-1 a consumer,
// which only the leader answers; -2 Kafka's debugging replica, which any replica
// answers without isolation) and timestamp (-1 latest, -2 earliest) to node i, and
// returns the offset; an error code is returned as the kerr error (errors.Is works).
func listOffsetAt(c *Cluster, i int, replicaID int32, topic string, partition int32, timestamp int64) (int64, error) {
	return listOffsetVersionAt(c, i, 7, replicaID, topic, partition, timestamp)
}

// listOffsetVersionAt is listOffsetAt at ListOffsets version v (v8 for -4, v9 for -5).
func listOffsetVersionAt(c *Cluster, i int, v int16, replicaID int32, topic string, partition int32, timestamp int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = v, replicaID, 0
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, timestamp, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel()
	resp, err := requestAt(ctx, c, i, req)
	if err != nil {
		return -1, err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 || lr.Topics[0].Partitions[0].Partition != partition {
		return -1, fmt.Errorf("node-%d: ListOffsets of %s-%d answered %+v", i, topic, partition, lr.Topics)
	}
	sp := lr.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		return -1, fmt.Errorf("node-%d: ListOffsets replica %d of %s-%d: %w", i, replicaID, topic, partition, kerr.ErrorForCode(sp.ErrorCode))
	}
	return sp.Offset, nil
}

// replicaLEO returns node i's log end offset of topic-partition, leader or follower:
// ListOffsets latest with the debugging replica id -2. It fails while node i has no
// open replica.
func replicaLEO(t testing.TB, c *Cluster, i int, topic string, partition int32) (int64, error) {
	t.Helper()
	return listOffsetAt(c, i, -2, topic, partition, -1)
}

func mustReplicaLEO(t testing.TB, c *Cluster, i int, topic string, partition int32) int64 {
	t.Helper()
	leo, err := replicaLEO(t, c, i, topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	return leo
}

// leads returns nil when node i answers a consumer's ListOffsets (earliest: no
// high-watermark condition) for topic-partition, which only the leader does.
func leads(c *Cluster, i int, topic string, partition int32) error {
	_, err := listOffsetAt(c, i, -1, topic, partition, -2)
	return err
}

// replicaLog returns node i's replica of topic-partition as a consumer reads it with
// Fetch v12 (KIP-392: a follower serves its own log up to its own high watermark; the
// leader as always): its high watermark and its stored record batches, unchanged, from
// the log start offset up to that high watermark. It fetches until the fetch offset
// reaches the high watermark of the latest answer; the batches must be contiguous.
func replicaLog(t testing.TB, c *Cluster, i int, topic string, partition int32) (hw int64, data []byte, err error) {
	t.Helper()
	off, err := listOffsetAt(c, i, -2, topic, partition, -2)
	if err != nil {
		return -1, nil, err
	}
	for {
		sp, err := fetchAt(c, i, 12, topic, partition, off)
		if err != nil {
			return -1, nil, err
		}
		if sp.ErrorCode != 0 {
			return -1, nil, fmt.Errorf("node-%d: fetch %s-%d at %d: %w", i, topic, partition, off, kerr.ErrorForCode(sp.ErrorCode))
		}
		if off >= sp.HighWatermark {
			if off > sp.HighWatermark {
				return -1, nil, fmt.Errorf("node-%d: %s-%d: high watermark %d below the offset %d already read", i, topic, partition, sp.HighWatermark, off)
			}
			return sp.HighWatermark, data, nil
		}
		b, start := sp.RecordBatches, off
		for {
			base, last, size, ok := batchAt(b)
			if !ok {
				break // a partial batch ends a size-limited answer
			}
			if base != off {
				return -1, nil, fmt.Errorf("node-%d: %s-%d: batch at offset %d, expected %d", i, topic, partition, base, off)
			}
			data, off, b = append(data, b[:size]...), last+1, b[size:]
		}
		if off == start {
			return -1, nil, fmt.Errorf("node-%d: %s-%d: no whole batch at offset %d below the HW %d (%d bytes)", i, topic, partition, off, sp.HighWatermark, len(sp.RecordBatches))
		}
	}
}

// replicaState is a replica's log end offset and high watermark, as the wire shows
// them.
type replicaState struct{ leo, hw int64 }

// replicaOffsets returns node i's log end offset (replicaLEO) and high watermark
// (replicaLog) of topic-partition, read one after the other.
func replicaOffsets(t testing.TB, c *Cluster, i int, topic string, partition int32) (replicaState, error) {
	t.Helper()
	leo, err := replicaLEO(t, c, i, topic, partition)
	if err != nil {
		return replicaState{-1, -1}, err
	}
	hw, _, err := replicaLog(t, c, i, topic, partition)
	return replicaState{leo, hw}, err
}

// recordBatchHeaderSize is RecordBatch v2's header, up to and including the record
// count.
const recordBatchHeaderSize = 61

// batchAt parses the record batch header at the start of b: its base offset (bytes
// 0-7), last offset (base plus lastOffsetDelta, bytes 23-26) and whole size (12 plus
// batchLength, bytes 8-11). ok is false when b does not hold a whole batch.
func batchAt(b []byte) (base, last int64, size int, ok bool) {
	if len(b) < recordBatchHeaderSize {
		return 0, 0, 0, false
	}
	size = 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
	if size < recordBatchHeaderSize || size > len(b) {
		return 0, 0, 0, false
	}
	base = int64(binary.BigEndian.Uint64(b[0:8]))
	return base, base + int64(int32(binary.BigEndian.Uint32(b[23:27]))), size, true
}

// batchesBelow returns the leading batches of data whose offsets all lie below upTo,
// as a replica reads its log up to an offset.
func batchesBelow(data []byte, upTo int64) ([]byte, error) {
	n := 0
	for n < len(data) {
		_, last, size, ok := batchAt(data[n:])
		if !ok {
			return nil, fmt.Errorf("a torn batch at byte %d of %d", n, len(data))
		}
		if last >= upTo {
			break
		}
		n += size
	}
	return data[:n], nil
}

// partitionIn returns partition p of topic in node i's metadata image.
func partitionIn(c *Cluster, i int, topic string, p int32) (partitionView, error) {
	tv, ok := c.Image(i).Topics[topic]
	if !ok || int(p) >= len(tv.Partitions) || tv.Partitions[p].ID != p {
		return partitionView{}, fmt.Errorf("node-%d has no %s-%d in its image", i, topic, p)
	}
	return tv.Partitions[p], nil
}

func mustPartitionIn(t testing.TB, c *Cluster, i int, topic string, p int32) partitionView {
	t.Helper()
	pv, err := partitionIn(c, i, topic, p)
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// registeredAgain returns nil once node id's current process is registered (its broker
// epoch, from its own registration answer) and that registration is unfenced in the
// observer's image: not the previous incarnation's leftover record.
func registeredAgain(c *Cluster, observer, id int) error {
	epoch := c.Node(id).BrokerEpoch()
	br, ok := c.Image(observer).Brokers[int32(id)]
	if epoch < 0 || !ok || br.Epoch != epoch || br.Fenced {
		return fmt.Errorf("node %d not registered again (its epoch %d; node-%d's image: %+v)", id, epoch, observer, br)
	}
	return nil
}

// createAssignedTopic creates topic with one partition on replicas (in that order) and
// the given topic configs, through the controller (kgo routes CreateTopics there).
func createAssignedTopic(t *testing.T, c *Cluster, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = name, kmsg.StringPtr(configs[name])
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), c.Client(t))
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
}

// waitAssignedReplicas waits until leader (the first assigned replica) leads topic's
// partition 0 and follower has opened its replica.
func waitAssignedReplicas(t *testing.T, c *Cluster, topic string, leader, follower int) {
	t.Helper()
	testwait.For(t, 20*time.Second, func() error {
		if err := leads(c, leader, topic, 0); err != nil {
			return fmt.Errorf("node %d does not lead yet: %w", leader, err)
		}
		if _, err := replicaLEO(t, c, follower, topic, 0); err != nil {
			return fmt.Errorf("replica %d not open: %w", follower, err)
		}
		return nil
	})
}

// produceTo sends one record (one batch, produce v9) to partition 0 of topic on node i
// itself with the given acks, and returns the partition's error code.
func produceTo(t *testing.T, c *Cluster, i int, topic string, acks int16) int16 {
	t.Helper()
	req := produceRequest(9, acks, topic, 0, recordBatch("raw"))
	req.TimeoutMillis = 15000
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := requestAt(ctx, c, i, req)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return produceResult(t, resp).ErrorCode
}
