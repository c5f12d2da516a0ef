package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/s3test"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tieredReadCluster is tieredCluster with local retention at its smallest (a local
// segment goes as soon as it is copied) and retention checked every 100 ms, plus a
// topic "local" without remote storage.
func tieredReadCluster(t *testing.T, srv *s3test.Server, n int) *Cluster {
	t.Helper()
	return tieredReadClusterRF(t, srv, n, int16(n))
}

// tieredReadClusterRF is tieredReadCluster with the topics' replication factor rf and
// extra options (over the others).
func tieredReadClusterRF(t *testing.T, srv *s3test.Server, n int, rf int16, extra ...Option) *Cluster {
	t.Helper()
	c := StartCluster(t, n, append(append(tieredProperties(srv),
		WithProperty("log.retention.check.interval.ms", "100"),
		WithProperty("rsm.config.chunk.size", "1024"), // several chunks a segment: read-ahead and chunk edges
		WithProperty("rsm.config.key.prefix", "tiered/")), extra...)...)
	yes, seg, local := "true", "2048", "1"
	c.CreateTopicRF(t, "tiered", 1, rf, map[string]*string{"remote.storage.enable": &yes, "segment.bytes": &seg, "local.retention.bytes": &local})
	c.CreateTopicRF(t, "local", 1, rf, nil)
	return c
}

// tieredRecord is one record the tests produce and expect back.
type tieredRecord struct {
	key, value string
	ts         int64
	aborted    bool
}

// produceTieredMix produces to "tiered": 60 idempotent records with timestamps
// base+i s, a committed transaction of 10, an aborted one of 10, a committed one of
// 10, then 60 idempotent records more; it returns every record in offset order with
// the control records left out.
func produceTieredMix(t *testing.T, c *Cluster, base time.Time) []tieredRecord {
	t.Helper()
	var all []tieredRecord
	ctx := testContext(t)
	plain := c.Client(t, kgo.ProducerBatchMaxBytes(1024))
	produce := func(cl *kgo.Client, from, n int, aborted bool) {
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			r := tieredRecord{key: recordKey(i), value: recordValue(strings.Repeat("v", 180), i), ts: base.Add(time.Duration(i) * time.Second).UnixMilli(), aborted: aborted}
			all = append(all, r)
			recs = append(recs, &kgo.Record{Topic: "tiered", Key: []byte(r.key), Value: []byte(r.value), Timestamp: time.UnixMilli(r.ts)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produce(plain, 0, 60, false)
	txn := c.Client(t, kgo.TransactionalID("tiered-txn"), kgo.ProducerBatchMaxBytes(1024))
	for i, commit := range []bool{true, false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(txn, 60+10*i, 10, !commit)
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("ending transaction %d: %v", i, err)
		}
	}
	produce(plain, 90, 60, false)
	return all
}

// listOffset is node i's ListOffsets (v9) answer for tiered-0 at ts.
func listOffset(t testing.TB, c *Cluster, i int, topic string, ts int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 9
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.RequestTo(testContext(t), t, i, req)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("ListOffsets %s at %d: %v", topic, ts, err)
	}
	return p.Offset
}

// waitLocalStartPast waits until node i's local log of tiered-0 starts past offset.
func waitLocalStartPast(t testing.TB, c *Cluster, i int, offset int64) {
	t.Helper()
	testwait.ForWhat(t, 60*time.Second, fmt.Sprintf("the local log start past %d", offset), func() error {
		if got := listOffset(t, c, i, "tiered", -4); got <= offset {
			return fmt.Errorf("local log starts at %d", got)
		}
		return nil
	})
}

// consumeAll reads tiered-0 from offset 0 to end with franz-go, returning the records.
func consumeAll(t *testing.T, c *Cluster, end int64, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := c.Client(t, append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"tiered": {0: kgo.NewOffset().At(0)}})}, opts...)...)
	ctx, cancel := context.WithTimeout(testContext(t), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d records (to offset %d) before the deadline", len(out), end)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch error %s-%d: %v", topic, p, err) })
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			done = done || r.Offset >= end-1
		})
		if done || (len(out) > 0 && out[len(out)-1].Offset >= end-1) {
			return out
		}
	}
}

// checkRecords compares what was consumed with want (aborted ones left out when
// readCommitted), byte for byte and in order.
func checkRecords(t *testing.T, got []*kgo.Record, want []tieredRecord, readCommitted bool) {
	t.Helper()
	var exp []tieredRecord
	for _, r := range want {
		if !readCommitted || !r.aborted {
			exp = append(exp, r)
		}
	}
	if len(got) != len(exp) {
		t.Fatalf("consumed %d records, want %d", len(got), len(exp))
	}
	prev := int64(-1)
	for i, r := range got {
		if string(r.Key) != exp[i].key || string(r.Value) != exp[i].value || r.Timestamp.UnixMilli() != exp[i].ts {
			t.Fatalf("record %d (offset %d): key %q, want %q (value or timestamp may differ)", i, r.Offset, r.Key, exp[i].key)
		}
		if r.Offset <= prev {
			t.Fatalf("offset %d after %d", r.Offset, prev)
		}
		prev = r.Offset
	}
}

