package integration

// KIP-951 leader hints and topic ids on the data path (issue P22 item 3): Produce
// v10-13 and Fetch v13-17 on the wire (raw kmsg requests), and a default kgo producer
// and consumer across a controlled stop of the partition's leader, moved by the
// stopping leader's hint rather than by a metadata refresh.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// topicLeader returns topic's id and the leader and leader epoch of its partition 0 as
// node i's image has them.
func topicLeader(t testing.TB, c *Cluster, i int, topic string) ([16]byte, int32, int32) {
	t.Helper()
	tp := c.Node(i).Image().Topic(topic)
	if tp == nil {
		t.Fatalf("node-%d: no topic %s", i, topic)
	}
	p := tp.Partitions[0]
	return tp.ID, p.Leader, p.LeaderEpoch
}

// otherThan returns a node index other than not.
func otherThan(not int32) int { return int(not+1) % 3 }

func produceByID(t *testing.T, c *Cluster, node int, version int16, topic string, id [16]byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = recordBatch("v")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := requestAt(testContext(t), c, node, req)
	if err != nil {
		t.Fatalf("produce v%d to node-%d: %v", version, node, err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce v%d: answer %+v", version, pr)
	}
	if version >= 13 && pr.Topics[0].TopicID != id {
		t.Errorf("produce v%d: answered topic id %x, want %x", version, pr.Topics[0].TopicID, id)
	}
	return pr.Topics[0].Partitions[0]
}

func TestLeaderHints_ProduceWire(t *testing.T) {
	c := StartCluster(t, 3)
	const topic = "hints-produce"
	c.CreateTopicRF(t, topic, 1, 1, nil)
	c.WaitConverged()
	id, leader, epoch := topicLeader(t, c, 0, topic)
	waitLeaderServes(t, c, leader, topic, id)
	for _, v := range []int16{9, 10, 11, 12, 13} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			ok := produceByID(t, c, int(leader), v, topic, id)
			if ok.ErrorCode != 0 {
				t.Fatalf("to the leader: %v", kerr.ErrorForCode(ok.ErrorCode))
			}
			p := produceByID(t, c, otherThan(leader), v, topic, id)
			if p.ErrorCode != kerr.NotLeaderForPartition.Code {
				t.Fatalf("to a non-leader: code %d, want NOT_LEADER_OR_FOLLOWER", p.ErrorCode)
			}
			wantLeader, wantEpoch := int32(-1), int32(-1)
			if v >= 10 {
				wantLeader, wantEpoch = leader, epoch
			}
			if p.CurrentLeader.LeaderID != wantLeader || p.CurrentLeader.LeaderEpoch != wantEpoch {
				t.Errorf("CurrentLeader %d@%d, want %d@%d", p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, wantLeader, wantEpoch)
			}
		})
	}
	t.Run("NodeEndpoints", func(t *testing.T) {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 10, 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = recordBatch("v")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := requestAt(testContext(t), c, otherThan(leader), req)
		if err != nil {
			t.Fatal(err)
		}
		brokers := resp.(*kmsg.ProduceResponse).Brokers
		if len(brokers) != 1 || brokers[0].NodeID != leader || fmt.Sprintf("%s:%d", brokers[0].Host, brokers[0].Port) != c.Addr(int(leader)) {
			t.Fatalf("NodeEndpoints %+v, want node %d at %s", brokers, leader, c.Addr(int(leader)))
		}
	})
	t.Run("v13 unknown topic id", func(t *testing.T) {
		p := produceByID(t, c, int(leader), 13, "", [16]byte{1, 2, 3})
		if p.ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("code %d, want UNKNOWN_TOPIC_ID", p.ErrorCode)
		}
	})
}

// fetchFrom sends a consumer's Fetch of topic's partition 0 from offset 0 to node.
func fetchFrom(t *testing.T, c *Cluster, node int, version int16, topic string, id [16]byte, sessionEpoch int32) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = version, 0, 1, 1<<20
	req.SessionEpoch = sessionEpoch
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := requestAt(testContext(t), c, node, req)
	if err != nil {
		t.Fatalf("fetch v%d from node-%d: %v", version, node, err)
	}
	return resp.(*kmsg.FetchResponse)
}

