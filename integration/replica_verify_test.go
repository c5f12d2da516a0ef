package integration

// Replica verification (docs/verify.md): a byte flipped on a follower's disk below the
// high watermark is found and named by the follower's verifier (metric, ERROR line,
// /readyz detail) and by `petrel verify replicas` (table, exit status 1); a healthy
// cluster under produce load, with a compacted topic, a topic after DeleteRecords and a
// broker restart moving leaderships, reports nothing.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// verifyInterval is the verification interval the tests run with.
const verifyInterval = "200"

// produceBatches produces n records to topic, one batch each, acks=all.
func produceBatches(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		r := &kgo.Record{Topic: topic, Key: []byte(recordKey(i % 10)), Value: []byte(recordValue("verify", i))}
		if err := cl.ProduceSync(testContext(t), r).FirstErr(); err != nil {
			t.Fatalf("produce %s record %d: %v", topic, i, err)
		}
	}
}

// partitionLeader is topic-partition 0's leader as the cluster's metadata has it.
func partitionLeader(t *testing.T, c *Cluster, topic string) int32 {
	t.Helper()
	var leader int32 = -1
	testwait.ForWhat(t, testTimeout, topic+" has a leader with a full ISR", func() error {
		td, err := c.Admin(t).ListTopics(testContext(t), topic)
		if err != nil {
			return err
		}
		p, ok := td[topic].Partitions[0]
		if !ok || p.Leader < 0 || len(p.ISR) != 3 {
			return fmt.Errorf("partition 0: %+v", p)
		}
		leader = p.Leader
		return nil
	})
	return leader
}

