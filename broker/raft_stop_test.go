package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/internal/testwait"
)

// testRaftFSM is a raft.FSM that counts applied entries; its snapshot is
// snapshotBytes bytes long.
type testRaftFSM struct {
	applied       atomic.Uint64
	snapshotBytes int
}

func (f *testRaftFSM) Apply(*raft.Log) any { f.applied.Add(1); return nil }

func (f *testRaftFSM) Snapshot() (raft.FSMSnapshot, error) {
	return testRaftSnapshot(f.snapshotBytes), nil
}

func (f *testRaftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	_, err := io.Copy(io.Discard, rc)
	return err
}

type testRaftSnapshot int

func (s testRaftSnapshot) Persist(sink raft.SnapshotSink) error {
	buf := make([]byte, 1<<20)
	for left := int(s); left > 0; left -= len(buf) {
		if _, err := sink.Write(buf[:min(left, len(buf))]); err != nil {
			sink.Cancel()
			return err
		}
	}
	return sink.Close()
}

func (testRaftSnapshot) Release() {}

// flakyLogStore fails StoreLogs every third call while failing is set, so that the
// follower answers AppendEntries with Success false.
type flakyLogStore struct {
	*raft.InmemStore
	failing atomic.Bool
	calls   atomic.Int64
}

func (s *flakyLogStore) StoreLogs(logs []*raft.Log) error {
	if s.failing.Load() && s.calls.Add(1)%3 == 0 {
		return errors.New("injected log store failure")
	}
	return s.InmemStore.StoreLogs(logs)
}

func (s *flakyLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// testRaftPeer is one in-process Raft node built the way startRaft builds one (its
// transport, connection tracking and configuration), over in-memory stores.
type testRaftPeer struct {
	node  *raftNode
	fsm   *testRaftFSM
	logs  *flakyLogStore
	addr  raft.ServerAddress // what the others dial (a proxy's address when given)
	ln    net.Listener
	cfg   *raft.Config
	trans *raft.NetworkTransport
	conns *raftConns
	snaps raft.SnapshotStore
}

// testRaftProps are the peers' properties: a 2 s lease, as the tests are about
// stopping, not about how fast a loaded machine elects.
var testRaftProps = map[string]string{"controller.quorum.fetch.timeout.ms": "2000"}

func newTestRaftPeer(t testing.TB, id int32, snapshotBytes int) *testRaftPeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{NodeID: id, Properties: testRaftProps}
	logger := hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, fmt.Sprintf("raft-%d ", id)), Level: hclog.Warn})
	conns := newRaftConns()
	var d net.Dialer
	trans := newRaftTransport(cfg, conns.listener(ln), conns.dial(d.DialContext), logger)
	rc := raftConfig(cfg, logger)
	rc.TrailingLogs = 16
	return &testRaftPeer{fsm: &testRaftFSM{snapshotBytes: snapshotBytes}, logs: &flakyLogStore{InmemStore: raft.NewInmemStore()},
		addr: trans.LocalAddr(), ln: ln, cfg: rc, trans: trans, conns: conns, snaps: raft.NewInmemSnapshotStore()}
}

// start bootstraps the peer with voters (none: it waits to be added) and starts it.
func (p *testRaftPeer) start(t testing.TB, voters []*testRaftPeer) {
	t.Helper()
	if len(voters) > 0 {
		var servers []raft.Server
		for _, v := range voters {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: v.cfg.LocalID, Address: v.addr})
		}
		if err := raft.BootstrapCluster(p.cfg, p.logs, p.logs, p.snaps, p.trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := raft.NewRaft(p.cfg, p.fsm, p.logs, p.logs, p.snaps, p.trans)
	if err != nil {
		t.Fatal(err)
	}
	p.node = newRaftNode(r, nopCloseLogStore{p.logs}, p.trans, p.conns, p.cfg, p.cfg.Logger)
	t.Cleanup(func() { p.node.close() })
}

