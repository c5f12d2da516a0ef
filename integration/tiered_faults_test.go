package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/s3test"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kadm"
)

// faultMode is what a faultProxy does with a request.
type faultMode int

const (
	faultPass faultMode = iota // passed on to the store
	faultDown                  // the proxy's port refuses connections
	fault500                   // answered 500 InternalError without reaching the store
	faultSlow                  // held for the proxy's delay, then passed on
	faultHang                  // held until the client goes or the test ends, never passed on
)

// faultProxy stands between the brokers and the real S3 server (versitygw) and injects
// the store's failures: refusing connections, answering 500s, answering slowly, hanging.
type faultProxy struct {
	t      *testing.T
	addr   string
	proxy  *httputil.ReverseProxy
	delay  time.Duration
	mu     sync.Mutex
	mode   faultMode
	ending chan struct{} // closed when the test ends: hung requests return
	srv    *http.Server
	served sync.WaitGroup
}

func newFaultProxy(t *testing.T, endpoint string, delay time.Duration) *faultProxy {
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, proxy: httputil.NewSingleHostReverseProxy(target), delay: delay, ending: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { close(p.ending); p.set(faultPass); p.stop() })
	return p
}

func (p *faultProxy) endpoint() string { return "http://" + p.addr }

func (p *faultProxy) serve(ln net.Listener) {
	p.srv = &http.Server{Handler: http.HandlerFunc(p.handle), ReadHeaderTimeout: 10 * time.Second}
	p.served.Add(1)
	srv := p.srv
	go func() { defer p.served.Done(); _ = srv.Serve(ln) }()
}

func (p *faultProxy) stop() {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
		p.served.Wait()
	}
}

// set changes the mode; faultDown closes the listener, leaving it for faultDown
// listens again on the same port.
func (p *faultProxy) set(m faultMode) {
	p.mu.Lock()
	old := p.mode
	p.mode = m
	p.mu.Unlock()
	switch {
	case m == faultDown && old != faultDown:
		p.stop()
	case m != faultDown && old == faultDown:
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			p.t.Fatalf("proxy listening again on %s: %v", p.addr, err)
		}
		p.mu.Lock()
		p.serve(ln)
		p.mu.Unlock()
	}
}

