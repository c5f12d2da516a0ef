package replication

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchSource is a broker of leader replicas, one partition 0 per topic.
type fetchSource struct {
	parts   map[string]*Partition
	zstd    map[string]bool
	ids     map[string][16]byte // Fetch v13+: the topics' ids
	fetched atomic.Int64        // Fetched calls
}

func (s *fetchSource) Replica(topic string, partition int32) (*Partition, bool, int16) {
	if p := s.parts[topic]; p != nil && partition == 0 {
		return p, s.zstd[topic], 0
	}
	return nil, false, kerr.UnknownTopicOrPartition.Code
}
func (s *fetchSource) ErrorCode(err error) int16 { return kerr.UnknownServerError.Code }
func (s *fetchSource) LeaderThrottle(string, int32, int32, bool) int64 {
	return -1
}
func (s *fetchSource) Fetched(*kmsg.FetchRequest, *FetchAnswer, int) { s.fetched.Add(1) }

// topicIDs are the topics' ids (the watch tests' follower fetches by them).
func (s *fetchSource) topicIDs() map[string][16]byte { return s.ids }

// TopicName knows the topics of ids.
func (s *fetchSource) TopicName(id [16]byte, _ string, _ int32) (string, int16) {
	for name, tid := range s.ids {
		if tid == id {
			return name, 0
		}
	}
	return "", kerr.UnknownTopicID.Code
}

// fetchServer serves topics, each a leader (broker 0, alone in its ISR) holding
// appends batches of batchRecords records.
func fetchServer(t *testing.T, appends, batchRecords int, topics ...string) (*FetchServer, *fetchSource) {
	t.Helper()
	return fetchServerOf(t, nil, appends, batchRecords, topics...)
}

// fetchServerOf is fetchServer with the logs sharing files (nil: the test default).
func fetchServerOf(t *testing.T, files *segment.FileCache, appends, batchRecords int, topics ...string) (*FetchServer, *fetchSource) {
	t.Helper()
	src := &fetchSource{parts: map[string]*Partition{}, zstd: map[string]bool{}}
	for _, name := range topics {
		log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{Files: files})
		if err != nil {
			t.Fatal(err)
		}
		p := NewPartition(name, 0, log, 0, Options{BrokerID: 0})
		t.Cleanup(func() { p.Stop(false) })
		if err := p.BecomeLeaderOf(1, 0, []int32{0}, []int32{0}); err != nil {
			t.Fatal(err)
		}
		for range appends {
			if _, err := p.AppendAsLeader(batch(batchRecords), 0); err != nil {
				t.Fatal(err)
			}
		}
		src.parts[name] = p
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &FetchServer{Sessions: NewFetchSessionCache(10, 1000), Purgatory: NewPurgatory(ctx), Source: src, Leader: &Quota{}}, src
}

// consumerFetch is a consumer's sessionless Fetch at version v of partition 0 of
// topics, from offset 0, partition_max_bytes each.
func consumerFetch(v int16, partitionMaxBytes int32, topics ...string) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.ReplicaID, r.MaxBytes, r.SessionEpoch = v, -1, 1<<20, -1
	for _, name := range topics {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = name
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = partitionMaxBytes, -1
		ft.Partitions = append(ft.Partitions, fp)
		r.Topics = append(r.Topics, ft)
	}
	return r
}

// TestFetchServerReadLimitsAndCodes: partition_max_bytes is soft for the first
// partition with records (KIP-74) and hard past it; each partition answers its own
// error code with unknown offsets; a denied topic is TOPIC_AUTHORIZATION_FAILED, and
// a consumer below v10 of a zstd topic UNSUPPORTED_COMPRESSION_TYPE.
func TestFetchServerReadLimitsAndCodes(t *testing.T) {
	s, src := fetchServer(t, 2, 5, "a", "b", "z", "denied")
	src.zstd["z"] = true
	r := consumerFetch(9, 1, "a", "b", "gone", "z", "denied")
	a, n, errored := s.Read(r, func(topic string) bool { return topic == "denied" })
	defer a.Release()
	if !errored {
		t.Fatal("partitions in error not reported")
	}
	first := a.Held(0)
	if first == nil || n != int(first.Len()) || first.Len() <= 1 {
		t.Fatalf("first partition holds %v, %d bytes counted", first, n)
	}
	want := []struct {
		topic string
		code  int16
		hw    int64
	}{
		{"a", 0, 10},
		{"b", 0, 10}, // over its limit past the first: no records, offsets known
		{"gone", kerr.UnknownTopicOrPartition.Code, -1},
		{"z", kerr.UnsupportedCompressionType.Code, -1},
		{"denied", kerr.TopicAuthorizationFailed.Code, -1},
	}
	if len(a.Topics) != len(want) {
		t.Fatalf("%d topics", len(a.Topics))
	}
	for i, w := range want {
		sp := a.Topics[i].Partitions[0]
		if a.Topics[i].Topic != w.topic || sp.ErrorCode != w.code || sp.HighWatermark != w.hw || sp.RecordBatches == nil {
			t.Errorf("%s: code %d, high watermark %d, records %v", a.Topics[i].Topic, sp.ErrorCode, sp.HighWatermark, sp.RecordBatches)
		}
		if i > 0 && a.Held(i) != nil {
			t.Errorf("%s holds records past the first partition's limit", w.topic)
		}
	}
	// v10 reads the zstd topic.
	a2, n2, errored2 := s.Read(consumerFetch(10, 1<<20, "z"), nil)
	defer a2.Release()
	if errored2 || n2 == 0 || a2.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("v10 read of a zstd topic: %d bytes, code %d", n2, a2.Topics[0].Partitions[0].ErrorCode)
	}
}

