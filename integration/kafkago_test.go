package integration

// segmentio/kafka-go v0.4.51 with default settings. Its Writer runs on the Transport
// stack (min(own max, broker max), ignoring broker minimums); its Reader and the Conn
// helpers run on the Conn stack, which hard-codes old versions (ApiVersions v0,
// ListOffsets v1, Fetch among v2/v5/v10, CreateTopics among v0-2).

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/segmentio/kafka-go"
)

// kafkaGoMessages returns messages [from, to) with keys, values and two headers.
func kafkaGoMessages(prefix string, from, to int) []kafka.Message {
	var out []kafka.Message
	for i := from; i < to; i++ {
		out = append(out, kafka.Message{
			Key:   []byte(recordKey(i)),
			Value: []byte(recordValue(prefix, i)),
			Headers: []kafka.Header{
				{Key: "i", Value: []byte(strconv.Itoa(i))},
				{Key: "client", Value: []byte("kafka-go")},
			},
		})
	}
	return out
}

// checkKafkaGoMessage checks that m is message i of kafkaGoMessages(prefix, ...) at
// offset wantOffset.
func checkKafkaGoMessage(t *testing.T, m kafka.Message, prefix string, i int, wantOffset int64) {
	t.Helper()
	if m.Offset != wantOffset {
		t.Fatalf("message %d: offset %d, expected %d", i, m.Offset, wantOffset)
	}
	if string(m.Key) != recordKey(i) || string(m.Value) != recordValue(prefix, i) {
		t.Fatalf("message %d: key %q value %q", i, m.Key, m.Value)
	}
	var headers []string
	for _, h := range m.Headers {
		headers = append(headers, h.Key+"="+string(h.Value))
	}
	if want := []string{"i=" + strconv.Itoa(i), "client=kafka-go"}; !slices.Equal(headers, want) {
		t.Fatalf("message %d: headers %q, expected %q", i, headers, want)
	}
}

// TestKafkaGo_WriterReader writes with kafka.Writer{Addr, Topic} — zero RequiredAcks,
// which for kafka.Writer means acks=0, so nothing confirms the write and the test
// polls the end offset — then with RequiredAcks: RequireAll, whose return means the
// records are committed. A default kafka.NewReader on partition 0 reads all of them
// back in order.
func TestKafkaGo_WriterReader(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	const topic, n = "kafkago-rw", 40
	c.CreateTopic(t, topic, 1, nil)
	adm := c.Admin(t)
	ctx := testContext(t)
	endOffset := func() (int64, error) {
		offsets, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return 0, err
		}
		o, ok := offsets.Lookup(topic, 0)
		if !ok {
			return 0, fmt.Errorf("no end offset for %s-0", topic)
		}
		return o.Offset, o.Err
	}

	noAcks := &kafka.Writer{Addr: kafka.TCP(c.Addrs()...), Topic: topic}
	t.Cleanup(func() { noAcks.Close() })
	if err := noAcks.WriteMessages(ctx, kafkaGoMessages("kafka-go", 0, n)...); err != nil {
		t.Fatalf("acks=0 writer: %v", err)
	}
	testwait.For(t, 15*time.Second, func() error {
		end, err := endOffset()
		if err == nil && end != n {
			err = fmt.Errorf("end offset %d, expected %d after the acks=0 writes", end, n)
		}
		return err
	})

	allAcks := &kafka.Writer{Addr: kafka.TCP(c.Addrs()...), Topic: topic, RequiredAcks: kafka.RequireAll}
	t.Cleanup(func() { allAcks.Close() })
	if err := allAcks.WriteMessages(ctx, kafkaGoMessages("kafka-go", n, 2*n)...); err != nil {
		t.Fatalf("acks=all writer: %v", err)
	}
	// No polling here: an acks=all success means the high watermark already covers it.
	if end, err := endOffset(); err != nil || end != 2*n {
		t.Fatalf("end offset after the acks=all write: %d, %v; expected %d", end, err, 2*n)
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Addrs(), Topic: topic, Partition: 0})
	t.Cleanup(func() { r.Close() })
	for i := range 2 * n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("reading message %d: %v", i, err)
		}
		checkKafkaGoMessage(t, m, "kafka-go", i, int64(i))
		if m.Time.IsZero() || time.Since(m.Time) > 10*time.Minute {
			t.Fatalf("message %d: timestamp %v", i, m.Time)
		}
	}
	if lag, err := r.ReadLag(ctx); err != nil || lag != 0 {
		t.Fatalf("reader lag after reading everything: %d, %v", lag, err)
	}
	// Close the Reader now, without waiting out its parked 10 s fetch.
	c.DropConnections(0)
	if err := r.Close(); err != nil {
		t.Errorf("reader close: %v", err)
	}
	if !c.SawRequest(0, 1, 10) {
		t.Errorf("the Reader did not use Fetch v10")
	}
}

