package integration

// One table: every client produces to its own topic with its default producer
// settings, then every client consumes every topic. Records carry a key, a value and a
// "producer" header; each consumer checks offsets, keys, values and the header.

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// matrixRecord is a record as a consumer saw it.
type matrixRecord struct {
	Offset  int64
	Key     string
	Value   string
	Headers map[string]string
}

// matrixClient is one client's producer and consumer, each with its defaults.
type matrixClient struct {
	name string
	// needs is an external binary the client runs (kcat), or "".
	needs   string
	produce func(t *testing.T, c *Cluster, topic string, n int)
	consume func(t *testing.T, c *Cluster, topic string, n int) []matrixRecord
}

func matrixValue(producer string, i int) string { return recordValue("matrix-"+producer, i) }

var matrixClients = []matrixClient{
	{
		name: "kgo",
		produce: func(t *testing.T, c *Cluster, topic string, n int) {
			cl := c.Client(t, kgo.DefaultProduceTopic(topic))
			var recs []*kgo.Record
			for i := range n {
				recs = append(recs, &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(matrixValue("kgo", i)),
					Headers: []kgo.RecordHeader{{Key: "producer", Value: []byte("kgo")}}})
			}
			if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
				t.Fatalf("kgo produce: %v", err)
			}
		},
		consume: func(t *testing.T, c *Cluster, topic string, n int) []matrixRecord {
			cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			ctx := testContext(t)
			var out []matrixRecord
			for len(out) < n {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("kgo consume after %d records: %v", len(out), err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					h := map[string]string{}
					for _, rh := range r.Headers {
						h[rh.Key] = string(rh.Value)
					}
					out = append(out, matrixRecord{r.Offset, string(r.Key), string(r.Value), h})
				})
			}
			return out
		},
	},
	{
		name: "sarama",
		produce: func(t *testing.T, c *Cluster, topic string, n int) {
			cfg := sarama.NewConfig()
			cfg.Producer.Return.Successes = true
			prod, err := bounded(t, saramaTimeout, "NewSyncProducer", func() (sarama.SyncProducer, error) {
				return sarama.NewSyncProducer(c.Addrs(), cfg)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			var msgs []*sarama.ProducerMessage
			for i := range n {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(recordKey(i)),
					Value: sarama.StringEncoder(matrixValue("sarama", i)), Headers: []sarama.RecordHeader{{Key: []byte("producer"), Value: []byte("sarama")}}})
			}
			if _, err := bounded(t, saramaTimeout, "SendMessages", func() (struct{}, error) { return struct{}{}, prod.SendMessages(msgs) }); err != nil {
				t.Fatalf("sarama produce: %v", err)
			}
		},
		consume: func(t *testing.T, c *Cluster, topic string, n int) []matrixRecord {
			consumer, err := bounded(t, saramaTimeout, "NewConsumer", func() (sarama.Consumer, error) {
				return sarama.NewConsumer(c.Addrs(), sarama.NewConfig())
			})
			if err != nil {
				t.Fatal(err)
			}
			defer consumer.Close()
			pc, err := bounded(t, saramaTimeout, "ConsumePartition", func() (sarama.PartitionConsumer, error) {
				return consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.AsyncClose()
			ctx := testContext(t)
			var out []matrixRecord
			for len(out) < n {
				select {
				case m := <-pc.Messages():
					h := map[string]string{}
					for _, rh := range m.Headers {
						h[string(rh.Key)] = string(rh.Value)
					}
					out = append(out, matrixRecord{m.Offset, string(m.Key), string(m.Value), h})
				case err := <-pc.Errors():
					t.Fatalf("sarama consume after %d records: %v", len(out), err)
				case <-ctx.Done():
					t.Fatalf("sarama consumed %d of %d records: %v", len(out), n, ctx.Err())
				}
			}
			return out
		},
	},
	{
		name: "kafka-go",
		produce: func(t *testing.T, c *Cluster, topic string, n int) {
			// The default Writer: acks=0, so nothing confirms the write; wait for the end
			// offset instead.
			w := &kafka.Writer{Addr: kafka.TCP(c.Addrs()...), Topic: topic}
			defer w.Close()
			var msgs []kafka.Message
			for i := range n {
				msgs = append(msgs, kafka.Message{Key: []byte(recordKey(i)), Value: []byte(matrixValue("kafka-go", i)),
					Headers: []kafka.Header{{Key: "producer", Value: []byte("kafka-go")}}})
			}
			ctx := testContext(t)
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatalf("kafka-go write: %v", err)
			}
			adm := c.Admin(t)
			testwait.For(t, 15*time.Second, func() error {
				end, err := adm.ListEndOffsets(ctx, topic)
				if err != nil {
					return err
				}
				if o, _ := end.Lookup(topic, 0); o.Offset != int64(n) {
					return fmt.Errorf("end offset %d, expected %d", o.Offset, n)
				}
				return nil
			})
		},
		consume: func(t *testing.T, c *Cluster, topic string, n int) []matrixRecord {
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Addrs(), Topic: topic, Partition: 0})
			defer func() {
				c.DropConnections(0) // do not wait out the parked 10 s fetch
				r.Close()
			}()
			ctx := testContext(t)
			var out []matrixRecord
			for len(out) < n {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					t.Fatalf("kafka-go read after %d records: %v", len(out), err)
				}
				h := map[string]string{}
				for _, rh := range m.Headers {
					h[rh.Key] = string(rh.Value)
				}
				out = append(out, matrixRecord{m.Offset, string(m.Key), string(m.Value), h})
			}
			return out
		},
	},
	{
		name:  "kcat",
		needs: "kcat",
		produce: func(t *testing.T, c *Cluster, topic string, n int) {
			var b strings.Builder
			for i := range n {
				b.WriteString(recordKey(i) + ":" + matrixValue("kcat", i) + "\n")
			}
			runKcat(t, b.String(), "-P", "-b", c.Addr(0), "-t", topic, "-K:", "-H", "producer=kcat")
		},
		consume: func(t *testing.T, c *Cluster, topic string, n int) []matrixRecord {
			out := runKcat(t, "", "-C", "-b", c.Addr(0), "-t", topic, "-e", "-o", "beginning", "-J", "-q")
			var recs []matrixRecord
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var m struct {
					Offset  int64    `json:"offset"`
					Key     string   `json:"key"`
					Payload string   `json:"payload"`
					Headers []string `json:"headers"`
				}
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("kcat -J line %q: %v", line, err)
				}
				h := map[string]string{}
				for i := 0; i+1 < len(m.Headers); i += 2 {
					h[m.Headers[i]] = m.Headers[i+1]
				}
				recs = append(recs, matrixRecord{m.Offset, m.Key, m.Payload, h})
			}
			return recs
		},
	},
}