// TestFetchServerCopiesPastTheHoldBound: a fetch answering more partitions than its
// logs' file cache has Holds for copies the records of the rest into the answer: every
// partition's records arrive, the same in the sent and the copying encodings.
func TestFetchServerCopiesPastTheHoldBound(t *testing.T) {
	topics := []string{"a", "b", "c", "d", "e"}
	s, _ := fetchServerOf(t, segment.NewFileCache(2), 1, 3, topics...)
	a, n, errored := s.Read(consumerFetch(12, 1<<20, topics...), nil)
	defer a.Release()
	if errored || len(a.Topics) != len(topics) {
		t.Fatalf("errored %v, %d topics", errored, len(a.Topics))
	}
	held, copied, sum := 0, 0, 0
	for i := range a.Topics {
		sp := &a.Topics[i].Partitions[0]
		if h := a.Held(i); h != nil {
			held++
			if len(sp.RecordBatches) != 0 {
				t.Errorf("%s: held and copied", a.Topics[i].Topic)
			}
		} else if len(sp.RecordBatches) > 0 {
			copied++
		}
		sum += a.RecordBytes(i, sp)
	}
	if held != 2 || copied != 3 || n != sum {
		t.Fatalf("%d partitions held, %d copied, %d bytes counted of %d; want 2 held (the cache's bound) and 3 copied", held, copied, n, sum)
	}
	whole := kmsg.FetchResponse{Version: 12}
	if err := whole.ReadFrom(a.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	for i, t2 := range whole.Topics {
		if got := t2.Partitions[0].RecordBatches; len(got) == 0 || len(got) != a.RecordBytes(i, &a.Topics[i].Partitions[0]) {
			t.Errorf("%s: %d record bytes encoded", t2.Topic, len(got))
		}
	}
}

// TestFetchServerParksBelowMinBytes: a fetch with less than min_bytes and a wait parks
// (Fetch returns nil) and is answered with the records of the append that completes
// it; with no wait it answers at once, empty; with min_bytes met, at once with them.
func TestFetchServerParksBelowMinBytes(t *testing.T) {
	s, src := fetchServer(t, 1, 1, "a")
	end := src.parts["a"].State().LogEndOffset
	atEnd := func(wait int32) *kmsg.FetchRequest {
		r := consumerFetch(12, 1<<20, "a")
		r.MinBytes, r.MaxWaitMillis = 1, wait
		r.Topics[0].Partitions[0].FetchOffset = end
		return r
	}
	noPark := func() func(kmsg.Response) { t.Fatal("parked"); return nil }
	resp := s.Fetch(context.Background(), atEnd(0), nil, noPark).(*FetchAnswer)
	if resp.HeldBytes() != 0 || resp.Topics[0].Partitions[0].HighWatermark != end {
		t.Fatalf("no-wait answer holds %d bytes, %+v", resp.HeldBytes(), resp.Topics[0].Partitions[0])
	}
	resp.Release()

	answers := make(chan kmsg.Response, 1)
	parked := 0
	got := s.Fetch(context.Background(), atEnd(30_000), nil, func() func(kmsg.Response) {
		parked++
		return func(resp kmsg.Response) { answers <- resp }
	})
	if got != nil || parked != 1 {
		t.Fatalf("answered at once (%v), parked %d times", got, parked)
	}
	if _, err := src.parts["a"].AppendAsLeader(batch(3), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-answers:
		a := resp.(*FetchAnswer)
		defer a.Release()
		if a.HeldBytes() == 0 || a.Topics[0].Partitions[0].HighWatermark != end+3 {
			t.Fatalf("answer after the append holds %d bytes, %+v", a.HeldBytes(), a.Topics[0].Partitions[0])
		}
	case <-time.After(20 * time.Second):
		t.Fatal("parked fetch not answered by the append")
	}
	if n := src.fetched.Load(); n != 2 {
		t.Fatalf("Fetched counted %d answers, want 2", n)
	}

	r := consumerFetch(12, 1<<20, "a")
	r.MinBytes, r.MaxWaitMillis = 1, 30_000
	full := s.Fetch(context.Background(), r, nil, noPark).(*FetchAnswer)
	defer full.Release()
	if full.HeldBytes() == 0 {
		t.Fatal("min_bytes met, but the answer holds no records")
	}
}

// TestFetchServerSessionError: a fetch naming a session the cache does not have is
// answered FETCH_SESSION_ID_NOT_FOUND alone, read from nothing.
func TestFetchServerSessionError(t *testing.T) {
	s, _ := fetchServer(t, 1, 1, "a")
	r := consumerFetch(12, 1<<20, "a")
	r.SessionID, r.SessionEpoch = 12345, 1
	resp := s.Fetch(context.Background(), r, nil, nil).(*kmsg.FetchResponse)
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(resp.Topics) != 0 {
		t.Fatalf("code %d, %d topics", resp.ErrorCode, len(resp.Topics))
	}
}