func onlyPartition(t *testing.T, r *kmsg.FetchResponse) *kmsg.FetchResponseTopicPartition {
	t.Helper()
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch v%d answer: error %d, %d topics", r.Version, r.ErrorCode, len(r.Topics))
	}
	return &r.Topics[0].Partitions[0]
}

// waitLeaderServes waits until the leader the images name has opened topic's partition
// 0: the images converge before its reconciler has, and until then it answers
// NOT_LEADER_OR_FOLLOWER. It asks with a Fetch, which writes nothing.
func waitLeaderServes(t *testing.T, c *Cluster, leader int32, topic string, id [16]byte) {
	t.Helper()
	testwait.Until(t, 30*time.Second, "the leader serves its partition", func() bool {
		r := fetchFrom(t, c, int(leader), 13, topic, id, -1)
		return r.ErrorCode == 0 && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].ErrorCode == 0
	})
}

func TestLeaderHints_FetchWire(t *testing.T) {
	c := StartCluster(t, 3)
	const topic = "hints-fetch"
	c.CreateTopicRF(t, topic, 1, 1, nil)
	c.WaitConverged()
	id, leader, epoch := topicLeader(t, c, 0, topic)
	waitLeaderServes(t, c, leader, topic, id)
	if p := produceByID(t, c, int(leader), 13, topic, id); p.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(p.ErrorCode))
	}
	for _, v := range []int16{12, 13, 14, 15, 16, 17} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			r := fetchFrom(t, c, int(leader), v, topic, id, -1)
			p := onlyPartition(t, r)
			if p.ErrorCode != 0 || p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
				t.Fatalf("from the leader: code %d, high watermark %d, %d bytes", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
			}
			if v >= 13 && r.Topics[0].TopicID != id {
				t.Errorf("answered topic id %x, want %x", r.Topics[0].TopicID, id)
			}
			r = fetchFrom(t, c, otherThan(leader), v, topic, id, -1)
			p = onlyPartition(t, r)
			if p.ErrorCode != kerr.NotLeaderForPartition.Code {
				t.Fatalf("from a broker without a replica: code %d, want NOT_LEADER_OR_FOLLOWER", p.ErrorCode)
			}
			if v < 16 {
				if p.CurrentLeader.LeaderID != -1 || len(r.Brokers) != 0 {
					t.Errorf("below v16: CurrentLeader %d, %d endpoints", p.CurrentLeader.LeaderID, len(r.Brokers))
				}
				return
			}
			if p.CurrentLeader.LeaderID != leader || p.CurrentLeader.LeaderEpoch != epoch {
				t.Errorf("CurrentLeader %d@%d, want %d@%d", p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, leader, epoch)
			}
			if len(r.Brokers) != 1 || r.Brokers[0].NodeID != leader || fmt.Sprintf("%s:%d", r.Brokers[0].Host, r.Brokers[0].Port) != c.Addr(int(leader)) {
				t.Errorf("NodeEndpoints %+v, want node %d at %s", r.Brokers, leader, c.Addr(int(leader)))
			}
		})
	}
	t.Run("v13 unknown topic id", func(t *testing.T) {
		p := onlyPartition(t, fetchFrom(t, c, int(leader), 13, "", [16]byte{9}, -1))
		if p.ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("code %d, want UNKNOWN_TOPIC_ID", p.ErrorCode)
		}
	})
}

