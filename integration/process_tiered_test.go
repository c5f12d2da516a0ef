package integration

// kill -9 of a real leader process in the middle of a copy to the object store (P23):
// three `petrel server` processes with tiered storage over versitygw, each reaching it
// through its own proxy in this test. The leader's proxy holds the upload of a segment's
// log (the copier's last object, after the indexes) so that the SIGKILL lands while
// the copy is in COPY_SEGMENT_STARTED with part of its objects in the bucket. What is
// checked is what a user sees: the records, `petrel topics describe`'s offsets,
// `petrel log-dirs describe`'s remote size, the files on disk and the bucket.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/petrel-broker/petrel/internal/s3test"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// procTieredTopic is the tiered topic: one partition on the three brokers.
	procTieredTopic = "tk"
	// procTieredSegment is its segment.bytes and procTieredLocal its
	// local.retention.bytes: two segments stay local once copied.
	procTieredSegment = 256 << 10
	procTieredLocal   = 2 * procTieredSegment
	// procTieredValue is the size of a record's value: random bytes, incompressible.
	procTieredValue = 4 << 10
	// procTieredBatch records are produced every procTieredTick (640 KiB/s, a segment
	// rolled about every 0.4 s), at most procTieredMaxRecords in all (a minute's worth).
	procTieredBatch      = 16
	procTieredTick       = 100 * time.Millisecond
	procTieredMaxRecords = procTieredBatch * 600
)