// fetchTwo sends node 0 one Fetch of tiered-0 and local-0 from offset 0 and returns the
// two partitions' answers.
func fetchTwo(t *testing.T, c *Cluster) (tiered, local kmsg.FetchResponseTopicPartition) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 12, -1, 100, 1<<20, -1
	for _, topic := range []string{"tiered", "local"} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := c.RequestTo(testContext(t), t, 0, req)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.FetchResponse)
	for _, rt := range r.Topics {
		if rt.Topic == "tiered" {
			tiered = rt.Partitions[0]
		} else {
			local = rt.Partitions[0]
		}
	}
	return tiered, local
}

// TestCluster_TieredReadsFromRemote (KIP-405 reads): with the local log of a tiered
// topic cut to its active segment, a consumer from offset 0 reads every record from the
// object store byte-identical and in order, idempotent and transactional batches,
// read_uncommitted with the aborted transaction and read_committed without it (franz-go
// and kcat); ListOffsets by timestamp finds an offset in the remote part; with the store
// down the remote partition answers KAFKA_STORAGE_ERROR while a local one in the same
// fetch is served, and reads resume once it is back.
func TestCluster_TieredReadsFromRemote(t *testing.T) {
	srv := s3test.Start(t)
	c := tieredReadCluster(t, srv, 1)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	want := produceTieredMix(t, c, base)
	if err := c.Client(t).ProduceSync(testContext(t), &kgo.Record{Topic: "local", Value: []byte("local")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	end := listOffset(t, c, 0, "tiered", -1)
	waitLocalStartPast(t, c, 0, 100)

	// The store down, before anything is cached: the remote partition fails alone.
	srv.Stop()
	tp, lp := fetchTwo(t, c)
	if tp.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("tiered-0 with the store down: code %d, want KAFKA_STORAGE_ERROR", tp.ErrorCode)
	}
	if lp.ErrorCode != 0 || len(lp.RecordBatches) == 0 {
		t.Fatalf("local-0 with the store down: code %d, %d bytes", lp.ErrorCode, len(lp.RecordBatches))
	}
	srv.Restart(t)
	testwait.ForWhat(t, 30*time.Second, "remote reads after the store is back", func() error {
		tp, _ := fetchTwo(t, c)
		if tp.ErrorCode != 0 || len(tp.RecordBatches) == 0 {
			return fmt.Errorf("code %d, %d bytes", tp.ErrorCode, len(tp.RecordBatches))
		}
		return nil
	})

	checkRecords(t, consumeAll(t, c, end, kgo.FetchIsolationLevel(kgo.ReadUncommitted())), want, false)
	checkRecords(t, consumeAll(t, c, end, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxPartitionBytes(3000)), want, true)
	// The reads are metered with Kafka's names; the store down counted an error.
	fams := c.scrapeNode(t, 0)
	for name, least := range map[string]float64{"remotefetchrequests_total": 2, "remotefetchbytes_total": 1, "remotefetcherrors_total": 1} {
		if got := metricSum(fams, "kafka_server_brokertopicmetrics_"+name, map[string]string{"topic": "tiered"}); got < least {
			t.Fatalf("kafka_server_brokertopicmetrics_%s{topic=tiered} = %v, want at least %v", name, got, least)
		}
	}

	// ListOffsets by timestamp into the remote part: record 30's time is offset 30.
	if got := listOffset(t, c, 0, "tiered", base.Add(30*time.Second).UnixMilli()); got != 30 {
		t.Fatalf("ListOffsets at record 30's timestamp: offset %d, want 30", got)
	}
	if got := listOffset(t, c, 0, "tiered", base.Add(29*time.Second+500*time.Millisecond).UnixMilli()); got != 30 {
		t.Fatalf("ListOffsets between records 29 and 30: offset %d, want 30", got)
	}

	t.Run("kcat", func(t *testing.T) {
		if _, err := exec.LookPath("kcat"); err != nil {
			kcatBinary(t) // skips with the install hint, or fails under CI
		}
		var got []string
		for _, m := range kcatConsumeJSON(t, c.Addr(0), "tiered") {
			if m.Key != nil && m.Payload != nil {
				got = append(got, *m.Key+"="+*m.Payload)
			}
		}
		var exp []string
		for _, r := range want {
			if !r.aborted { // librdkafka reads read_committed by default
				exp = append(exp, r.key+"="+r.value)
			}
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("kcat read %d records, want %d, or they differ", len(got), len(exp))
		}
	})
}

// TestCluster_TieredFollowerCatchesUpFromRemote: a replica added by reassignment after
// the leader's local segments are gone builds its log from the remote segment below the
// leader's local start (leader epochs, producer snapshot), joins the ISR, and, once it
// leads, serves every record from offset 0 through its own remote reads.
func TestCluster_TieredFollowerCatchesUpFromRemote(t *testing.T) {
	srv := s3test.Start(t)
	c := tieredReadClusterRF(t, srv, 2, 1)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	want := produceTieredMix(t, c, base)
	p := c.WaitConverged().Topics["tiered"].Partitions[0]
	leader := int(p.Leader)
	other := 1 - leader
	end := listOffset(t, c, leader, "tiered", -1)
	waitLocalStartPast(t, c, leader, 100)

	if err := reassign(t, c.Admin(t), "tiered", []int32{int32(leader), int32(other)}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, c, "tiered", []int32{int32(leader), int32(other)}, 60*time.Second)
	testwait.ForWhat(t, 60*time.Second, "the new replica in the ISR", func() error {
		if isr := c.WaitConverged().Topics["tiered"].Partitions[0].ISR; len(isr) != 2 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
	c.Stop(leader)
	testwait.ForWhat(t, 60*time.Second, "the new replica leading", func() error {
		if l := c.Image(other).Topics["tiered"].Partitions[0].Leader; l != int32(other) {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	if got := listOffset(t, c, other, "tiered", -4); got <= 0 {
		t.Fatalf("the new leader's local log starts at %d: it copied the whole log instead of building from remote", got)
	}
	checkRecords(t, consumeAll(t, c, end, kgo.FetchIsolationLevel(kgo.ReadCommitted())), want, true)
}

// delayProxy is a proxy to endpoint holding each request for its current delay.
func delayProxy(t *testing.T, endpoint string) (string, *atomic.Int64) {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var delay atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Duration(delay.Load())):
			proxy.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &delay
}

// TestCluster_TieredSlowStoreAnswersWithinTheRemoteWait: with the store answering
// slower than remote.fetch.max.wait.ms, a fetch below the local log start answers
// within about that wait, the remote partition empty and without error, the local one
// with its records; the read goes on in the background and a later fetch gets the
// records.
func TestCluster_TieredSlowStoreAnswersWithinTheRemoteWait(t *testing.T) {
	srv := s3test.Start(t)
	endpoint, delay := delayProxy(t, srv.Endpoint)
	c := tieredReadClusterRF(t, srv, 1, 1, WithProperty("rsm.config.storage.s3.endpoint.url", endpoint),
		WithProperty("remote.fetch.max.wait.ms", "300"))
	produceTieredMix(t, c, time.Now())
	if err := c.Client(t).ProduceSync(testContext(t), &kgo.Record{Topic: "local", Value: []byte("local")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitLocalStartPast(t, c, 0, 100)

	delay.Store(int64(2 * time.Second))
	start := time.Now()
	tp, lp := fetchTwo(t, c)
	took := time.Since(start)
	if tp.ErrorCode != 0 || len(tp.RecordBatches) != 0 || took > 1500*time.Millisecond {
		t.Fatalf("slow store: tiered-0 code %d, %d bytes after %s; want none, without error, within the remote wait", tp.ErrorCode, len(tp.RecordBatches), took)
	}
	if lp.ErrorCode != 0 || len(lp.RecordBatches) == 0 {
		t.Fatalf("slow store: local-0 code %d, %d bytes", lp.ErrorCode, len(lp.RecordBatches))
	}
	delay.Store(0)
	testwait.ForWhat(t, 30*time.Second, "the remote records", func() error {
		if tp, _ := fetchTwo(t, c); tp.ErrorCode != 0 || len(tp.RecordBatches) == 0 {
			return fmt.Errorf("code %d, %d bytes", tp.ErrorCode, len(tp.RecordBatches))
		}
		return nil
	})
}

// TestCluster_TieredConsumerProgressesThroughASlowStore (P23): with every object store
// call slower than remote.fetch.max.wait.ms (300 ms against 100 ms), each remote fetch
// answers before its read ends, yet the downloads the reads started run on into the
// caches: a consumer from offset 0 reads every record byte-identical, in order, within
// a bounded time.
func TestCluster_TieredConsumerProgressesThroughASlowStore(t *testing.T) {
	srv := s3test.Start(t)
	endpoint, delay := delayProxy(t, srv.Endpoint)
	c := tieredReadClusterRF(t, srv, 1, 1, WithProperty("rsm.config.storage.s3.endpoint.url", endpoint),
		WithProperty("remote.fetch.max.wait.ms", "100"))
	want := produceTieredMix(t, c, time.Now())
	end := listOffset(t, c, 0, "tiered", -1)
	waitLocalStartPast(t, c, 0, 100)

	delay.Store(int64(300 * time.Millisecond))
	start := time.Now()
	checkRecords(t, consumeAll(t, c, end, kgo.FetchIsolationLevel(kgo.ReadUncommitted())), want, false)
	t.Logf("read %d records from the slow store in %s", len(want), time.Since(start).Round(time.Millisecond))
}
