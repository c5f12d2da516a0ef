package broker

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplicationSteadyState: acks=all on replication factor 3 with
// min.insync.replicas=2 completes through follower fetches; consumers see every
// acknowledged record; the replicas' logs are byte-identical below the high watermark.
func TestReplicationSteadyState(t *testing.T) {
	c := startTestCluster(t, 3, 3, map[string]string{"min.insync.replicas": "2"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic("r3"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := newAdmin(t, c.brokers[0])
	if resp, err := adm.CreateTopic(testContext(t), 2, 3, nil, "r3"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	const n = 300
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("value-%d", i))}
		if err := cl.ProduceSync(testContext(t), r).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	// Every replica converges to the same log end offset and high watermark.
	waitFor(t, 30*time.Second, func() error {
		for p := int32(0); p < 2; p++ {
			var leo, hw []int64
			for _, b := range c.brokers {
				st := b.partitions.get("r3", p).State()
				leo, hw = append(leo, st.LogEndOffset), append(hw, st.HighWatermark)
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
		for _, b := range c.brokers {
			lp := b.partitions.get("r3", p)
			st := lp.State()
			logs = append(logs, replicaBytes(lp, st.HighWatermark))
			if b == c.brokers[0] {
				total += st.HighWatermark
			}
		}
		if !bytes.Equal(logs[0], logs[1]) || !bytes.Equal(logs[1], logs[2]) {
			t.Fatalf("partition %d: replica logs differ below the HW (%d, %d, %d bytes)", p, len(logs[0]), len(logs[1]), len(logs[2]))
		}
	}
	if total != n {
		t.Fatalf("%d records committed, produced %d", total, n)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics("r3"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
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
	c := startTestCluster(t, 5, 3, map[string]string{
		"min.insync.replicas":     "2",
		"replica.lag.time.max.ms": "1000",
		// Lag-based shrinking (1 s) comes before fencing (4 s); a restarted broker waits
		// for its old session to end before it registers again (Kafka's rule).
		"broker.session.timeout.ms":    "4000",
		"broker.heartbeat.interval.ms": "500",
	})
	createAssignedTopic(t, c.brokers[0], "isr", []int32{2, 3, 4}, nil)
	produce := func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers[0].Addr().String()), kgo.DefaultProduceTopic("isr"),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(15*time.Second))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr()
	}
	isrOf := func() []int32 { return c.live().Image().Topic("isr").Partitions[0].ISR }
	waitFor(t, 20*time.Second, func() error {
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
	c.kill(3)
	if err := produce(); err != nil {
		t.Fatalf("acks=all after a follower died (the ISR shrinks to two): %v", err)
	}
	waitFor(t, 20*time.Second, func() error { // every node applies the change, not at once
		if isr := isrOf(); slices.Contains(isr, 3) {
			return fmt.Errorf("isr still %v", isr)
		}
		return nil
	})
	// Broker 4 dies while a produce waits for it: the append is in the log, but the ISR
	// shrinks below min.insync.replicas before the ack.
	c.kill(4)
	if code := rawProduce(t, c.brokers[2], "isr", -1); code != kerr.NotEnoughReplicasAfterAppend.Code {
		t.Fatalf("acks=all while the ISR fell to one: %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", kerr.ErrorForCode(code))
	}
	waitFor(t, 20*time.Second, func() error {
		if isr := isrOf(); !slices.Equal(isr, []int32{2}) {
			return fmt.Errorf("isr %v", isr)
		}
		return nil
	})
	leo := c.brokers[2].partitions.get("isr", 0).State().LogEndOffset
	if code := rawProduce(t, c.brokers[2], "isr", -1); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with the leader alone: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
	}
	if got := c.brokers[2].partitions.get("isr", 0).State().LogEndOffset; got != leo {
		t.Fatalf("NOT_ENOUGH_REPLICAS wrote data: LEO %d -> %d", leo, got)
	}
	c.restart(3)
	waitFor(t, 30*time.Second, func() error {
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
	c := startTestCluster(t, 3, 3, map[string]string{
		"min.insync.replicas":          "2",
		"broker.session.timeout.ms":    "2000",
		"broker.heartbeat.interval.ms": "250",
		"replica.lag.time.max.ms":      "2000",
	})
	if resp, err := newAdmin(t, c.brokers[0]).CreateTopic(testContext(t), 1, 3, nil, "kl"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	waitFor(t, 20*time.Second, func() error {
		for _, b := range c.brokers {
			if tp := b.Image().Topic("kl"); tp == nil || b.partitions.get("kl", 0) == nil {
				return fmt.Errorf("broker %d has not applied the topic", b.NodeID())
			}
		}
		return nil
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic("kl"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(10*time.Second), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
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
	leader := c.live().Image().Topic("kl").Partitions[0].Leader
	observer := c.brokers[(leader+1)%3] // stays up throughout
	midStream := make(chan struct{})
	go func() { produceSome(200, 200); close(midStream) }()
	c.kill(int(leader))
	<-midStream
	// A new leader, other than the dead one, from the ISR.
	waitFor(t, 30*time.Second, func() error {
		p := observer.Image().Topic("kl").Partitions[0]
		if p.Leader < 0 || p.Leader == leader {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	})
	produceSome(400, 200)
	c.restart(int(leader))
	waitFor(t, 60*time.Second, func() error {
		p := observer.Image().Topic("kl").Partitions[0]
		if len(p.ISR) != 3 {
			return fmt.Errorf("isr %v", p.ISR)
		}
		return nil
	})
	before := len(acked)
	produceSome(600, 50)
	// Without client retries, records in flight to the dead leader (and those sent on
	// stale metadata) fail; once the ISR is whole again, every record is acknowledged.
	if len(acked)-before != 50 {
		t.Fatalf("after recovery %d of 50 records acknowledged", len(acked)-before)
	}
	// All three replicas converge, byte-identical below the HW.
	var logs [][]byte
	waitFor(t, 30*time.Second, func() error {
		logs = logs[:0]
		var hws []int64
		for _, b := range c.brokers {
			lp := b.partitions.get("kl", 0)
			st := lp.State()
			hws = append(hws, st.HighWatermark)
			logs = append(logs, replicaBytes(lp, st.HighWatermark))
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
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics("kl"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	end := c.brokers[0].partitions.get("kl", 0).State().HighWatermark
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
	c := startTestCluster(t, 5, 3, map[string]string{
		"broker.session.timeout.ms":    "2000",
		"broker.heartbeat.interval.ms": "250",
	})
	createAssignedTopic(t, c.brokers[0], "div", []int32{3, 4}, map[string]string{"unclean.leader.election.enable": "true"})
	state := func(id int) replicationStateView {
		st := c.brokers[id].partitions.get("div", 0).State()
		return replicationStateView{st.LogEndOffset, st.HighWatermark}
	}
	waitFor(t, 20*time.Second, func() error {
		if c.brokers[3].partitions.get("div", 0) == nil || c.brokers[4].partitions.get("div", 0) == nil {
			return fmt.Errorf("replicas not open")
		}
		return nil
	})
	for i := 0; i < 10; i++ {
		if code := rawProduce(t, c.brokers[3], "div", -1); code != 0 {
			t.Fatalf("acks=all record %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	waitFor(t, 20*time.Second, func() error {
		if s := state(4); s.leo != 10 {
			return fmt.Errorf("follower 4 at %+v", s)
		}
		return nil
	})
	c.kill(4)
	for i := 0; i < 5; i++ {
		if code := rawProduce(t, c.brokers[3], "div", 1); code != 0 {
			t.Fatalf("acks=1 record %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	if s := state(3); s.leo != 15 {
		t.Fatalf("leader 3 at %+v", s)
	}
	c.kill(3)
	observer := c.brokers[0]
	waitFor(t, 20*time.Second, func() error {
		if p := observer.Image().Topic("div").Partitions[0]; p.Leader != -1 {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	})
	c.restart(4)
	waitFor(t, 30*time.Second, func() error {
		if p := observer.Image().Topic("div").Partitions[0]; p.Leader != 4 {
			return fmt.Errorf("leader %d isr %v", p.Leader, p.ISR)
		}
		if lp := c.brokers[4].partitions.get("div", 0); lp == nil || lp.State().Role != replication.Leader {
			return fmt.Errorf("broker 4 not leading yet")
		}
		return nil
	})
	if s := state(4); s.leo != 10 {
		t.Fatalf("new leader 4 at %+v, expected its 10 records", s)
	}
	for i := 0; i < 3; i++ {
		if code := rawProduce(t, c.brokers[4], "div", 1); code != 0 {
			t.Fatalf("record %d to the new leader: %v", i, kerr.ErrorForCode(code))
		}
	}
	c.restart(3)
	waitFor(t, 30*time.Second, func() error {
		lp := c.brokers[3].partitions.get("div", 0)
		if lp == nil {
			return fmt.Errorf("replica 3 not open")
		}
		if s := state(3); s.leo != 13 {
			return fmt.Errorf("replica 3 at %+v, leader at %+v", s, state(4))
		}
		return nil
	})
	var logs [][]byte
	for _, id := range []int{3, 4} {
		lp := c.brokers[id].partitions.get("div", 0)
		logs = append(logs, replicaBytes(lp, lp.State().LogEndOffset))
	}
	if !bytes.Equal(logs[0], logs[1]) {
		t.Fatalf("replica 3's log (%d bytes) differs from leader 4's (%d bytes) after truncation", len(logs[0]), len(logs[1]))
	}
}

type replicationStateView struct{ leo, hw int64 }

// TestFollowerRestartThenLeaderDies is KIP-101's window: follower 4 restarts (its
// high watermark checkpoint is stale) and leader 3 dies as soon as 4 is back. Old Kafka
// truncated 4 to its stale HW and could elect it, losing acknowledged records. Here a
// restarted broker is out of the ISR until it has caught up through leader-epoch
// truncation, so either 4 leads with every acknowledged record, or the partition waits
// offline until 3 returns; afterwards both replicas hold every acknowledged record.
func TestFollowerRestartThenLeaderDies(t *testing.T) {
	c := startTestCluster(t, 5, 3, map[string]string{
		"broker.session.timeout.ms":                     "2000",
		"broker.heartbeat.interval.ms":                  "250",
		"replica.high.watermark.checkpoint.interval.ms": "600000", // stale on purpose
	})
	createAssignedTopic(t, c.brokers[0], "k101", []int32{3, 4}, map[string]string{"min.insync.replicas": "2"})
	waitFor(t, 20*time.Second, func() error {
		if c.brokers[3].partitions.get("k101", 0) == nil || c.brokers[4].partitions.get("k101", 0) == nil {
			return fmt.Errorf("replicas not open")
		}
		return nil
	})
	for i := 0; i < 20; i++ {
		if code := rawProduce(t, c.brokers[3], "k101", -1); code != 0 {
			t.Fatalf("acks=all record %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	observer := c.brokers[0]
	c.kill(4)
	restarted := c.restart(4)
	waitFor(t, 30*time.Second, func() error { // the new process registered, not the old one's leftover
		if br := observer.Image().Brokers[4]; br == nil || br.Fenced || restarted.BrokerEpoch() < 0 {
			return fmt.Errorf("broker 4 not back")
		}
		return nil
	})
	c.kill(3)
	waitFor(t, 30*time.Second, func() error {
		p := observer.Image().Topic("k101").Partitions[0]
		if p.Leader == 3 {
			return fmt.Errorf("broker 3 still leads")
		}
		return nil
	})
	if p := observer.Image().Topic("k101").Partitions[0]; p.Leader == 4 {
		var lp *localPartition
		waitFor(t, 30*time.Second, func() error {
			if lp = restarted.partitions.get("k101", 0); lp == nil {
				return fmt.Errorf("broker 4 has not opened its replica")
			}
			return nil
		})
		if leo := lp.State().LogEndOffset; leo < 20 {
			t.Fatalf("broker 4 leads with %d of 20 acknowledged records", leo)
		}
	} else if p.Leader != -1 {
		t.Fatalf("unexpected leader %d", p.Leader)
	}
	c.restart(3)
	waitFor(t, 30*time.Second, func() error {
		p := observer.Image().Topic("k101").Partitions[0]
		if p.Leader < 0 || len(p.ISR) != 2 {
			return fmt.Errorf("leader %d isr %v", p.Leader, p.ISR)
		}
		for _, id := range []int{3, 4} {
			if st := c.brokers[id].partitions.get("k101", 0).State(); st.LogEndOffset < 20 || st.HighWatermark < 20 {
				return fmt.Errorf("broker %d at %+v", id, st)
			}
		}
		return nil
	})
	a, b := c.brokers[3].partitions.get("k101", 0), c.brokers[4].partitions.get("k101", 0)
	if !bytes.Equal(replicaBytes(a, 20), replicaBytes(b, 20)) {
		t.Fatal("the replicas differ in the acknowledged records")
	}
}

// createAssignedTopic creates topic with one partition on replicas (in that order) and
// the given topic configs, through b.
func createAssignedTopic(t *testing.T, b *Broker, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	for name, value := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(testContext(t), newClient(t, b)); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
}