// TestProcessTieredLeaderKill9MidCopy: the leader of a tiered partition is killed with
// SIGKILL while it copies a segment, with a producer running (acks=all, idempotent).
// The producer goes on through the failover; the new leader deletes the dead leader's
// half copy from the bucket and copies on past the highest copied offset; the killed
// process restarts and rejoins the ISR. Every acknowledged record reads back from
// offset 0 byte-identical and in order (franz-go, and kcat when installed), the first
// ones from the object store, the local segments below the copies are gone from disk,
// and the bucket holds exactly the copied segments, as the brokers' remote sizes count
// them.
func TestProcessTieredLeaderKill9MidCopy(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	bin := procBuildPetrel(t)
	var proxies [3]*procS3Proxy
	for i := range proxies {
		proxies[i] = newProcS3Proxy(t, srv)
	}
	begin := time.Now()
	c := procStartClusterEach(t, bin, func(id int32) []string {
		return []string{
			"remote.log.storage.system.enable=true",
			"remote.log.manager.task.interval.ms=100",
			"log.retention.check.interval.ms=100",
			"rsm.config.storage.s3.endpoint.url=" + proxies[id].endpoint,
			"rsm.config.storage.s3.bucket.name=" + srv.Bucket,
			"rsm.config.storage.s3.region=" + srv.Region,
			"rsm.config.storage.s3.path.style.access.enabled=true",
			"rsm.config.storage.aws.access.key.id=" + srv.AccessKey,
			"rsm.config.storage.aws.secret.access.key=" + srv.SecretKey,
			"rsm.config.key.prefix=tiered/",
		}
	})
	t.Logf("cluster of 3 tiered processes up in %s", time.Since(begin).Round(time.Millisecond))
	c.petrel(t, "topics", "create", procTieredTopic, "--partitions", "1", "--replication-factor", "3",
		"--config", "remote.storage.enable=true",
		"--config", "segment.bytes="+strconv.Itoa(procTieredSegment),
		"--config", "local.retention.bytes="+strconv.Itoa(procTieredLocal))
	testwait.ForWhat(t, 15*time.Second, "the tiered topic with a full ISR", c.fullTieredISR)

	p := startProcTieredProducer(t, c)
	t.Cleanup(p.halt)

	// Copies under way: something copied, and the producer goes on.
	var st procTieredState
	testwait.ForWhat(t, 30*time.Second, "the first segments copied", func() error {
		var err error
		if st, err = c.describeTiered(); err != nil {
			return err
		}
		if !st.tiered || st.highestCopied < 0 || st.leader < 0 {
			return fmt.Errorf("partition %+v", st)
		}
		return p.failed()
	})
	victim := st.leader
	t.Logf("copies under way: %+v; leader %d", st, victim)

	// The leader's next copy is held at its log object, its indexes uploaded: the copy
	// is in COPY_SEGMENT_STARTED, as a leader dying mid-copy leaves it.
	proxies[victim].hold(true)
	var held string
	testwait.ForWhat(t, 30*time.Second, fmt.Sprintf("node-%d's upload of a segment's log held", victim), func() error {
		select {
		case held = <-proxies[victim].held:
			return nil
		default:
			if err := p.failed(); err != nil {
				return err
			}
			return errors.New("none yet")
		}
	})
	halfID, halfStart, ok := procParseSegmentKey(held)
	if !ok {
		t.Fatalf("held upload %q is not a segment's log key", held)
	}
	var atKill procTieredState
	testwait.ForWhat(t, 15*time.Second, "the offsets before the kill", func() error {
		var err error
		if atKill, err = c.describeTiered(); err != nil {
			return err
		}
		if !atKill.tiered {
			return fmt.Errorf("partition %+v", atKill)
		}
		if atKill.leader != victim || atKill.highestCopied >= halfStart {
			return testwait.Permanent(fmt.Errorf("partition %+v; want leader %d, highest copied offset below the held copy's start %d",
				atKill, victim, halfStart))
		}
		return nil
	})
	halfKeys := procKeysOf(srv.Keys(t, "tiered/"), halfID)
	if len(halfKeys) == 0 {
		t.Fatalf("no index of the held copy %s in the bucket", halfID)
	}
	acked0, _ := p.counts()
	t.Logf("SIGKILL to leader node-%d mid-copy of the segment at %d (%s; %d of its objects in the bucket); highest copied offset %d, %d records acknowledged",
		victim, halfStart, halfID, len(halfKeys), atKill.highestCopied, acked0)
	node := c.nodes[victim]
	killedAt := time.Now()
	node.signal(t, syscall.SIGKILL)
	node.waitExit(t, 5*time.Second)
	proxies[victim].hold(false)

	// A new leader copies on past the highest copied offset at the kill, having deleted
	// the dead leader's half copy; the producer goes on.
	testwait.ForWhat(t, 30*time.Second, "a new leader copying past the highest copied offset at the kill", func() error {
		st, err := c.describeTiered()
		if err != nil {
			return err
		}
		if st.leader < 0 || st.leader == victim || !st.tiered || st.highestCopied <= atKill.highestCopied {
			return fmt.Errorf("partition %+v", st)
		}
		return p.failed()
	})
	testwait.ForWhat(t, 30*time.Second, "the dead leader's half copy deleted from the bucket", func() error {
		if keys := procKeysOf(srv.Keys(t, "tiered/"), halfID); len(keys) > 0 {
			return fmt.Errorf("left: %v", keys)
		}
		return nil
	})
	t.Logf("copies resumed and the half copy deleted %s after the kill", time.Since(killedAt).Round(time.Millisecond))

	node.start(t)
	testwait.ForWhat(t, 45*time.Second, fmt.Sprintf("node-%d back in the ISR", victim), func() error {
		if err := node.exited(); err != nil {
			return testwait.Permanent(err)
		}
		return c.fullTieredISR()
	})
	acked1, _ := p.counts()
	testwait.ForWhat(t, 30*time.Second, "the producer going on after the restart", func() error {
		if a, _ := p.counts(); a < acked1+10*procTieredBatch {
			return fmt.Errorf("%d acknowledged, %d at the restart", a, acked1)
		}
		return p.failed()
	})
	p.halt()
	acked, failed := p.counts()
	if failed > 0 {
		t.Errorf("the idempotent producer saw %d failed records through the failover, first: %v", failed, p.firstErr())
	}
	t.Logf("%d records acknowledged (%d after the kill), %d failed", acked, acked-acked0, failed)

	// Local segments below the copies are gone, on disk too.
	testwait.ForWhat(t, 30*time.Second, "local segments deleted below the local log start", func() error {
		st, err := c.describeTiered()
		if err != nil {
			return err
		}
		if !st.tiered || st.logStart != 0 || st.localStart <= st.logStart || st.localStart > st.highestCopied+1 {
			return fmt.Errorf("partition %+v; want log start 0 < local log start <= highest copied + 1", st)
		}
		for _, n := range c.nodes {
			if first, err := procFirstLocalSegment(n); err == nil && first > 0 {
				t.Logf("%+v; node-%d's first local segment starts at %d", st, n.id, first)
				return nil
			}
		}
		return errors.New("every broker still has its segment at offset 0 on disk")
	})

	// The bucket holds whole segments only, and exactly the copied ones: their logs'
	// bytes are the remote size every broker reports.
	testwait.ForWhat(t, 30*time.Second, "the bucket's segments matching every broker's remote size", func() error {
		return c.checkBucketAgainstRemoteSize(t, srv)
	})

	// Every acknowledged record, from offset 0: the first from the object store.
	recs := c.readTieredFromStart(t)
	p.check(t, "franz-go", recs)
	if _, err := exec.LookPath("kcat"); err == nil || os.Getenv("CI") != "" {
		p.check(t, "kcat", procKcatRecords(t, c))
	} else {
		t.Log("kcat not installed: read back with franz-go only")
	}
	t.Logf("read back %d records from offset 0; the test took %s", len(recs), time.Since(begin).Round(time.Millisecond))
}