// TestTopicIDs_RecreatedTopic: a topic deleted and re-created under the same name is
// not read through the old topic's id, sessionless or in a fetch session.
func TestTopicIDs_RecreatedTopic(t *testing.T) {
	c := StartCluster(t, 1)
	const topic = "recreated"
	c.CreateTopic(t, topic, 1, nil)
	oldID, _, _ := topicLeader(t, c, 0, topic)
	if p := produceByID(t, c, 0, 13, topic, oldID); p.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(p.ErrorCode))
	}
	// A full fetch opens a session of the old id.
	full := fetchFrom(t, c, 0, 17, "", oldID, 0)
	if full.SessionID == 0 || onlyPartition(t, full).ErrorCode != 0 {
		t.Fatalf("full fetch: session %d, code %d", full.SessionID, onlyPartition(t, full).ErrorCode)
	}
	adm := c.Admin(t)
	if _, err := adm.DeleteTopics(testContext(t), topic); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, testTimeout, func() error {
		if c.Node(0).Image().Topic(topic) != nil {
			return errNotYet
		}
		return nil
	})
	c.CreateTopic(t, topic, 1, nil)
	newID, _, _ := topicLeader(t, c, 0, topic)
	if newID == oldID {
		t.Fatal("the re-created topic has the old id")
	}
	// The session's next incremental fetch names nothing: its partition is the old id,
	// its name now another topic's (INCONSISTENT_TOPIC_ID, as Kafka: kgo resets the session).
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MaxBytes = 17, 0, 1<<20
	req.SessionID, req.SessionEpoch = full.SessionID, 1
	resp, err := requestAt(testContext(t), c, 0, req)
	if err != nil {
		t.Fatal(err)
	}
	inc := resp.(*kmsg.FetchResponse)
	if p := onlyPartition(t, inc); p.ErrorCode != kerr.InconsistentTopicID.Code || inc.Topics[0].TopicID != oldID {
		t.Fatalf("incremental fetch of the old id: code %d on id %x, want INCONSISTENT_TOPIC_ID", p.ErrorCode, inc.Topics[0].TopicID)
	}
	if p := onlyPartition(t, fetchFrom(t, c, 0, 13, "", oldID, -1)); p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("sessionless fetch of the old id: code %d, want UNKNOWN_TOPIC_ID", p.ErrorCode)
	}
	if p := produceByID(t, c, 0, 13, "", oldID); p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("produce to the old id: code %d, want UNKNOWN_TOPIC_ID", p.ErrorCode)
	}
	// The new topic by its id: empty, its record not confused with the old one's.
	if p := onlyPartition(t, fetchFrom(t, c, 0, 13, "", newID, -1)); p.ErrorCode != 0 || p.HighWatermark != 0 {
		t.Fatalf("fetch of the new id: code %d, high watermark %d, want 0, 0", p.ErrorCode, p.HighWatermark)
	}
}

// hintHooks records, for a kgo client, when it read an answer to key (Produce or
// Fetch) from each broker and when it read Metadata answers.
type hintHooks struct {
	produceReads       // of answers to key
	key          int16 // Produce or Fetch
	metaMu       sync.Mutex
	meta         []time.Time
}

func (h *hintHooks) OnBrokerRead(meta kgo.BrokerMetadata, key int16, n int, w, r time.Duration, err error) {
	if key == h.key && err == nil {
		h.mu.Lock()
		h.from[meta.NodeID] = append(h.from[meta.NodeID], time.Now())
		h.mu.Unlock()
	}
	if key == int16(kmsg.Metadata) && err == nil {
		h.metaMu.Lock()
		h.meta = append(h.meta, time.Now())
		h.metaMu.Unlock()
	}
}

func (h *hintHooks) metadataBetween(from, to time.Time) int {
	h.metaMu.Lock()
	defer h.metaMu.Unlock()
	n := 0
	for _, at := range h.meta {
		if at.After(from) && at.Before(to) {
			n++
		}
	}
	return n
}