func TestReplicaVerification_FindsAFlippedByte(t *testing.T) {
	c := StartCluster(t, 3, WithProperty("petrel.replica.verification.interval.ms", verifyInterval))
	const topic = "verify-flip"
	c.CreateTopicRF(t, topic, 1, 3, nil)
	leader := partitionLeader(t, c, topic)
	cl := c.Client(t)
	produceBatches(t, cl, topic, 0, 40)
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	// Every replica has the 40 records below its high watermark, and agrees.
	testwait.ForWhat(t, testTimeout, "verify replicas agrees on [0, 40)", func() error {
		code, out, stderr := petrel("verify", "replicas", bs, topic)
		if code != 0 || !strings.Contains(out, "[0, 40)") || !strings.Contains(out, " agree\n") {
			return fmt.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
		}
		return nil
	})
	follower := (int(leader) + 1) % 3
	if n := metricSum(c.scrapeNode(t, follower), "petrel_replica_divergence_total", map[string]string{"topic": topic}); n != 0 {
		t.Fatalf("node-%d counted %v divergences before any byte was flipped", follower, n)
	}

	// Flip a byte inside the first batch's records on the follower's disk: its stored
	// CRC is unchanged, only its bytes differ.
	const pos = 61 + 8 // the first record of the batch holding offset 0
	flipByte(t, c, follower, topic, pos, 0x20)

	wantDetail := fmt.Sprintf("replica divergence: topic %s partition 0 offsets 0-0 leader %d follower %d", topic, leader, follower)
	testwait.ForWhat(t, 20*time.Second, "the follower's verifier names the divergence", func() error {
		if n := metricSum(c.scrapeNode(t, follower), "petrel_replica_divergence_total", map[string]string{"topic": topic}); n != 1 {
			return fmt.Errorf("petrel_replica_divergence_total{topic=%q} = %v", topic, n)
		}
		if n := metricSum(c.scrapeNode(t, follower), "petrel_replica_divergent_partitions", nil); n != 1 {
			return fmt.Errorf("petrel_replica_divergent_partitions = %v", n)
		}
		code, body, err := httpGet(c.metricsURL(follower) + "/readyz")
		if err != nil || code != http.StatusOK || !strings.Contains(body, wantDetail) {
			return fmt.Errorf("/readyz: %d %q %v, want 200 with %q", code, body, err, wantDetail)
		}
		return nil
	})
	wantLine := fmt.Sprintf("replica diverges from its leader: topic=%s partition=0 from_offset=0 to_offset=0 leader=%d follower=%d", topic, leader, follower)
	found := false
	for _, l := range c.TakeAlertLines() {
		if strings.Contains(l, "[ERROR]") && strings.Contains(l, wantLine) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no ERROR line %q", wantLine)
	}

	code, out, stderr := petrel("verify", "replicas", bs, topic)
	want := fmt.Sprintf("DIVERGES at offset 0 between brokers %d and %d", leader, follower)
	if code != 1 || !strings.Contains(out, want) || !strings.Contains(stderr, "replicas diverge: 1 partition(s)") {
		t.Fatalf("verify replicas: exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, stderr, want)
	}
}

func TestReplicaVerification_HealthyClusterUnderLoad(t *testing.T) {
	c := StartCluster(t, 3, WithProperty("petrel.replica.verification.interval.ms", verifyInterval),
		WithProperty("log.cleaner.backoff.ms", "100"))
	compact := "compact"
	small := "2048"
	c.CreateTopicRF(t, "verify-plain", 3, 3, map[string]*string{"segment.bytes": &small})
	c.CreateTopicRF(t, "verify-compact", 1, 3, map[string]*string{"cleanup.policy": &compact, "segment.bytes": &small})
	c.CreateTopicRF(t, "verify-deleted", 1, 3, map[string]*string{"segment.bytes": &small})
	for _, topic := range []string{"verify-plain", "verify-compact", "verify-deleted"} {
		partitionLeader(t, c, topic)
	}
	cl := c.Client(t)
	produceBatches(t, cl, "verify-deleted", 0, 60)
	adm := kadm.NewClient(cl)
	offsets := kadm.Offsets{}
	offsets.AddOffset("verify-deleted", 0, 25, -1)
	if res, err := adm.DeleteRecords(testContext(t), offsets); err != nil || res.Error() != nil {
		t.Fatalf("delete records: %v %v", err, res.Error())
	}

	ctx, cancel := context.WithCancel(testContext(t))
	var wg sync.WaitGroup
	for _, topic := range []string{"verify-plain", "verify-compact", "verify-deleted"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				r := &kgo.Record{Topic: topic, Key: []byte(recordKey(i % 10)), Value: []byte(recordValue("load", i))}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil && ctx.Err() == nil {
					t.Errorf("produce %s: %v", topic, err)
					return
				}
			}
		}()
	}
	// Several passes run under the load on every follower.
	start := make([]float64, 3)
	for i := range 3 {
		start[i] = metricSum(c.scrapeNode(t, i), "petrel_replica_verification_bytes_total", nil)
	}
	testwait.ForWhat(t, testTimeout, "every node verifies under load", func() error {
		for i := range 3 {
			if n := metricSum(c.scrapeNode(t, i), "petrel_replica_verification_bytes_total", nil); n < start[i]+64<<10 {
				return fmt.Errorf("node-%d verified %v bytes", i, n-start[i])
			}
		}
		return nil
	})
	// A broker restart under the load moves leaderships: comparisons racing the leader
	// changes are dropped, never reported.
	c.Stop(1)
	c.Restart(1)
	testwait.ForWhat(t, testTimeout, "every node verifies after the restart", func() error {
		for i := range 3 {
			if n := metricSum(c.scrapeNode(t, i), "petrel_replica_verification_bytes_total", nil); n < 64<<10 {
				return fmt.Errorf("node-%d verified %v bytes", i, n)
			}
		}
		return nil
	})
	cancel()
	wg.Wait()

	for i := range 3 {
		fams := c.scrapeNode(t, i)
		if n := metricSum(fams, "petrel_replica_divergence_total", map[string]string{"topic": ""}); n != 0 {
			t.Errorf("node-%d: petrel_replica_divergence_total %v on a healthy cluster", i, n)
		}
	}
	for _, l := range c.TakeAlertLines() {
		if strings.Contains(l, "diverge") {
			t.Errorf("alert on a healthy cluster: %s", l)
		}
	}
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	testwait.ForWhat(t, testTimeout, "verify replicas agrees", func() error {
		code, out, stderr := petrel("verify", "replicas", bs)
		switch {
		case code != 0 || strings.Contains(out, "DIVERGES"):
			return testwait.Permanent(fmt.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr))
		case strings.Count(out, " agree\n") != 4 || !strings.Contains(out, "skipped: compacted topic"):
			return fmt.Errorf("want 4 partitions agreeing and the compacted one skipped:\n%s%s", out, stderr)
		case !regexp.MustCompile(`verify-deleted +0 +\S+ +\[25, `).MatchString(out):
			return fmt.Errorf("want verify-deleted checked from 25:\n%s", out)
		}
		return nil
	})
}

// flipByte flips mask into the byte at pos of node's first segment of topic-0.
func flipByte(t *testing.T, c *Cluster, node int, topic string, pos int64, mask byte) {
	t.Helper()
	seg := filepath.Join(c.nodes[node].dir, "logs", topic+"-0", "00000000000000000000.log")
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= mask
	if _, err := f.WriteAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
}