// TestCompatMatrix produces with each client and consumes with each client.
func TestCompatMatrix(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1)
	const n = 30
	topic := func(producer string) string { return "matrix-" + producer }
	usable := func(t *testing.T, mc matrixClient) {
		if mc.needs != "" {
			kcatBinary(t)
		}
	}
	for _, p := range matrixClients {
		c.CreateTopic(t, topic(p.name), 1, nil)
	}
	produced := map[string]bool{}
	for _, p := range matrixClients {
		t.Run("produce/"+p.name, func(t *testing.T) {
			usable(t, p)
			p.produce(t, c, topic(p.name), n)
			produced[p.name] = true
		})
	}
	for _, p := range matrixClients {
		for _, cons := range matrixClients {
			t.Run(p.name+"→"+cons.name, func(t *testing.T) {
				usable(t, cons)
				if !produced[p.name] {
					t.Skipf("%s did not produce", p.name)
				}
				got := cons.consume(t, c, topic(p.name), n)
				if len(got) != n {
					t.Fatalf("%s read %d records from %s's topic, expected %d", cons.name, len(got), p.name, n)
				}
				for i, r := range got {
					want := matrixRecord{int64(i), recordKey(i), matrixValue(p.name, i), map[string]string{"producer": p.name}}
					if r.Offset != want.Offset || r.Key != want.Key || r.Value != want.Value || !maps.Equal(r.Headers, want.Headers) {
						t.Fatalf("record %d: %+v\nexpected %+v", i, r, want)
					}
				}
			})
		}
	}
}
