package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

func TestAdminTopicsAndConfigs(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"log.retention.hours": "48"})
	adm := newAdmin(t, b)
	ctx := testContext(t)

	resp, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.bytes": strp("1000000")}, "orders")
	if err != nil || resp.Err != nil || resp.ID == [16]byte{} {
		t.Fatalf("create: %v %+v", err, resp)
	}
	dup, _ := adm.CreateTopic(ctx, 1, 1, nil, "orders")
	if !errors.Is(dup.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("duplicate create: %v", dup.Err)
	}
	// validate_only creates nothing.
	vo, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "only-validated")
	if err != nil || vo.Error() != nil {
		t.Fatalf("validate only: %v %v", err, vo.Error())
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil || !topics.Has("orders") || topics.Has("only-validated") || len(topics["orders"].Partitions) != 3 {
		t.Fatalf("list: %v %v", err, topics.Names())
	}
	for _, p := range topics["orders"].Partitions {
		if p.Leader != 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 || p.LeaderEpoch != 0 {
			t.Fatalf("partition %+v", p)
		}
	}

	// Config sources: override, broker property (log.retention.hours=48), default.
	rcs, err := adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("orders", nil)
	if err != nil || rc.Err != nil {
		t.Fatal(err, rc.Err)
	}
	want := map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"retention.bytes": {"1000000", kmsg.ConfigSourceDynamicTopicConfig},
		"retention.ms":    {"172800000", kmsg.ConfigSourceStaticBrokerConfig},
		"segment.bytes":   {"1073741824", kmsg.ConfigSourceDefaultConfig},
		"cleanup.policy":  {"delete", kmsg.ConfigSourceDefaultConfig},
	}
	found := 0
	for _, c := range rc.Configs {
		if w, ok := want[c.Key]; ok {
			found++
			if c.MaybeValue() != w.value || c.Source != w.source {
				t.Errorf("%s = %q source %v, want %q %v", c.Key, c.MaybeValue(), c.Source, w.value, w.source)
			}
		}
	}
	if found != len(want) {
		t.Fatalf("found %d of %d configs", found, len(want))
	}
	brokerCfgs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil || len(brokerCfgs) != 1 || brokerCfgs[0].Err != nil || len(brokerCfgs[0].Configs) == 0 {
		t.Fatalf("broker configs: %v %+v", err, brokerCfgs)
	}
	// kadm may report the resource's error either as the call's error or per resource.
	missing, err := adm.DescribeTopicConfigs(ctx, "missing")
	if rc, onErr := missing.On("missing", nil); !errors.Is(err, kerr.UnknownTopicOrPartition) &&
		(onErr != nil || !errors.Is(rc.Err, kerr.UnknownTopicOrPartition)) {
		t.Fatalf("missing topic configs: %v / %v / %v", err, onErr, rc.Err)
	}

	// Cluster description.
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil || meta.Controller != 0 || len(meta.Brokers) != 1 || meta.Cluster == "" {
		t.Fatalf("metadata: %v %+v", err, meta)
	}

	// Delete removes the data from disk.
	lp := b.partitions.get("orders", 0)
	if lp == nil {
		t.Fatal("no local replica")
	}
	var dir string
	lp.WithLog(func(l *segment.Log) error { dir = l.Dir(); return nil })
	dresp, err := adm.DeleteTopic(ctx, "orders")
	if err != nil || dresp.Err != nil {
		t.Fatalf("delete: %v %v", err, dresp.Err)
	}
	if b.partitions.get("orders", 0) != nil {
		t.Fatal("replica still open after delete")
	}
	if _, err := osStat(dir); err == nil {
		t.Fatalf("partition directory %s still exists", dir)
	}
	gone, _ := adm.DeleteTopic(ctx, "orders")
	if !errors.Is(gone.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("second delete: %v", gone.Err)
	}
}

func TestListOffsetsAndTimestamps(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "lo", 1, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic("lo"))
	ctx := testContext(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Value: []byte("v"), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	check := func(name string, offs kadm.ListedOffsets, err error, want int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o, ok := offs.Lookup("lo", 0)
		if !ok || o.Err != nil || o.Offset != want {
			t.Fatalf("%s: %+v, want offset %d", name, o, want)
		}
	}
	offs, err := adm.ListStartOffsets(ctx, "lo")
	check("earliest", offs, err, 0)
	offs, err = adm.ListEndOffsets(ctx, "lo")
	check("latest", offs, err, 10)
	offs, err = adm.ListOffsetsAfterMilli(ctx, base.Add(3500*time.Millisecond).UnixMilli(), "lo")
	check("by time", offs, err, 4)
	offs, err = adm.ListOffsetsAfterMilli(ctx, base.Add(time.Hour).UnixMilli(), "lo")
	// Kafka answers -1 when no record is that new; kadm reports the end offset then.
	if o, _ := offs.Lookup("lo", 0); err != nil || (o.Offset != -1 && o.Offset != 10) {
		t.Fatalf("after the last record: %+v %v", o, err)
	}
	// Max timestamp (-3), straight on the wire.
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "lo"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := raw.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.Offset != 9 || p.Timestamp != base.Add(9*time.Second).UnixMilli() || p.LeaderEpoch != 0 {
		t.Fatalf("max timestamp: %+v", p)
	}
}

func TestFetchLongPollWakesOnProduce(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "lp", 1, nil)
	cl := newClient(t, b)
	fetch := func(minBytes int32, maxWait time.Duration, isolation int8) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = -1, int32(maxWait/time.Millisecond), minBytes, 1<<20, isolation
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "lp"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(testContext(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	done := make(chan *kmsg.FetchResponse, 1)
	go func() { done <- fetch(1, time.Minute, 1) }()
	// The fetch is parked for up to a minute; a produce must wake it.
	prod := newClient(t, b, kgo.DefaultProduceTopic("lp"))
	if err := prod.ProduceSync(testContext(t), kgo.StringRecord("wake")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-done:
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 1 || p.LastStableOffset != 1 || p.AbortedTransactions == nil {
			t.Fatalf("woken fetch: %+v", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("parked fetch was not woken by the produce")
	}
	// min_bytes above what exists: the fetch answers at max_wait with what there is.
	resp := fetch(1<<20, 300*time.Millisecond, 0)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.AbortedTransactions != nil {
		t.Fatalf("min_bytes fetch: %+v", p)
	}
}

func TestReadCommittedConsumer(t *testing.T) {
	b := startTestBroker(t, "", nil)
	prod := newClient(t, b, kgo.DefaultProduceTopic("rc"), kgo.AllowAutoTopicCreation())
	for i := 0; i < 20; i++ {
		if err := prod.ProduceSync(testContext(t), kgo.StringRecord("x")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := newClient(t, b, kgo.ConsumeTopics("rc"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := 0
	for got < 20 {
		fs := cons.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
}

func TestProduceToMissingTopicWithoutAutoCreate(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"auto.create.topics.enable": "false"})
	cl := newClient(t, b)
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = strp("nope")
	req.Topics = append(req.Topics, mt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata: %v %+v", err, resp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "nope", Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("produce to a missing topic succeeded")
	}
	if b.Image().Topic("nope") != nil {
		t.Fatal("topic was created")
	}
}