// procS3Proxy passes one broker's requests to the S3 server; holding, it holds every
// upload of a segment's log until its client goes away, never passing it on.
type procS3Proxy struct {
	endpoint string
	bucket   string
	proxy    *httputil.ReverseProxy
	held     chan string // the keys of held uploads
	ending   chan struct{}

	mu      sync.Mutex
	holding bool // guarded by mu
}

func newProcS3Proxy(t *testing.T, srv *s3test.Server) *procS3Proxy {
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &procS3Proxy{bucket: srv.Bucket, proxy: httputil.NewSingleHostReverseProxy(target),
		held: make(chan string, 16), ending: make(chan struct{})}
	hs := httptest.NewServer(http.HandlerFunc(p.handle))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(p.ending) }) // runs first: held requests return
	p.endpoint = hs.URL
	return p
}

func (p *procS3Proxy) hold(on bool) {
	p.mu.Lock()
	p.holding = on
	p.mu.Unlock()
}

func (p *procS3Proxy) handle(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	holding := p.holding
	p.mu.Unlock()
	if holding && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".log") {
		select {
		case p.held <- strings.TrimPrefix(r.URL.Path, "/"+p.bucket+"/"):
		default:
		}
		select {
		case <-r.Context().Done():
		case <-p.ending:
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	p.proxy.ServeHTTP(w, r)
}

// procSegmentKey is an object key of the tiered topic's partition 0:
// <prefix><topic>-<topicId>/0/<20-digit start offset>-<segmentId>.<suffix>.
var procSegmentKey = regexp.MustCompile(`^tiered/` + procTieredTopic + `-[A-Za-z0-9_-]{22}/0/(\d{20})-([A-Za-z0-9_-]{22})\.([a-z-]+)$`)

// procParseSegmentKey returns the segment id and start offset of a log object's key.
func procParseSegmentKey(key string) (id string, start int64, ok bool) {
	m := procSegmentKey.FindStringSubmatch(key)
	if m == nil || m[3] != "log" {
		return "", 0, false
	}
	start, err := strconv.ParseInt(m[1], 10, 64)
	return m[2], start, err == nil
}

// procKeysOf returns the keys of segment id's objects.
func procKeysOf(keys []string, id string) []string {
	var out []string
	for _, k := range keys {
		if m := procSegmentKey.FindStringSubmatch(k); m != nil && m[2] == id {
			out = append(out, k)
		}
	}
	return out
}

// checkBucketAgainstRemoteSize checks that every segment in the bucket has its five
// objects (no transactions: no .txnindex), that nothing else is there, and that the
// sizes of the segments' logs add up to the remote size each broker reports.
func (c *procCluster) checkBucketAgainstRemoteSize(t *testing.T, srv *s3test.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	objects := map[string]map[string]int64{} // segment id -> suffix -> size
	pages := s3.NewListObjectsV2Paginator(srv.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket), Prefix: aws.String("tiered/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			m := procSegmentKey.FindStringSubmatch(aws.ToString(o.Key))
			if m == nil {
				return testwait.Permanent(fmt.Errorf("object %s is no segment's of %s-0", aws.ToString(o.Key), procTieredTopic))
			}
			if objects[m[2]] == nil {
				objects[m[2]] = map[string]int64{}
			}
			objects[m[2]][m[3]] = aws.ToInt64(o.Size)
		}
	}
	var logBytes int64
	for id, suffixes := range objects {
		got := slices.Sorted(func(yield func(string) bool) {
			for s := range suffixes {
				if !yield(s) {
					return
				}
			}
		})
		if want := []string{"index", "leader-epoch-checkpoint", "log", "snapshot", "timeindex"}; !slices.Equal(got, want) {
			return fmt.Errorf("segment %s: objects %v; want %v", id, got, want)
		}
		logBytes += suffixes["log"]
	}
	sizes, err := c.remoteSizes()
	if err != nil {
		return err
	}
	for id := int32(0); id < 3; id++ {
		size, ok := sizes[id]
		if !ok {
			return fmt.Errorf("no remote size from broker %d: %v", id, sizes)
		}
		if size != logBytes {
			return fmt.Errorf("broker %d reports a remote size of %d bytes; the %d segments' logs in the bucket are %d bytes",
				id, size, len(objects), logBytes)
		}
	}
	t.Logf("bucket: %d whole segments, %d bytes of logs, the remote size on every broker", len(objects), logBytes)
	return nil
}

