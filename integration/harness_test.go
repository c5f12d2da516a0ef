package integration

// The harness: in-process Petrel nodes, one t.TempDir each, with Kafka and Raft
// listeners on 127.0.0.1:0. Every node's Kafka listener sits behind a small proxy that
// is also the node's advertised address, so every client connection (bootstrap and
// the ones metadata points to) passes through it. The proxy forwards bytes unchanged
// and records the (api key, version) of each request, which lets a test report which
// versions a real client chose. It is also the place where a later Partition/Heal will
// cut the Kafka side. Raw-socket tests dial Node.ListenerAddr (the broker itself).
//
// Only one-node clusters are implemented so far; StartCluster(t, n) keeps the shape
// that multi-node scenarios will need.

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/broker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testTimeout bounds each test's context and every wait inside it.
const testTimeout = 60 * time.Second

// TestMain skips the whole package under -short: these tests start real brokers.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Option configures StartCluster.
type Option func(*clusterConfig)

type clusterConfig struct {
	// props are broker properties given to every node.
	props map[string]string
}

// WithProperty sets a broker property (as --set name=value would) on every node.
func WithProperty(name, value string) Option {
	return func(c *clusterConfig) { c.props[name] = value }
}

// Cluster is a set of running in-process nodes. Its methods are called from the test
// goroutine.
type Cluster struct {
	t     testing.TB
	cfg   clusterConfig
	nodes []*Node
}

// Node is one running Petrel node.
type Node struct {
	ID     int32
	Dir    string
	Broker *broker.Broker
	proxy  *listenerProxy
	log    *testLogWriter
}

// Addr is the node's advertised Kafka address (its proxy): what clients dial.
func (n *Node) Addr() string { return n.proxy.addr() }

// ListenerAddr is the broker's own Kafka listener, for raw-socket tests.
func (n *Node) ListenerAddr() string { return n.Broker.Addr().String() }

// DropConnections cuts every client connection to the node, as a network blip would;
// clients reconnect. kafka-go's Reader.Close, for one, otherwise waits out a parked
// long-poll fetch (MaxWait 10 s by default).
func (n *Node) DropConnections() { n.proxy.dropConnections() }

// SawRequest reports whether a client sent this node a request with key at version.
func (n *Node) SawRequest(key, version int16) bool { return n.proxy.sawRequest(key, version) }

// StartCluster starts n nodes and waits until every one is ready. Everything is shut
// down at cleanup. Only n == 1 is implemented for now.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if n != 1 {
		t.Fatalf("StartCluster: %d nodes requested; only one-node clusters are implemented so far", n)
	}
	c := &Cluster{t: t, cfg: clusterConfig{props: map[string]string{}}}
	for _, o := range opts {
		o(&c.cfg)
	}
	for i := range n {
		c.nodes = append(c.nodes, c.startNode(int32(i)))
	}
	t.Cleanup(func() {
		for _, node := range c.nodes {
			t.Logf("node-%d requests seen: %s", node.ID, node.proxy.summary())
		}
	})
	return c
}

