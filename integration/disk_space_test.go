//go:build linux

package integration

// Disk space (P17): recovery after a crash allocates no index space, and a log directory
// whose file system fills goes offline (Kafka's log directory failure) while the cluster
// keeps serving; once space is freed and the node restarts, every acknowledged record
// is there. The full file system is a small tmpfs the test mounts over a node's log
// directory; the test is skipped where this process may not mount (root or
// CAP_SYS_ADMIN is needed; CI runs as root).

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// allocatedBytes sums st_blocks × 512 over every file under root: the space taken, not
// the apparent size (sparse files count what is written).
func allocatedBytes(t testing.TB, root string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestProcess_CrashRecoveryAllocatesNoIndexSpace: a server process holding 20
// partitions is killed with SIGKILL and started again; recovering every active segment
// must not grow its data directory by more than a few hundred KB (writing zeros over
// the 10 MiB the two indexes of each may grow into cost 20 MiB per partition, and every
// start after a crash on a full disk died of SIGBUS doing it).
func TestProcess_CrashRecoveryAllocatesNoIndexSpace(t *testing.T) {
	t.Parallel()
	bin := procBuildPetrel(t)
	ports, err := procFreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	n := &procNode{id: 0, bin: bin, dir: t.TempDir(),
		kafkaAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]), raftAddr: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	n.voters = "0@" + n.raftAddr
	c := &procCluster{bin: bin, nodes: []*procNode{n}}
	n.start(t)
	ready := func() error {
		if err := n.exited(); err != nil {
			return testwait.Permanent(err)
		}
		m, err := c.brokerMetadata(2 * time.Second)
		if err != nil || len(m.Brokers) != 1 {
			return fmt.Errorf("metadata: %v %v", m.Brokers, err)
		}
		return nil
	}
	testwait.ForWhat(t, procStartTimeout, "the node to serve", ready)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic, partitions, records = "recovered", 20, 400
	ctx := testContext(t)
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	for i := range records {
		r := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(recordValue("r", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	n.signal(t, syscall.SIGKILL)
	n.waitExit(t, 10*time.Second)
	before := allocatedBytes(t, n.dir)
	n.start(t)
	testwait.ForWhat(t, procStartTimeout, "the node to recover and serve", ready)
	after := allocatedBytes(t, n.dir)
	t.Logf("data directory: %d bytes allocated after the kill, %d after recovering %d partitions", before, after, partitions)
	if after-before > 512<<10 {
		t.Fatalf("recovery grew the data directory from %d to %d allocated bytes", before, after)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(n.kafkaAddr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for got := 0; got < records; {
		fs := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("consumed %d of %d records after the restart", got, records)
		}
		got += fs.NumRecords()
	}
}

// mountSmallFS mounts a tmpfs of size bytes over dir (keeping the files directly in it)
// or skips the test where this process may not mount. The mount is detached at cleanup.
func mountSmallFS(t *testing.T, dir string, size int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		if e.IsDir() {
			t.Fatalf("%s holds a directory (%s): mount the file system before any replica exists", dir, e.Name())
		}
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fillFS writes a file in dir until about leave bytes of its file system are free, and
// returns the file's path.
func fillFS(t *testing.T, dir string, leave int64) string {
	t.Helper()
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	free := int64(sfs.Bavail) * sfs.Bsize
	path := filepath.Join(dir, "filler")
	if err := os.WriteFile(path, make([]byte, max(free-leave, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// offlineLogDirs reads kafka_log_logmanager_offlinelogdirectorycount from node i.
func offlineLogDirs(c *Cluster, i int) (string, error) {
	code, body, err := httpGet(c.metricsURL(i) + "/metrics")
	if err != nil || code != 200 {
		return "", fmt.Errorf("/metrics = %d %v", code, err)
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, "kafka_log_logmanager_offlinelogdirectorycount "); ok {
			return v, nil
		}
	}
	return "", errors.New("no kafka_log_logmanager_offlinelogdirectorycount")
}

// TestCluster_FullLogDirGoesOffline: node 0's log directory sits on a 16 MiB file system
// with 2 MiB left, and producers keep writing to six partitions that every node
// replicates (node 0 leads two). Node 0 runs out of space without a SIGBUS: below the
// free-space floor it refuses produce with the retriable NOT_ENOUGH_REPLICAS, and at the
// first failed write its log directory goes offline; its replicas leave every ISR and
// their leadership moves, the producers' records all land (on nodes 1 and 2), and node 0
// keeps answering (KAFKA_STORAGE_ERROR for its replicas). With space freed and node 0
// restarted, it catches up and the topic holds every acknowledged record.
func TestCluster_FullLogDirGoesOffline(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	logs := filepath.Join(c.nodes[0].dir, "logs")
	c.Stop(0)
	mountSmallFS(t, logs, 16<<20)
	c.Restart(0)
	const topic = "full"
	createWithAssignment(t, c, topic, [][]int32{{0, 1, 2}, {0, 2, 1}, {1, 2, 0}, {2, 0, 1}, {1, 0, 2}, {2, 1, 0}})
	filler := fillFS(t, logs, 2<<20)

	ctx := testContext(t)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(40*time.Second),
		kgo.ProducerBatchMaxBytes(256<<10))
	var mu sync.Mutex
	acked := map[string]bool{}
	var failures []error
	produce := func(from, n int) {
		var wg sync.WaitGroup
		for i := from; i < from+n; i++ {
			wg.Add(1)
			v := make([]byte, 8<<10) // incompressible
			rand.Read(v[7:])
			copy(v, fmt.Sprintf("%06d-", i))
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failures = append(failures, err)
					return
				}
				acked[string(r.Value[:6])] = true
			})
		}
		wg.Wait()
	}
	// Until node 0's log directory is offline (each round is 1.6 MiB per replica).
	next := 0
	deadline := time.Now().Add(45 * time.Second)
	for {
		produce(next, 200)
		next += 200
		if v, err := offlineLogDirs(c, 0); err == nil && v == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 0's log directory is not offline after %d records", next)
		}
	}
	testwait.For(t, 30*time.Second, func() error {
		im := c.Image(c.Controller())
		for _, p := range im.Topics[topic].Partitions {
			if p.Leader == 0 || p.Leader < 0 || slices.Contains(p.ISR, 0) {
				return fmt.Errorf("partition %d: leader %d, ISR %v", p.ID, p.Leader, p.ISR)
			}
		}
		return nil
	})
	produce(next, 200) // the cluster keeps serving every partition
	next += 200
	mu.Lock()
	if len(failures) > 0 {
		t.Fatalf("%d of %d records failed, the first: %v", len(failures), next, failures[0])
	}
	mu.Unlock()

	// Node 0 still answers: its replicas are KAFKA_STORAGE_ERROR, its log directory too.
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = recordBatch("to-an-offline-replica")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.RequestTo(ctx, t, 0, req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to node 0: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	dresp, err := c.RequestTo(ctx, t, 0, kmsg.NewPtrDescribeLogDirsRequest())
	if err != nil {
		t.Fatal(err)
	}
	if dirs := dresp.(*kmsg.DescribeLogDirsResponse).Dirs; len(dirs) != 1 || dirs[0].ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("DescribeLogDirs of node 0: %+v, want its one directory KAFKA_STORAGE_ERROR", dirs)
	}

	// Space freed, node 0 restarted: it recovers, catches up and rejoins every ISR.
	c.Stop(0)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c.Restart(0)
	testwait.For(t, 40*time.Second, func() error {
		im := c.Image(c.Controller())
		for _, p := range im.Topics[topic].Partitions {
			if !slices.Contains(p.ISR, 0) {
				return fmt.Errorf("partition %d: ISR %v", p.ID, p.ISR)
			}
			leo, err := replicaLEO(t, c, 0, topic, p.ID)
			if err != nil {
				return err
			}
			if lead, err := replicaLEO(t, c, int(p.Leader), topic, p.ID); err != nil || lead != leo {
				return fmt.Errorf("partition %d: node 0 at %d, leader %d at %d (%v)", p.ID, leo, p.Leader, lead, err)
			}
		}
		return nil
	})
	consumed := map[string]bool{}
	cons := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(consumed) < len(acked) {
		fs := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { consumed[string(r.Value[:6])] = true })
	}
	for k := range acked {
		if !consumed[k] {
			t.Fatalf("acknowledged record %s is missing (%d acknowledged, %d consumed)", k, len(acked), len(consumed))
		}
	}
	t.Logf("%d records acknowledged, all consumed after node 0's restart", len(acked))
}