// TestReplicaVerification_FindsADamagedHeader: a byte flipped in a batch header (the
// magic) makes the batch unreadable as one. On a follower its verifier reports the
// partition; on the leader the ReplicaDigests answer is CORRUPT_MESSAGE with one ERROR
// line naming the partition however often it is asked, and the followers report it.
// Neither is left "agreed".
func TestReplicaVerification_FindsADamagedHeader(t *testing.T) {
	c := StartCluster(t, 3, WithProperty("petrel.replica.verification.interval.ms", verifyInterval))
	cl := c.Client(t)
	leaders := map[string]int32{}
	for _, topic := range []string{"verify-hdr-follower", "verify-hdr-leader"} {
		c.CreateTopicRF(t, topic, 1, 3, nil)
		leaders[topic] = partitionLeader(t, c, topic)
		produceBatches(t, cl, topic, 0, 20)
	}
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	testwait.ForWhat(t, testTimeout, "verify replicas agrees on both topics", func() error {
		code, out, stderr := petrel("verify", "replicas", bs)
		if code != 0 || strings.Count(out, "[0, 20)") != 2 {
			return fmt.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
		}
		return nil
	})
	const magic = 16 // the first batch's magic byte
	follower := (int(leaders["verify-hdr-follower"]) + 1) % 3
	flipByte(t, c, follower, "verify-hdr-follower", magic, 0x07)
	flipByte(t, c, int(leaders["verify-hdr-leader"]), "verify-hdr-leader", magic, 0x07)

	wantFollower := fmt.Sprintf("replica divergence: topic verify-hdr-follower partition 0 offsets 0-19 leader %d follower %d (unreadable on broker %d",
		leaders["verify-hdr-follower"], follower, follower)
	testwait.ForWhat(t, 20*time.Second, "the damaged follower reports its partition", func() error {
		if n := metricSum(c.scrapeNode(t, follower), "petrel_replica_divergence_total", map[string]string{"topic": "verify-hdr-follower"}); n != 1 {
			return fmt.Errorf("petrel_replica_divergence_total = %v", n)
		}
		code, body, err := httpGet(c.metricsURL(follower) + "/readyz")
		if err != nil || code != http.StatusOK || !strings.Contains(body, wantFollower) {
			return fmt.Errorf("/readyz: %d %q %v, want 200 with %q", code, body, err, wantFollower)
		}
		return nil
	})
	lead := leaders["verify-hdr-leader"]
	testwait.ForWhat(t, 20*time.Second, "the followers of the damaged leader report its partition", func() error {
		for i := range 3 {
			if i == int(lead) {
				continue
			}
			if n := metricSum(c.scrapeNode(t, i), "petrel_replica_divergence_total", map[string]string{"topic": "verify-hdr-leader"}); n != 1 {
				return fmt.Errorf("node-%d: petrel_replica_divergence_total = %v", i, n)
			}
		}
		return nil
	})
	answered, reported := 0, false
	countLines := func() {
		for _, l := range c.TakeAlertLines() {
			if !strings.Contains(l, "[ERROR]") {
				continue
			}
			if strings.Contains(l, "unexpected error") {
				t.Errorf("an unnamed ERROR: %s", l)
			}
			if strings.Contains(l, "replica digests: a committed batch of this replica cannot be read: topic=verify-hdr-leader partition=0") {
				answered++
			}
			if strings.Contains(l, "replica diverges from its leader: topic=verify-hdr-follower partition=0 from_offset=0") {
				reported = true
			}
		}
	}
	countLines()
	if answered == 0 || !reported {
		t.Fatalf("ERROR lines: leader's answer named %v times, follower's divergence named %v", answered, reported)
	}
	code, out, stderr := petrel("verify", "replicas", bs)
	if code != 1 || strings.Count(out, "DIVERGES") != 2 || !strings.Contains(out, fmt.Sprintf("broker %d cannot read", lead)) {
		t.Fatalf("verify replicas: exit %d, stdout %q, stderr %q; want both partitions diverging", code, out, stderr)
	}
	// Both followers' verifiers (every 200 ms) and the command above asked the damaged
	// leader again and again: one ERROR line names it (at most one per 10 minutes).
	countLines()
	if answered != 1 {
		t.Fatalf("the damaged leader named its partition in %d ERROR lines, want 1", answered)
	}
}