// startNode starts node id in a fresh directory behind a fresh proxy.
func (c *Cluster) startNode(id int32) *Node {
	t := c.t
	t.Helper()
	node := &Node{ID: id, Dir: t.TempDir(), log: &testLogWriter{t: t, prefix: fmt.Sprintf("node-%d ", id)}}
	// Registered first, so it runs last: after it, stray log lines are dropped rather
	// than reaching a finished test.
	t.Cleanup(node.log.stop)

	proxy, err := newListenerProxy()
	if err != nil {
		t.Fatal(err)
	}
	node.proxy = proxy
	props := make(map[string]string, len(c.cfg.props))
	for k, v := range c.cfg.props {
		props[k] = v
	}
	b, err := broker.Start(broker.Config{
		NodeID:     id,
		DataDir:    node.Dir,
		Listen:     "127.0.0.1:0",
		Advertised: proxy.addr(),
		RaftListen: "127.0.0.1:0",
		Properties: props,
		Logger:     hclog.New(&hclog.LoggerOptions{Output: node.log, Level: hclog.Info}),
	})
	if err != nil {
		proxy.close()
		t.Fatalf("node-%d: start: %v", id, err)
	}
	node.Broker = b
	proxy.serve(b.Addr().String())
	t.Cleanup(func() {
		// Cut client connections first: a parked long-poll fetch would otherwise keep
		// the graceful shutdown waiting for its max wait.
		proxy.close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("node-%d: shutdown: %v", id, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.WaitReady(ctx); err != nil {
		t.Fatalf("node-%d: %v", id, err)
	}
	return node
}

// Node returns node i.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// Addrs returns every node's advertised address.
func (c *Cluster) Addrs() []string {
	out := make([]string, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n.Addr())
	}
	return out
}

// Client returns a kgo client seeded with every node, closed at cleanup.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client over a fresh kgo client.
func (c *Cluster) Admin(t testing.TB) *kadm.Client { return kadm.NewClient(c.Client(t)) }

// CreateTopic creates a topic with replication factor 1 through kadm, or fails t.
func (c *Cluster) CreateTopic(t testing.TB, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := c.Admin(t).CreateTopic(testContext(t), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// testContext returns a context bounded by testTimeout, cancelled at cleanup.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls f every 20 ms until it returns nil, failing t with f's last error
// once timeout passes.
func waitFor(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("condition not met within %s: %v", timeout, err)
		case <-tick.C:
		}
	}
}

// bounded runs f, failing t if it has not returned within d. It is for blocking client
// calls without a context (sarama); the call is abandoned, and cleanup's shutdown
// unblocks it.
func bounded[T any](t testing.TB, d time.Duration, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-timer.C:
		t.Fatalf("%s did not return within %s", what, d)
		panic("unreachable")
	}
}

// testLogWriter sends a node's log lines to t.Log with a prefix, until stop.
type testLogWriter struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	// stopped is set at the end of cleanup; guarded by mu.
	stopped bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// listenerProxy forwards Kafka connections to a broker unchanged, recording the api
// key and version of every request frame. All methods are safe for concurrent use.
type listenerProxy struct {
	ln net.Listener
	// upstream is the broker's listener; written once by serve before accepting.
	upstream string
	wg       sync.WaitGroup

	mu sync.Mutex
	// closed, conns and seen are guarded by mu.
	closed bool
	conns  map[net.Conn]struct{}
	seen   map[[2]int16]int // {key, version} -> requests
}

func newListenerProxy() (*listenerProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &listenerProxy{ln: ln, conns: map[net.Conn]struct{}{}, seen: map[[2]int16]int{}}, nil
}

func (p *listenerProxy) addr() string { return p.ln.Addr().String() }

// serve starts accepting and forwarding to upstream.
func (p *listenerProxy) serve(upstream string) {
	p.upstream = upstream
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			client, err := p.ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.handle(client)
			}()
		}
	}()
}

// track registers conns so that close can cut them; it reports false once closed.
func (p *listenerProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *listenerProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *listenerProxy) handle(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		client.Close()
		server.Close()
		return
	}
	defer p.untrack(client, server)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(client, server)
		client.Close() // the broker closed: so does the client's side
	}()
	p.forwardRequests(client, server)
	server.Close()
	<-done
}

// forwardRequests copies request frames from client to server, recording each
// header. Anything that does not look like a frame is passed through raw.
func (p *listenerProxy) forwardRequests(client, server net.Conn) {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(client, hdr[:4]); err != nil {
			return
		}
		size := int32(binary.BigEndian.Uint32(hdr[:4]))
		if size < 4 {
			if _, err := server.Write(hdr[:4]); err == nil {
				_, _ = io.Copy(server, client)
			}
			return
		}
		if _, err := io.ReadFull(client, hdr[4:8]); err != nil {
			return
		}
		p.record(int16(binary.BigEndian.Uint16(hdr[4:6])), int16(binary.BigEndian.Uint16(hdr[6:8])))
		if _, err := server.Write(hdr[:8]); err != nil {
			return
		}
		if _, err := io.CopyN(server, client, int64(size)-4); err != nil {
			return
		}
	}
}

func (p *listenerProxy) record(key, version int16) {
	p.mu.Lock()
	p.seen[[2]int16{key, version}]++
	p.mu.Unlock()
}

// sawRequest reports whether a request with key at version passed the proxy.
func (p *listenerProxy) sawRequest(key, version int16) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[[2]int16{key, version}] > 0
}

// summary lists the requests seen, as "Metadata v11 x3, Produce v9 x50".
func (p *listenerProxy) summary() string {
	p.mu.Lock()
	keys := make([][2]int16, 0, len(p.seen))
	for k := range p.seen {
		keys = append(keys, k)
	}
	counts := make(map[[2]int16]int, len(p.seen))
	for k, v := range p.seen {
		counts[k] = v
	}
	p.mu.Unlock()
	slices.SortFunc(keys, func(a, b [2]int16) int {
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		return int(a[1]) - int(b[1])
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := kmsg.NameForKey(k[0])
		if name == "" {
			name = fmt.Sprintf("key%d", k[0])
		}
		parts = append(parts, fmt.Sprintf("%s v%d x%d", name, k[1], counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// dropConnections closes every open connection; new ones are still accepted.
func (p *listenerProxy) dropConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// close stops accepting, cuts every connection and waits for the forwarders.
func (p *listenerProxy) close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		for c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// recordKey and recordValue are the i-th test record's key and value. Values vary in
// length so that batches are not uniform.
func recordKey(i int) string { return fmt.Sprintf("key-%05d", i) }

func recordValue(prefix string, i int) string {
	return fmt.Sprintf("%s-value-%d-%s", prefix, i, strings.Repeat("x", i%37))
}
