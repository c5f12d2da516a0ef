package broker

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kgo"
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
			var buf bytes.Buffer
			lp.WithLog(func(l *segment.Log) error {
				for off := l.LogStartOffset(); off < st.HighWatermark; {
					r, err := l.Read(off, 1<<20, st.HighWatermark)
					if err != nil || r.Size == 0 {
						return err
					}
					b, _ := r.Bytes()
					buf.Write(b)
					off = r.LastOffset + 1
				}
				return nil
			})
			logs = append(logs, buf.Bytes())
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