// TestKafkaGo_ConnHelpers uses kafka-go's Conn helpers: Controller, CreateTopics on
// the controller (idempotent on TOPIC_ALREADY_EXISTS; INVALID_REPLICATION_FACTOR for
// RF 3 on one broker), ReadPartitions, DialLeader with WriteMessages, ReadOffsets
// (ListOffsets v1) and ReadBatch (Fetch), then DeleteTopics.
func TestKafkaGo_ConnHelpers(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	const topic, n = "kafkago-conn", 25
	ctx := testContext(t)
	deadline, _ := ctx.Deadline()
	addr := c.Addr(0)

	conn, err := kafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(deadline)
	ctrl, err := conn.Controller()
	if err != nil {
		t.Fatalf("Controller: %v", err)
	}
	ctrlAddr := net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port))
	if ctrl.ID != 0 || ctrlAddr != addr {
		t.Fatalf("Controller: %d at %s, expected 0 at %s", ctrl.ID, ctrlAddr, addr)
	}
	cc, err := kafka.DialContext(ctx, "tcp", ctrlAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	cc.SetDeadline(deadline)
	spec := kafka.TopicConfig{Topic: topic, NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "3600000"}}}
	if err := cc.CreateTopics(spec); err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if err := cc.CreateTopics(spec); err != nil {
		t.Fatalf("CreateTopics of an existing topic (kafka-go ignores TOPIC_ALREADY_EXISTS): %v", err)
	}
	err = cc.CreateTopics(kafka.TopicConfig{Topic: "kafkago-rf3", NumPartitions: 1, ReplicationFactor: 3})
	if !errors.Is(err, kafka.InvalidReplicationFactor) {
		t.Fatalf("CreateTopics with RF 3 on one broker: %v, expected %v", err, kafka.InvalidReplicationFactor)
	}

	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatalf("ReadPartitions: %v", err)
	}
	slices.SortFunc(parts, func(a, b kafka.Partition) int { return a.ID - b.ID })
	if len(parts) != 2 {
		t.Fatalf("ReadPartitions: %d partitions, expected 2", len(parts))
	}
	for i, p := range parts {
		leader := net.JoinHostPort(p.Leader.Host, strconv.Itoa(p.Leader.Port))
		if p.Topic != topic || p.ID != i || p.Leader.ID != 0 || leader != addr || len(p.Replicas) != 1 || len(p.Isr) != 1 {
			t.Fatalf("ReadPartitions: partition %d: %+v", i, p)
		}
	}

	lc, err := kafka.DialLeader(ctx, "tcp", addr, topic, 1)
	if err != nil {
		t.Fatalf("DialLeader: %v", err)
	}
	t.Cleanup(func() { lc.Close() })
	lc.SetDeadline(deadline)
	if _, err := lc.WriteMessages(kafkaGoMessages("conn", 0, n)...); err != nil {
		t.Fatalf("Conn.WriteMessages: %v", err)
	}
	first, last, err := lc.ReadOffsets()
	if err != nil || first != 0 || last != n {
		t.Fatalf("ReadOffsets: %d, %d, %v; expected 0, %d", first, last, err, n)
	}
	if _, err := lc.Seek(0, kafka.SeekAbsolute); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	batch := lc.ReadBatch(1, 1<<20)
	for i := 0; i < n; i++ {
		m, err := batch.ReadMessage()
		if err != nil {
			t.Fatalf("ReadBatch message %d: %v", i, err)
		}
		checkKafkaGoMessage(t, m, "conn", i, int64(i))
	}
	if err := batch.Close(); err != nil {
		t.Fatalf("batch close: %v", err)
	}
	if hw := batch.HighWaterMark(); hw != n {
		t.Fatalf("batch high watermark %d, expected %d", hw, n)
	}

	if err := cc.DeleteTopics(topic); err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	// ReadPartitions(topic) would re-create it: kafka-go's Conn sends Metadata v6 with
	// AllowAutoTopicCreation=true. Listing every topic does not.
	all, err := conn.ReadPartitions()
	if err != nil {
		t.Fatalf("ReadPartitions of every topic: %v", err)
	}
	for _, p := range all {
		if p.Topic == topic {
			t.Fatalf("%s is still listed after DeleteTopics", topic)
		}
	}
}