// TestLeaderHints_KgoAcrossControlledStop: a default kgo producer writing while the
// partition's leader stops gracefully moves to the new leader on the stopping
// leader's NOT_LEADER_OR_FOLLOWER hint, with no metadata answer read in between, and
// a consumer reading along reads every acknowledged record across the stop.
func TestLeaderHints_KgoAcrossControlledStop(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	c := StartCluster(t, 3)
	const topic = "hints-kgo"
	c.CreateTopicRF(t, topic, 1, 3, map[string]*string{"min.insync.replicas": kmsgStr("2")})
	c.WaitConverged()
	hooks := &hintHooks{produceReads: produceReads{from: map[int32][]time.Time{}}, key: int16(kmsg.Produce)}
	cl := c.Client(t, kgo.WithHooks(hooks), kgo.MaxVersions(kversion.Stable()))
	// A consumer reading along, parked at the leader when it stops.
	consHooks := &hintHooks{produceReads: produceReads{from: map[int32][]time.Time{}}, key: int16(kmsg.Fetch)}
	cons := c.Client(t, kgo.WithHooks(consHooks), kgo.MaxVersions(kversion.Stable()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var seenMu sync.Mutex
	seen := map[string]bool{}
	consCtx, consCancel := context.WithCancel(testContext(t))
	var consWG sync.WaitGroup
	consWG.Add(1)
	go func() {
		defer consWG.Done()
		for consCtx.Err() == nil {
			cons.PollFetches(consCtx).EachRecord(func(r *kgo.Record) {
				seenMu.Lock()
				seen[string(r.Value)] = true
				seenMu.Unlock()
			})
		}
	}()
	defer func() {
		consCancel()
		consWG.Wait()
	}()
	ctx, cancel := context.WithCancel(testContext(t))
	var ackMu sync.Mutex
	acked := map[string]bool{}
	waitProducer := produceEvery2ms(ctx, cl, topic, func(v string) {
		ackMu.Lock()
		acked[v] = true
		ackMu.Unlock()
	})
	// The producer's metadata is older than MetadataMinAge: only a hint moves it at once.
	settle := time.Now().Add(6 * time.Second)
	testwait.For(t, testTimeout, func() error {
		if _, ok := hooks.firstAfter(settle, -1); !ok {
			return errNotYet
		}
		return nil
	})
	_, leader, _ := topicLeader(t, c, 0, topic)
	stopped := time.Now()
	stopErr := stopInBackground(c, int(leader))
	first := awaitReadAfter(t, &hooks.produceReads, stopped, leader)
	if err := <-stopErr; err != nil {
		t.Fatalf("node-%d: shutdown: %v", leader, err)
	}
	cancel()
	waitProducer()
	// kgo takes the hint and may also refresh its metadata at once: which answer comes
	// first is a race, so the count is reported, not held (the hints themselves are
	// held by TestLeaderHints_ProduceWire and TestLeaderHints_StoppingLeaderAnswers).
	// What a user sees is held: the first ack from the new leader comes well before
	// the metadata refresh kgo would wait for without a hint (MetadataMinAge, 5 s).
	t.Logf("controlled stop of node-%d to the first ack from the new leader: %v (%d metadata answers read)",
		leader, first.Sub(stopped), hooks.metadataBetween(stopped, first))
	if d := first.Sub(stopped); d > movedWithin {
		t.Errorf("the producer's first ack from the new leader came %v after the stop, want < %v", d, movedWithin)
	}
	firstFetch := awaitReadAfter(t, &consHooks.produceReads, stopped, leader)
	// The consumer is not held to the hint path, nor to a time: the stopping broker, a
	// follower once its leadership moved, answers its fetches FENCED_LEADER_EPOCH with
	// the hint (its epoch is the old one: Kafka's answer), on which kgo refreshes its
	// metadata at once rather than take the hint; when that refresh reaches a broker
	// that has not applied the move yet, kgo's epoch check retries every second and its
	// next refresh waits for MetadataMinAge (up to ~5 s; BenchmarkControlledStopFirstFetch).
	t.Logf("controlled stop of node-%d to the consumer's first fetch from the new leader: %v (%d metadata answers read)",
		leader, firstFetch.Sub(stopped), consHooks.metadataBetween(stopped, firstFetch))
	if err := cl.Flush(testContext(t)); err != nil {
		t.Fatal(err)
	}
	ackMu.Lock()
	want := len(acked)
	ackMu.Unlock()
	testwait.For(t, testTimeout, func() error {
		seenMu.Lock()
		defer seenMu.Unlock()
		ackMu.Lock()
		defer ackMu.Unlock()
		for v := range acked {
			if !seen[v] {
				return fmt.Errorf("%d of %d acknowledged records read, %s missing", len(seen), want, v)
			}
		}
		return nil
	})
	if !c.SawRequest(int(leader), int16(kmsg.Produce), 13) || !c.SawRequest(int(leader), int16(kmsg.Fetch), 17) {
		t.Errorf("the clients did not use Produce v13 and Fetch v17")
	}
}

// movedWithin bounds a kgo client's move to the new leader after a controlled stop of
// the old one: ~0.3 s with the stopping leader's hints; a client left without them
// waits up to MetadataMinAge (5 s) for its metadata refresh. The margin is for a
// loaded machine.
const movedWithin = 3 * time.Second

// awaitReadAfter waits for r's first answer read after since from a broker other
// than not, and returns when it was read.
func awaitReadAfter(t testing.TB, r *produceReads, since time.Time, not int32) time.Time {
	t.Helper()
	var first time.Time
	testwait.For(t, testTimeout, func() error {
		var ok bool
		if first, ok = r.firstAfter(since, not); !ok {
			return errNotYet
		}
		return nil
	})
	return first
}

func kmsgStr(s string) *string { return &s }
