package integration

// IBM/sarama v1.61.1 with its default configuration (Version 2.8.0, acks=1, auto-create
// on): only Producer.Return.Successes is set, because SyncProducer requires it.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
)

// saramaTimeout bounds one blocking sarama call (sarama has no contexts).
const saramaTimeout = 30 * time.Second

// TestSarama_ProduceAutoCreateConsume sends keyed records with headers to a topic that
// does not exist yet (sarama relies on auto-creation through Metadata), then reads them
// back from the oldest offset and checks every key, value, header, offset and timestamp.
func TestSarama_ProduceAutoCreateConsume(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	const topic, n = "sarama-autocreate", 60

	pcfg := sarama.NewConfig()
	pcfg.Producer.Return.Successes = true
	prod, err := bounded(t, saramaTimeout, "NewSyncProducer", func() (sarama.SyncProducer, error) {
		return sarama.NewSyncProducer(c.Addrs(), pcfg)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prod.Close() })

	start := time.Now().Add(-time.Minute)
	for i := range n {
		msg := &sarama.ProducerMessage{
			Topic: topic,
			Key:   sarama.StringEncoder(recordKey(i)),
			Value: sarama.StringEncoder(recordValue("sarama", i)),
			Headers: []sarama.RecordHeader{
				{Key: []byte("i"), Value: []byte(strconv.Itoa(i))},
				{Key: []byte("client"), Value: []byte("sarama")},
			},
		}
		type sent struct {
			partition int32
			offset    int64
		}
		got, err := bounded(t, saramaTimeout, "SendMessage", func() (sent, error) {
			p, o, err := prod.SendMessage(msg)
			return sent{p, o}, err
		})
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		// Auto-creation uses num.partitions=1, so offsets count up from 0.
		if got.partition != 0 || got.offset != int64(i) {
			t.Fatalf("record %d: stored at partition %d offset %d, expected 0/%d", i, got.partition, got.offset, i)
		}
	}

	client, err := bounded(t, saramaTimeout, "NewClient", func() (sarama.Client, error) {
		return sarama.NewClient(c.Addrs(), sarama.NewConfig())
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	for _, q := range []struct {
		at   int64
		want int64
	}{{sarama.OffsetOldest, 0}, {sarama.OffsetNewest, n}} {
		got, err := bounded(t, saramaTimeout, "GetOffset", func() (int64, error) { return client.GetOffset(topic, 0, q.at) })
		if err != nil || got != q.want {
			t.Fatalf("GetOffset(%d) = %d, %v; expected %d", q.at, got, err, q.want)
		}
	}

	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { consumer.Close() })
	pc, err := bounded(t, saramaTimeout, "ConsumePartition", func() (sarama.PartitionConsumer, error) {
		return consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.AsyncClose() })
	ctx := testContext(t)
	for i := range n {
		var m *sarama.ConsumerMessage
		select {
		case m = <-pc.Messages():
		case err := <-pc.Errors():
			t.Fatalf("consuming record %d: %v", i, err)
		case <-ctx.Done():
			t.Fatalf("consumed %d of %d records: %v", i, n, ctx.Err())
		}
		if m.Topic != topic || m.Partition != 0 || m.Offset != int64(i) {
			t.Fatalf("record %d: got %s/%d@%d", i, m.Topic, m.Partition, m.Offset)
		}
		if string(m.Key) != recordKey(i) || string(m.Value) != recordValue("sarama", i) {
			t.Fatalf("record %d: key %q value %q", i, m.Key, m.Value)
		}
		var headers []string
		for _, h := range m.Headers {
			headers = append(headers, string(h.Key)+"="+string(h.Value))
		}
		if want := []string{"i=" + strconv.Itoa(i), "client=sarama"}; !slices.Equal(headers, want) {
			t.Fatalf("record %d: headers %q, expected %q", i, headers, want)
		}
		if m.Timestamp.Before(start) || m.Timestamp.After(time.Now().Add(time.Minute)) {
			t.Fatalf("record %d: timestamp %v is not the producer's create time", i, m.Timestamp)
		}
	}
	if hw := pc.HighWaterMarkOffset(); hw != n {
		t.Fatalf("high watermark %d, expected %d", hw, n)
	}
}

// TestSarama_ClusterAdmin drives sarama's ClusterAdmin with the default config:
// CreateTopic (and again, for TOPIC_ALREADY_EXISTS), ListTopics, DescribeTopics,
// DescribeConfig, DescribeCluster (DescribeCluster API at sarama's 2.8 default) and
// DeleteTopic.
func TestSarama_ClusterAdmin(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	const topic = "sarama-admin"
	admin, err := bounded(t, saramaTimeout, "NewClusterAdmin", func() (sarama.ClusterAdmin, error) {
		return sarama.NewClusterAdmin(c.Addrs(), sarama.NewConfig())
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	call := func(what string, f func() error) error {
		t.Helper()
		_, err := bounded(t, saramaTimeout, what, func() (struct{}, error) { return struct{}{}, f() })
		return err
	}

	retention := "3600000"
	detail := &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1, ConfigEntries: map[string]*string{"retention.ms": &retention}}
	if err := call("CreateTopic", func() error { return admin.CreateTopic(topic, detail, false) }); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	err = call("CreateTopic again", func() error { return admin.CreateTopic(topic, detail, false) })
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("CreateTopic of an existing topic: %v, expected %v", err, sarama.ErrTopicAlreadyExists)
	}

	var topics map[string]sarama.TopicDetail
	if err := call("ListTopics", func() (err error) { topics, err = admin.ListTopics(); return err }); err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	got, ok := topics[topic]
	if !ok {
		t.Fatalf("ListTopics: %s missing from %v", topic, topics)
	}
	if got.NumPartitions != 3 || got.ReplicationFactor != 1 {
		t.Fatalf("ListTopics: %d partitions, replication factor %d", got.NumPartitions, got.ReplicationFactor)
	}
	// sarama keeps only non-default entries: the override must be there.
	if v := got.ConfigEntries["retention.ms"]; v == nil || *v != retention {
		t.Fatalf("ListTopics: retention.ms = %v, expected %s (entries %v)", v, retention, got.ConfigEntries)
	}

	var md []*sarama.TopicMetadata
	if err := call("DescribeTopics", func() (err error) { md, err = admin.DescribeTopics([]string{topic}); return err }); err != nil {
		t.Fatalf("DescribeTopics: %v", err)
	}
	if len(md) != 1 || md[0].Name != topic || !errors.Is(md[0].Err, sarama.ErrNoError) || len(md[0].Partitions) != 3 {
		t.Fatalf("DescribeTopics: %+v", md)
	}
	if md[0].Uuid == (sarama.Uuid{}) {
		t.Errorf("DescribeTopics: zero topic id (Metadata v10+ must carry real UUIDs)")
	}
	for _, p := range md[0].Partitions {
		if p.Leader != 0 || !slices.Equal(p.Replicas, []int32{0}) || !slices.Equal(p.Isr, []int32{0}) || !errors.Is(p.Err, sarama.ErrNoError) {
			t.Fatalf("DescribeTopics: partition %d: leader %d replicas %v isr %v err %v", p.ID, p.Leader, p.Replicas, p.Isr, p.Err)
		}
	}

	var entries []sarama.ConfigEntry
	res := sarama.ConfigResource{Type: sarama.TopicResource, Name: topic}
	if err := call("DescribeConfig", func() (err error) { entries, err = admin.DescribeConfig(res); return err }); err != nil {
		t.Fatalf("DescribeConfig: %v", err)
	}
	byName := map[string]sarama.ConfigEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	if e, ok := byName["retention.ms"]; !ok || e.Value != retention || e.Default || e.Source != sarama.SourceTopic {
		t.Errorf("DescribeConfig retention.ms: %+v, expected %s from the topic", e, retention)
	}
	for name, want := range map[string]string{"max.message.bytes": "1048588", "cleanup.policy": "delete", "min.insync.replicas": "1"} {
		if e, ok := byName[name]; !ok || e.Value != want || !e.Default || e.Source != sarama.SourceDefault {
			t.Errorf("DescribeConfig %s: %+v, expected the default %s", name, e, want)
		}
	}
	res.ConfigNames = []string{"retention.ms"}
	if err := call("DescribeConfig by name", func() (err error) { entries, err = admin.DescribeConfig(res); return err }); err != nil {
		t.Fatalf("DescribeConfig by name: %v", err)
	}
	if len(entries) != 1 || entries[0].Name != "retention.ms" {
		t.Errorf("DescribeConfig for one name returned %d entries: %+v", len(entries), entries)
	}

	var brokers []*sarama.Broker
	var controller int32
	if err := call("DescribeCluster", func() (err error) { brokers, controller, err = admin.DescribeCluster(); return err }); err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	if len(brokers) != 1 || brokers[0].ID() != 0 || brokers[0].Addr() != c.Addr(0) || controller != 0 {
		addrs := make([]string, 0, len(brokers))
		for _, b := range brokers {
			addrs = append(addrs, fmt.Sprintf("%d@%s", b.ID(), b.Addr()))
		}
		t.Fatalf("DescribeCluster: brokers %v controller %d, expected [0@%s] controller 0", addrs, controller, c.Addr(0))
	}
	if !c.SawRequest(0, 60, 0) && !c.SawRequest(0, 60, 1) {
		t.Errorf("sarama did not use the DescribeCluster API (it falls back to Metadata only on UNSUPPORTED_VERSION)")
	}

	if err := call("DeleteTopic", func() error { return admin.DeleteTopic(topic) }); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	testwait.For(t, 10*time.Second, func() error {
		var topics map[string]sarama.TopicDetail
		if err := call("ListTopics", func() (err error) { topics, err = admin.ListTopics(); return err }); err != nil {
			return err
		}
		if _, ok := topics[topic]; ok {
			return fmt.Errorf("%s still listed after DeleteTopic", topic)
		}
		return nil
	})
	if err := call("DescribeTopics", func() (err error) { md, err = admin.DescribeTopics([]string{topic}); return err }); err != nil {
		t.Fatalf("DescribeTopics after delete: %v", err)
	}
	if len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("DescribeTopics after delete: %+v, expected UNKNOWN_TOPIC_OR_PARTITION", md)
	}
	err = call("DeleteTopic again", func() error { return admin.DeleteTopic(topic) })
	if !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("DeleteTopic of a missing topic: %v, expected %v", err, sarama.ErrUnknownTopicOrPartition)
	}
}
