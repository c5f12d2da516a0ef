package integration

// A follower's files damaged while it is stopped (reliability.md T8). Its indexes, which
// held entries, deleted: the first append after the restart finds them missing, the
// replica goes offline and is opened again from its files, which rebuilds them; it
// catches up, and once it leads, reads from the middle of its log (an index lookup)
// find their records. Its log cut short after a
// clean stop: the file's first open finds it does not fit the clean close's description,
// the replica goes offline and is opened again from its files, whose recovery cuts the
// torn batch, and it fetches the rest again from the leader.

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceRandomNumbered writes records from to to-1 to cl's default topic, each 1 KiB of
// random bytes (kgo's compression keeps its size) whose first byte is its number.
func produceRandomNumbered(t *testing.T, cl *kgo.Client, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		value := make([]byte, 1024)
		rand.Read(value)
		value[0] = byte(i)
		if err := cl.ProduceSync(testContext(t), &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
}

// readRandomNumbered reads n records of partition 0 of topic from offset from, and checks
// each holds its offset's number (produceRandomNumbered).
func readRandomNumbered(t *testing.T, c *Cluster, topic string, from int64, n int) {
	t.Helper()
	reader := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}))
	ctx := testContext(t)
	for got := 0; got < n; {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from offset %d: %v", got, n, from, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if got == 0 && r.Offset != from {
				t.Errorf("first record at offset %d, want %d", r.Offset, from)
			}
			if r.Value[0] != byte(r.Offset) {
				t.Errorf("offset %d holds record %d", r.Offset, r.Value[0])
			}
			got++
		})
	}
}

// startDamageCluster starts three nodes with topic's one partition on nodes 0, 1 and 2
// (node 1 leads once node 0 stops) and writes records 0 to 39 (produceRandomNumbered,
// about 40 KiB) to every replica; it returns a producer to the topic.
func startDamageCluster(t *testing.T, topic string) (*Cluster, *kgo.Client) {
	t.Helper()
	c := StartCluster(t, 3)
	createWithAssignment(t, c, topic, [][]int32{{0, 1, 2}})
	waitFullISR(t, c, topic)
	cl := c.Client(t, kgo.DefaultProduceTopic(topic))
	produceRandomNumbered(t, cl, 0, 40)
	waitFullISR(t, c, topic)
	return c, cl
}

// readFromNode1 stops node 0, waits for node 1 to lead topic's partition, and reads n
// records from it from offset from (readRandomNumbered).
func readFromNode1(t *testing.T, c *Cluster, topic string, from int64, n int) {
	t.Helper()
	c.Stop(0)
	testwait.For(t, 30*time.Second, func() error {
		if p := c.WaitConverged().Topics[topic].Partitions[0]; p.Leader != 1 {
			return fmt.Errorf("partition 0 led by node-%d, want node-1", p.Leader)
		}
		return nil
	})
	readRandomNumbered(t, c, topic, from, n)
}

func TestFollowerWithDeletedIndexesServesAfterTheRestart(t *testing.T) {
	t.Parallel()
	const topic = "damaged-indexes"
	c, cl := startDamageCluster(t, topic) // about 40 KiB: an index entry every 4 KiB (index.interval.bytes)

	c.Stop(1)
	dir := filepath.Join(c.nodes[1].dir, "logs", topic+"-0")
	indexes := []string{"00000000000000000000.index", "00000000000000000000.timeindex"}
	sizes := map[string]int64{}
	for _, name := range indexes {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Size() == 0 {
			t.Fatalf("node-1's %s before the damage: %v, want entries to lose", name, err)
		}
		sizes[name] = fi.Size()
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	c.Restart(1)
	produceRandomNumbered(t, cl, 40, 50)
	waitFullISR(t, c, topic)
	// The first append found the files missing: the log was reopened from its files,
	// which rebuilt the indexes over the whole segment, not only what came since.
	for _, name := range indexes {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() < sizes[name] {
			t.Fatalf("node-1's %s after the restart: %v, %v; want at least the %d bytes it had", name, fi, err, sizes[name])
		}
	}
	readFromNode1(t, c, topic, 25, 25)
}

// TestFollowerWithLogCutShortRefetchesAfterTheRestart: a follower's log cut into its
// last batch while it is stopped after a clean stop. Its clean start trusts the clean
// close's description, but the start's check of the files finds it shorter, with no
// record written meanwhile: the replica goes offline (one ERROR line), is opened again
// from its files, whose recovery cuts the torn batch (a WARN line), fetches the rest
// again and rejoins the ISR. The replicas then agree, and once it leads, every record
// reads back from it at its offset.
func TestFollowerWithLogCutShortRefetchesAfterTheRestart(t *testing.T) {
	t.Parallel()
	const topic = "damaged-log"
	c, cl := startDamageCluster(t, topic)

	c.Stop(1)
	seg := filepath.Join(c.nodes[1].dir, "logs", topic+"-0", "00000000000000000000.log")
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, fi.Size()-100); err != nil { // into the last batch
		t.Fatal(err)
	}
	c.TakeAlertLines()
	c.Restart(1)
	// Idle, the follower never opens the file: the start's background check finds it.
	var offline, cut bool
	// The check waits for node-1's replicas to be in their ISRs, a minute at most.
	testwait.ForWhat(t, 2*time.Minute, "node-1 to find and cut its damaged log", func() error {
		for _, l := range c.TakeAlertLines() {
			if !strings.Contains(l, "node-1") || !strings.Contains(l, "topic="+topic) {
				continue
			}
			offline = offline || strings.Contains(l, "replica offline") && strings.Contains(l, "changed since the clean shutdown")
			cut = cut || strings.Contains(l, "recovery cut a torn or corrupt log tail")
		}
		if !offline || !cut {
			return fmt.Errorf("logged the damage %v, its recovery cut %v", offline, cut)
		}
		return nil
	})
	produceRandomNumbered(t, cl, 40, 50)
	waitFullISR(t, c, topic)
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	testwait.ForWhat(t, 30*time.Second, "the replicas agree on [0, 50)", func() error {
		code, out, stderr := petrel("verify", "replicas", bs, topic)
		if code != 0 || !strings.Contains(out, "[0, 50)") || !strings.Contains(out, " agree\n") {
			return fmt.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
		}
		return nil
	})

	readFromNode1(t, c, topic, 0, 50)
}
