package integration

// A follower's files damaged while it is stopped (reliability.md T8): its indexes,
// which held entries, deleted. After the restart it catches up, and once it leads,
// reads from the middle of its log (an index lookup) find their records.

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestFollowerWithDeletedIndexesServesAfterTheRestart(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	const topic = "damaged-indexes"
	createWithAssignment(t, c, topic, [][]int32{{0, 1, 2}}) // node 1 leads once node 0 stops
	waitFullISR(t, c, topic)
	cl := c.Client(t, kgo.DefaultProduceTopic(topic))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			value := make([]byte, 1024) // random, so that kgo's compression keeps its size
			rand.Read(value)
			value[0] = byte(i)
			if err := cl.ProduceSync(testContext(t), &kgo.Record{Value: value}).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	produce(0, 40) // about 40 KiB: an index entry every 4 KiB (index.interval.bytes)
	waitFullISR(t, c, topic)

	c.Stop(1)
	dir := filepath.Join(c.nodes[1].dir, "logs", topic+"-0")
	for _, name := range []string{"00000000000000000000.index", "00000000000000000000.timeindex"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Fatalf("node-1's %s before the damage: %v, want entries to lose", name, err)
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	c.Restart(1)
	produce(40, 50)
	waitFullISR(t, c, topic)
	c.Stop(0)
	testwait.For(t, 30*time.Second, func() error {
		if p := c.WaitConverged().Topics[topic].Partitions[0]; p.Leader != 1 {
			return fmt.Errorf("partition 0 led by node-%d, want node-1", p.Leader)
		}
		return nil
	})
	reader := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(25)}}))
	ctx := testContext(t)
	for n := 0; n < 25; {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 25 records from offset 25: %v", n, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if n == 0 && r.Offset != 25 {
				t.Errorf("first record at offset %d, want 25", r.Offset)
			}
			if r.Value[0] != byte(r.Offset) {
				t.Errorf("offset %d holds record %d", r.Offset, r.Value[0])
			}
			n++
		})
	}
}