// remoteSizes runs `petrel log-dirs describe` for the tiered topic and returns each
// broker's remoteSize of its partition 0.
func (c *procCluster) remoteSizes() (map[int32]int64, error) {
	out, err := c.runPetrel("log-dirs", "describe", "--topic-list", procTieredTopic)
	if err != nil {
		return nil, err
	}
	i := strings.Index(out, "{")
	if i < 0 {
		return nil, fmt.Errorf("log-dirs describe printed no JSON: %q", out)
	}
	var doc struct {
		Brokers []struct {
			Broker  int32 `json:"broker"`
			LogDirs []struct {
				Partitions []struct {
					Partition  string `json:"partition"`
					RemoteSize *int64 `json:"remoteSize"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	if err := json.Unmarshal([]byte(out[i:]), &doc); err != nil {
		return nil, fmt.Errorf("log-dirs describe: %v: %q", err, out)
	}
	sizes := map[int32]int64{}
	for _, b := range doc.Brokers {
		for _, d := range b.LogDirs {
			for _, p := range d.Partitions {
				if p.Partition == procTieredTopic+"-0" && p.RemoteSize != nil {
					sizes[b.Broker] = *p.RemoteSize
				}
			}
		}
	}
	return sizes, nil
}

// procFirstLocalSegment returns the base offset of n's oldest local segment of the
// tiered partition, from the file names in its data directory.
func procFirstLocalSegment(n *procNode) (int64, error) {
	logs, err := filepath.Glob(filepath.Join(n.dir, "logs", procTieredTopic+"-0", "*.log"))
	if err != nil {
		return 0, err
	}
	first := int64(-1)
	for _, f := range logs {
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(f), ".log"), 10, 64)
		if err == nil && (first < 0 || base < first) {
			first = base
		}
	}
	if first < 0 {
		return 0, fmt.Errorf("node-%d: no segment in %s", n.id, filepath.Join(n.dir, "logs"))
	}
	return first, nil
}

// procTieredState is the tiered partition's line of `petrel topics describe`.
type procTieredState struct {
	leader int32 // -1: none
	isr    []int32
	// tiered is whether the line has the tiered offsets (the leader answered them).
	tiered                              bool
	logStart, localStart, highestCopied int64
}

var procTieredLine = regexp.MustCompile(`(?m)^\tTopic: ` + procTieredTopic + `\tPartition: 0\tLeader: (\d+|none)\tReplicas: [\d,]+\tIsr: ([\d,]*)\t.*?(?:\tLogStartOffset: (-?\d+)\tLocalLogStartOffset: (-?\d+)\tHighestCopiedOffset: (-?\d+))?$`)

// describeTiered runs `petrel topics describe` on the tiered topic.
func (c *procCluster) describeTiered() (procTieredState, error) {
	out, err := c.runPetrel("topics", "describe", procTieredTopic)
	if err != nil {
		return procTieredState{}, err
	}
	m := procTieredLine.FindStringSubmatch(out)
	if m == nil {
		return procTieredState{}, fmt.Errorf("no partition line in %q", out)
	}
	st := procTieredState{leader: -1, isr: procParseIDs(m[2])}
	if m[1] != "none" {
		l, _ := strconv.ParseInt(m[1], 10, 32)
		st.leader = int32(l)
	}
	if m[3] != "" {
		st.tiered = true
		st.logStart, _ = strconv.ParseInt(m[3], 10, 64)
		st.localStart, _ = strconv.ParseInt(m[4], 10, 64)
		st.highestCopied, _ = strconv.ParseInt(m[5], 10, 64)
	}
	return st, nil
}

// fullTieredISR returns nil once the tiered partition has a leader and the three
// brokers in its ISR.
func (c *procCluster) fullTieredISR() error {
	st, err := c.describeTiered()
	if err != nil {
		return err
	}
	if st.leader < 0 || len(st.isr) != 3 {
		return fmt.Errorf("partition %+v", st)
	}
	return nil
}

// procTieredProducer produces random records to the tiered topic, acks=all and
// idempotent (franz-go's defaults) without compression, procTieredBatch every
// procTieredTick, and remembers each acknowledged record's offset.
type procTieredProducer struct {
	values [][]byte // by sequence number, the record's key; written before the record is produced
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	mu     sync.Mutex
	acked  map[int64]int // offset -> sequence number; guarded by mu
	errs   []error       // guarded by mu
	valMu  sync.Mutex    // guards values
	random *rand.ChaCha8
}

func startProcTieredProducer(t *testing.T, c *procCluster) *procTieredProducer {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DefaultProduceTopic(procTieredTopic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(4*procTieredBatch), kgo.DialTimeout(time.Second),
		// A batch of every buffered record would outgrow segment.bytes (RECORD_LIST_TOO_LARGE)
		// whenever acknowledgements lag, as in a failover.
		kgo.ProducerBatchMaxBytes(procTieredSegment/2))
	if err != nil {
		t.Fatal(err)
	}
	p := &procTieredProducer{stop: make(chan struct{}), done: make(chan struct{}), acked: map[int64]int{},
		random: rand.NewChaCha8([32]byte{byte(time.Now().UnixNano())})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(p.done)
		defer cl.Close()
		defer cancel()
		tick := time.NewTicker(procTieredTick)
		defer tick.Stop()
		for seq := 0; seq < procTieredMaxRecords; {
			select {
			case <-p.stop:
				p.flush(cl)
				return
			case <-tick.C:
			}
			for end := seq + procTieredBatch; seq < end; seq++ {
				v := make([]byte, procTieredValue)
				_, _ = p.random.Read(v)
				p.valMu.Lock()
				p.values = append(p.values, v)
				p.valMu.Unlock()
				seq := seq
				cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(seq)), Value: v}, func(r *kgo.Record, err error) {
					p.mu.Lock()
					defer p.mu.Unlock()
					if err != nil {
						p.errs = append(p.errs, fmt.Errorf("record %d: %w", seq, err))
						return
					}
					p.acked[r.Offset] = seq
				})
			}
		}
		p.flush(cl)
	}()
	return p
}

// flush waits for the records in flight, for 30 s at most.
func (p *procTieredProducer) flush(cl *kgo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		p.mu.Lock()
		p.errs = append(p.errs, fmt.Errorf("flush: %w", err))
		p.mu.Unlock()
	}
}

// halt stops the producer once its records in flight are answered. Idempotent.
func (p *procTieredProducer) halt() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

// failed returns a permanent error once the producer has stopped or failed a record.
func (p *procTieredProducer) failed() error {
	if err := p.firstErr(); err != nil {
		return testwait.Permanent(fmt.Errorf("the producer failed: %w", err))
	}
	select {
	case <-p.done:
		return testwait.Permanent(fmt.Errorf("the producer stopped after %d records", procTieredMaxRecords))
	default:
		return nil
	}
}

func (p *procTieredProducer) firstErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) == 0 {
		return nil
	}
	return p.errs[0]
}

func (p *procTieredProducer) counts() (acked, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked), len(p.errs)
}

// procRecord is a record as read back.
type procRecord struct {
	offset int64
	key    string
	value  []byte
}

// check compares the records read back from offset 0 by client with what was
// produced: each one produced, in the order produced, none twice, byte-identical, and
// every acknowledged record at its acknowledged offset.
func (p *procTieredProducer) check(t *testing.T, client string, recs []procRecord) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.valMu.Lock()
	defer p.valMu.Unlock()
	at := map[int64]int{}
	last := -1
	for i, r := range recs {
		if r.offset != int64(i) {
			t.Fatalf("%s: record %d has offset %d: the log must be contiguous from 0", client, i, r.offset)
		}
		seq, err := strconv.Atoi(r.key)
		if err != nil || seq < 0 || seq >= len(p.values) {
			t.Fatalf("%s: offset %d: key %q was never produced", client, r.offset, r.key)
		}
		if seq <= last {
			t.Fatalf("%s: offset %d: record %d after record %d: out of order or duplicated", client, r.offset, seq, last)
		}
		if !bytes.Equal(r.value, p.values[seq]) {
			t.Fatalf("%s: offset %d: record %d's %d-byte value differs from the %d bytes produced", client, r.offset, seq, len(r.value), len(p.values[seq]))
		}
		last = seq
		at[r.offset] = seq
	}
	for off, seq := range p.acked {
		if got, ok := at[off]; !ok || got != seq {
			t.Fatalf("%s: acknowledged record %d at offset %d not read back there (read %d, present %v)", client, seq, off, got, ok)
		}
	}
	t.Logf("%s: %d records from offset 0 byte-identical and in order, every one of the %d acknowledged", client, len(recs), len(p.acked))
}

// procTieredEnd returns the tiered partition's high watermark.
func (c *procCluster) procTieredEnd(t *testing.T) int64 {
	var end int64
	testwait.ForWhat(t, 15*time.Second, "the partition's end offset", func() error {
		cl, err := c.procClient()
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, procTieredTopic)
		if err != nil {
			return err
		}
		o, ok := offs.Lookup(procTieredTopic, 0)
		if !ok || o.Err != nil {
			return fmt.Errorf("end offset: %v", o.Err)
		}
		end = o.Offset
		return nil
	})
	return end
}

// readTieredFromStart reads the tiered partition from offset 0 to its end with
// franz-go.
func (c *procCluster) readTieredFromStart(t *testing.T) []procRecord {
	end := c.procTieredEnd(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DialTimeout(time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{procTieredTopic: {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []procRecord
	var lastErr error
	testwait.ForWhat(t, 60*time.Second, fmt.Sprintf("records 0 to %d read back", end-1), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				lastErr = e.Err
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, procRecord{offset: r.Offset, key: string(r.Key), value: r.Value})
		})
		if n := int64(len(recs)); n < end {
			return fmt.Errorf("%d of %d records (last fetch error: %v)", n, end, lastErr)
		}
		return nil
	})
	return recs
}

// procKcatRecords reads the tiered partition from offset 0 to its end with kcat; each
// record is printed as "offset key size\n" and the value's bytes.
func procKcatRecords(t *testing.T, c *procCluster) []procRecord {
	out := runKcat(t, "", "-C", "-b", strings.Join(c.addrs(), ","), "-t", procTieredTopic, "-p", "0", "-o", "0", "-e", "-q",
		"-f", "%o %k %S\n%s")
	rd := bufio.NewReader(strings.NewReader(out))
	var recs []procRecord
	for {
		line, err := rd.ReadString('\n')
		if err == io.EOF && line == "" {
			return recs
		}
		var r procRecord
		var size int
		if _, err := fmt.Sscanf(line, "%d %s %d\n", &r.offset, &r.key, &size); err != nil {
			t.Fatalf("kcat: record header %q after %d records: %v", line, len(recs), err)
		}
		r.value = make([]byte, size)
		if _, err := io.ReadFull(rd, r.value); err != nil {
			t.Fatalf("kcat: offset %d: value cut short: %v", r.offset, err)
		}
		recs = append(recs, r)
	}
}