// closeWithin closes the peer's Raft node and fails the test unless it returns, with
// no error, within d.
func (p *testRaftPeer) closeWithin(t testing.TB, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- p.node.close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("closing raft node %s: %v", p.cfg.LocalID, err)
		}
		t.Logf("raft node %s closed in %s", p.cfg.LocalID, time.Since(start).Round(time.Millisecond))
	case <-time.After(d):
		t.Fatalf("raft node %s did not close within %s", p.cfg.LocalID, d)
	}
}

func waitRaftLeader(t testing.TB, peers []*testRaftPeer) *testRaftPeer {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range peers {
			if p.node.raft.State() == raft.Leader {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no raft leader within 10s")
	return nil
}

func startTestRaftCluster(t testing.TB, n, snapshotBytes int) []*testRaftPeer {
	t.Helper()
	var peers []*testRaftPeer
	for i := range n {
		peers = append(peers, newTestRaftPeer(t, int32(i+1), snapshotBytes))
	}
	for _, p := range peers {
		p.start(t, peers)
	}
	return peers
}

// applyN applies n entries on the leader, many in flight at once, and waits for them.
func applyN(t testing.TB, leader *testRaftPeer, n int) {
	t.Helper()
	var futures []raft.ApplyFuture
	for i := range n {
		futures = append(futures, leader.node.raft.Apply([]byte{byte(i)}, 5*time.Second))
	}
	for _, f := range futures {
		if err := f.Error(); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}
}

// TestRaftCloseAfterRejectedAppends: a follower that rejects appends (here its log
// store fails now and then; at 30,000 partitions, answers from a newer term) neither
// stalls its replication nor hangs the leader's close. With hashicorp/raft's pipeline
// on, a rejected pipelined AppendEntries could leave the pipeline's sender and decoder
// parked on each other: the follower never received another entry and raft.Shutdown
// waited forever.
func TestRaftCloseAfterRejectedAppends(t *testing.T) {
	peers := startTestRaftCluster(t, 3, 0)
	leader := waitRaftLeader(t, peers)
	var flaky *testRaftPeer
	for _, p := range peers {
		if p != leader {
			flaky = p
			break
		}
	}
	flaky.logs.failing.Store(true)
	for range 20 {
		applyN(t, leader, 200)
	}
	flaky.logs.failing.Store(false)
	applyN(t, leader, 1)
	want := leader.node.raft.LastIndex()
	deadline := time.Now().Add(10 * time.Second)
	for flaky.node.raft.LastIndex() < want {
		if time.Now().After(deadline) {
			t.Errorf("the follower that rejected appends stopped at index %d; the leader is at %d", flaky.node.raft.LastIndex(), want)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	leader.closeWithin(t, 10*time.Second)
}

// stallProxy forwards connections to target and, on each connection, stops reading
// from the dialer once more than limit bytes have come from it (a peer that stalls in
// the middle of a snapshot), until it is closed.
type stallProxy struct {
	ln      net.Listener
	target  string
	limit   int64
	stalled chan struct{}
	once    sync.Once
	stop    chan struct{}
}

func newStallProxy(t testing.TB, target string, limit int64) *stallProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, limit: limit, stalled: make(chan struct{}), stop: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() { close(p.stop); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			wg.Add(3)
			go func() { defer wg.Done(); <-p.stop; in.Close(); out.Close() }()
			go func() { defer wg.Done(); io.Copy(in, out) }()
			go func() { defer wg.Done(); p.forward(out, in) }()
		}
	}()
	return p
}

func (p *stallProxy) forward(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if total += int64(n); total > p.limit {
				p.once.Do(func() { close(p.stalled) })
				<-p.stop
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestRaftCloseWhileSnapshotStalls: a leader streaming a snapshot to a voter whose
// connection stopped moving, and that voter itself, both close in bounded time. The
// transport's deadline for a snapshot is controller.quorum.request.timeout.ms per 256
// KiB (here over four minutes) and a follower reads a snapshot with none, so
// raft.Shutdown alone waited for minutes, or forever.
func TestRaftCloseWhileSnapshotStalls(t *testing.T) {
	const snapshotBytes = 64 << 20
	peers := startTestRaftCluster(t, 2, snapshotBytes)
	leader := waitRaftLeader(t, peers)
	applyN(t, leader, 64)
	// Every voter snapshots (and trims its log), so that whichever leads when the new
	// voter joins — leadership can move on a loaded machine — must send it a snapshot.
	for _, p := range peers {
		testwait.For(t, 10*time.Second, func() error { return p.node.raft.Snapshot().Error() })
	}

	late := newTestRaftPeer(t, 3, 0)
	proxy := newStallProxy(t, string(late.addr), 1<<20)
	late.addr = raft.ServerAddress(proxy.ln.Addr().String())
	late.start(t, nil)
	leader = waitRaftLeader(t, peers)
	if err := leader.node.raft.AddVoter(late.cfg.LocalID, late.addr, 0, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proxy.stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader sent no snapshot to the new voter within 10s")
	}
	leader.closeWithin(t, 10*time.Second)
	late.closeWithin(t, 10*time.Second)
}

// TestRaftConnsRefuseAfterClose: once a node's Raft connections are closed, new dials
// and accepted connections are refused, so that no goroutine of a stopping node opens
// a connection nothing will close.
func TestRaftConnsRefuseAfterClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := newRaftConns()
	var d net.Dialer
	dial := conns.dial(d.DialContext)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conns.closeAll()
	if _, err := c.Write([]byte{1}); err == nil {
		t.Error("a tracked connection still writes after closeAll")
	}
	if _, err := dial(ctx, "tcp", ln.Addr().String()); !errors.Is(err, errRaftConnsClosed) {
		t.Errorf("dial after closeAll: %v, want %v", err, errRaftConnsClosed)
	}
}

// BenchmarkRaftReplicate: entries committed on a three-voter in-process quorum over
// loopback TCP (in-memory stores), 64 in flight at a time, with replication
// synchronous (MaxRPCsInFlight 1, Petrel's) and pipelined (hashicorp/raft's default 2).
func BenchmarkRaftReplicate(b *testing.B) {
	for _, inFlight := range []int{1, 2} {
		b.Run(fmt.Sprintf("MaxRPCsInFlight=%d", inFlight), func(b *testing.B) {
			defer func(v int) { raftMaxRPCsInFlight = v }(raftMaxRPCsInFlight)
			raftMaxRPCsInFlight = inFlight
			peers := startTestRaftCluster(b, 3, 0)
			leader := waitRaftLeader(b, peers)
			entry := make([]byte, 512)
			b.SetBytes(int64(len(entry)))
			b.ResetTimer()
			futures := make([]raft.ApplyFuture, 0, 64)
			for i := 0; i < b.N; i++ {
				futures = append(futures, leader.node.raft.Apply(entry, 10*time.Second))
				if len(futures) == cap(futures) || i == b.N-1 {
					for _, f := range futures {
						if err := f.Error(); err != nil {
							b.Fatal(err)
						}
					}
					futures = futures[:0]
				}
			}
		})
	}
}

// TestRaftCleanStopHandsOverLeadership: a leader stopped cleanly hands leadership to
// another voter, so the quorum does not wait out an election timeout. The followers' timeouts are raised to a minute once a
// leader is elected, so only a handover elects the next leader within the test.
func TestRaftCleanStopHandsOverLeadership(t *testing.T) {
	peers := startTestRaftCluster(t, 3, 0)
	leader := waitRaftLeader(t, peers)
	applyN(t, leader, 10)
	var rest []*testRaftPeer
	for _, p := range peers {
		if p == leader {
			continue
		}
		rest = append(rest, p)
		if err := p.node.raft.ReloadConfig(raft.ReloadableConfig{TrailingLogs: p.cfg.TrailingLogs,
			SnapshotInterval: p.cfg.SnapshotInterval, SnapshotThreshold: p.cfg.SnapshotThreshold,
			HeartbeatTimeout: time.Minute, ElectionTimeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.node.shutdown(); err != nil {
		t.Fatalf("clean stop of the leader: %v", err)
	}
	next := waitRaftLeader(t, rest)
	applyN(t, next, 1)
}

// nopCloseLogStore is a test peer's in-memory log store as the node's raftStore.
type nopCloseLogStore struct{ raft.LogStore }

func (nopCloseLogStore) Close() error { return nil }