func (p *faultProxy) handle(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	mode := p.mode
	p.mu.Unlock()
	switch mode {
	case fault500:
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected</Message></Error>`)
	case faultSlow:
		timer := time.NewTimer(p.delay)
		defer timer.Stop()
		select {
		case <-timer.C:
			p.proxy.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	case faultHang:
		// A leader killed in-process may still run its copy: its request must never
		// reach the store, even after the mode changes (a dead process sends nothing).
		select {
		case <-p.ending:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// tieredOffsetsOf lists the log start (-2), local log start (-4) and highest copied
// (-5) offsets of tiered-0.
func tieredOffsetsOf(t *testing.T, c *Cluster) (logStart, localStart, copied int64, err error) {
	adm := c.Admin(t)
	var out [3]int64
	for i, ts := range []int64{-2, -4, -5} {
		l, err := adm.ListOffsetsAfterMilli(testContext(t), ts, "tiered")
		if err != nil {
			return 0, 0, 0, err
		}
		o, ok := l.Lookup("tiered", 0)
		if !ok || o.Err != nil {
			return 0, 0, 0, fmt.Errorf("ListOffsets %d: %v", ts, o.Err)
		}
		out[i] = o.Offset
	}
	return out[0], out[1], out[2], nil
}

// localSize is node i's local size of tiered-0 (DescribeLogDirs).
func localSize(t *testing.T, c *Cluster, i int) int64 {
	dirs, err := c.Admin(t).DescribeBrokerLogDirs(testContext(t), int32(i), kadm.TopicsSet{"tiered": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	return dirs.Size()
}

// TestCluster_TieredStoreFaults: with the object store refusing connections for a
// minute, then answering 500s, produce keeps working on local disk and nothing is deleted locally
// before it is copied — the local log grows past local.retention.bytes, the local log
// start stays at 0 — while the copy error metric counts; once the store is back the
// copies catch up and local retention brings the log back near its bound. With slow
// answers, copies go on and produce is not held up by them.
// storeOutage is how long TestCluster_TieredStoreFaults keeps the object store away.
const storeOutage = time.Minute

func TestCluster_TieredStoreFaults(t *testing.T) {
	t.Parallel() // a minute of the outage is waited out beside the other tests
	srv := s3test.Start(t)
	proxy := newFaultProxy(t, srv.Endpoint, 300*time.Millisecond)
	proxy.set(faultDown)
	const localBound = 4096
	c := tieredClusterVia(t, srv, proxy.endpoint(), 1, map[string]string{"local.retention.bytes": fmt.Sprint(localBound)},
		WithProperty("log.retention.check.interval.ms", "100"))
	// A failed copy is abandoned, and the deletion of its objects fails too until the
	// store is back: both count.
	copyErrors := func() float64 {
		fams := c.scrapeNode(t, 0)
		return metricSum(fams, "kafka_server_brokertopicmetrics_remotecopyerrors_total", map[string]string{"topic": ""}) +
			metricSum(fams, "kafka_server_brokertopicmetrics_remotedeleteerrors_total", map[string]string{"topic": ""})
	}
	noLocalDeletion := func(phase string) {
		t.Helper()
		logStart, localStart, copied, err := tieredOffsetsOf(t, c)
		if err != nil {
			t.Fatal(err)
		}
		if logStart != 0 || localStart != 0 || copied != -1 {
			t.Fatalf("%s: log start %d, local log start %d, highest copied %d: want 0, 0, -1", phase, logStart, localStart, copied)
		}
		if size := localSize(t, c, 0); size <= localBound {
			t.Fatalf("%s: local size %d, want past local.retention.bytes %d (nothing copied, nothing deleted)", phase, size, localBound)
		}
	}

	produceTiered(t, c, 0, 100) // acknowledged with the store down
	testwait.ForWhat(t, 30*time.Second, "copy errors counted with the store down", func() error {
		if n := copyErrors(); n < 1 {
			return fmt.Errorf("%v copy errors", n)
		}
		return nil
	})
	noLocalDeletion("store down")
	// The store stays away for a minute (the outage): produce goes on, paced
	// at 10 records every 2 s, and nothing is deleted locally meanwhile.
	produced := 100
	ctx, cancel := context.WithTimeout(context.Background(), storeOutage+testTimeout)
	defer cancel()
	for down := time.Now(); time.Since(down) < storeOutage; produced += 10 {
		produceTiered(t, c, produced, 10)
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			t.Fatal("test deadline during the outage")
		}
	}
	noLocalDeletion("store down for a minute")

	proxy.set(fault500)
	before := copyErrors()
	produceTiered(t, c, produced, 50)
	produced += 50
	testwait.ForWhat(t, 60*time.Second, "copy errors counted on 500s", func() error {
		if n := copyErrors(); n <= before {
			return fmt.Errorf("%v copy errors, %v before the 500s", n, before)
		}
		return nil
	})
	noLocalDeletion("store answering 500s")
	if keys := srv.Keys(t, "tiered/"); len(keys) != 0 {
		t.Fatalf("objects in the store before any copy succeeded: %v", keys)
	}

	proxy.set(faultPass)
	segs := waitCopiedTo(t, c, int64(produced-50)) // the last records are in the active segment
	testwait.ForWhat(t, 30*time.Second, "local retention once copies caught up", func() error {
		logStart, localStart, _, err := tieredOffsetsOf(t, c)
		if err != nil {
			return err
		}
		if logStart != 0 || localStart == 0 {
			return fmt.Errorf("log start %d, local log start %d", logStart, localStart)
		}
		if size := localSize(t, c, 0); size > 3*localBound {
			return fmt.Errorf("local size %d", size)
		}
		return nil
	})

	proxy.set(faultSlow)
	start := time.Now()
	produceTiered(t, c, produced, 100)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("produce took %v with the store slow", d)
	}
	waitCopiedTo(t, c, segs[len(segs)-1].EndOffset+60)
}

// TestCluster_TieredLeaderKilledMidCopy: the leader dies (an abrupt in-process stop)
// while its copy hangs on the store, leaving the segment in COPY_SEGMENT_STARTED; the
// new leader deletes that half-done copy, goes on from the highest copied offset, and
// every broker lists the same remote segments, also after the controller's node stops
// (the remote metadata replayed from the Raft log by the new controller).
func TestCluster_TieredLeaderKilledMidCopy(t *testing.T) {
	srv := s3test.Start(t)
	proxy := newFaultProxy(t, srv.Endpoint, 0)
	c := tieredClusterVia(t, srv, proxy.endpoint(), 3, nil)
	produceTiered(t, c, 0, 60)
	segs := waitCopiedTo(t, c, 20)
	tid := c.Node(0).Image().Topic("tiered").ID

	proxy.set(faultHang)
	produceTiered(t, c, 60, 60)
	var started metadata.RemoteLogSegment
	testwait.ForWhat(t, 30*time.Second, "a copy in COPY_SEGMENT_STARTED", func() error {
		for _, s := range c.Node(c.live()[0]).Image().RemoteLogSegments(tid, 0) {
			if s.State == metadata.CopySegmentStarted {
				started = s
				return nil
			}
		}
		return errors.New("none")
	})
	leader := int(c.Node(0).Image().Topic("tiered").Partitions[0].Leader)
	c.Kill(leader)
	proxy.set(faultPass)

	segs = waitCopiedTo(t, c, segs[len(segs)-1].EndOffset+30)
	prefix := fmt.Sprintf("tiered/tiered-%s/0/", tid)
	testwait.ForWhat(t, 30*time.Second, "the dead leader's half-done copy deleted", func() error {
		copied := 0
		for _, i := range c.live() {
			copied = 0
			for _, s := range c.Node(i).Image().RemoteLogSegments(tid, 0) {
				if s.ID == started.ID || s.State != metadata.CopySegmentFinished {
					return fmt.Errorf("node-%d: segment %s in %s", i, s.ID, s.State)
				}
				copied++
			}
		}
		if n := logObjects(t, srv, prefix); n != copied {
			return fmt.Errorf("%d log objects for %d copied segments (the killed copy: %s at %d)", n, copied, started.ID, started.StartOffset)
		}
		return nil
	})

	c.Restart(leader)
	ctrl := c.Controller()
	c.Stop(ctrl)
	produceTiered(t, c, 120, 60)
	waitCopiedTo(t, c, segs[len(segs)-1].EndOffset+30) // every live node lists the same segments
	c.Restart(ctrl)
	waitCopiedTo(t, c, segs[len(segs)-1].EndOffset+30)
}
