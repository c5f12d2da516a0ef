package integration

// The harness: in-process Petrel nodes, one t.TempDir each, with Kafka and Raft
// listeners bound on 127.0.0.1:0 before any node starts, so that the voter list is
// built from the ports actually bound. Node i has node id i; nodes 0..voters-1 are the
// initial Raft voters and the others join as non-voters through the voters' Kafka
// listeners. Every listener and every outgoing connection goes through the cluster's
// network (network_test.go), which Partition and Heal use to cut a node off. Node logs
// go to t.Log with a "node-N " prefix.
//
// A node keeps its data directory and both addresses for the whole test: Restart
// re-listens on the same ports, since the voters' Raft addresses are fixed in the Raft
// configuration and the Kafka address is in the metadata.
//
// Cluster methods are called from the test goroutine.

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

const (
	// testTimeout bounds each test's context and every wait inside it.
	testTimeout = 60 * time.Second
	// startTimeout bounds a cluster start or a restart until every node is ready.
	startTimeout = 60 * time.Second
	// convergeTimeout bounds WaitConverged and Controller.
	convergeTimeout = 30 * time.Second

	// sessionTimeout and heartbeatInterval are the harness's defaults for
	// broker.session.timeout.ms and broker.heartbeat.interval.ms (Kafka's 9000 and
	// 2000 would make every failover test wait nine seconds).
	sessionTimeout    = 2 * time.Second
	heartbeatInterval = 250 * time.Millisecond
)

// parallelTests is how many parallel tests run at once unless -parallel says otherwise
// (go test's default is GOMAXPROCS): the tests mostly wait on sessions, timers and other
// nodes, so more of them than there are cores keep the cores busy.
const parallelTests = 4

// TestMain skips the whole package under -short: these tests start real brokers.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if n := max(parallelTests, runtime.GOMAXPROCS(0)); !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	code := m.Run()
	procRemoveBuild()
	os.Exit(code)
}

// Option configures StartCluster.
type Option func(*clusterConfig)

type clusterConfig struct {
	// voters is how many nodes (the first ones) are initial Raft voters; -1 is all.
	voters int
	// props are broker properties given to every node.
	props map[string]string
	// nodeProps are broker properties of single nodes, by node index, over props.
	nodeProps map[int]map[string]string
}

// WithProperty sets a broker property (as --set name=value would) on every node.
func WithProperty(name, value string) Option {
	return func(c *clusterConfig) { c.props[name] = value }
}

// WithNodeProperty sets a broker property on node i only (broker.rack, say), over
// WithProperty's.
func WithNodeProperty(i int, name, value string) Option {
	return func(c *clusterConfig) {
		if c.nodeProps == nil {
			c.nodeProps = map[int]map[string]string{}
		}
		if c.nodeProps[i] == nil {
			c.nodeProps[i] = map[string]string{}
		}
		c.nodeProps[i][name] = value
	}
}

// WithVoters makes nodes 0..v-1 the Raft voters; the others join as non-voters.
func WithVoters(v int) Option {
	return func(c *clusterConfig) { c.voters = v }
}

// Cluster is a set of in-process nodes.
type Cluster struct {
	t     testing.TB
	cfg   clusterConfig
	net   *network
	nodes []*clusterNode
	// voters are the initial Raft voters (ids and Raft addresses).
	voters []broker.Voter
	// joinAddrs are the voters' Kafka addresses, where non-voters ask to join.
	joinAddrs []string
}

// clusterNode is one node: fixed identity, directory and addresses, and its current
// (or last) broker process.
type clusterNode struct {
	index     int
	dir       string
	kafkaAddr string
	raftAddr  string
	log       *testLogWriter
	broker    *broker.Broker
	// running is false after Stop or Kill until Restart.
	running bool
}

// StartCluster starts n nodes and waits until every one is registered and unfenced.
// Every node gets the harness's session timeout and heartbeat interval unless an
// option overrides them. Everything is stopped at cleanup: a one-node cluster
// gracefully (the shutdown must succeed), larger ones with Kill (a graceful stop of
// the last voter waits out a controlled shutdown that cannot commit without a quorum).
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t, net: newNetwork(), cfg: clusterConfig{voters: -1, props: map[string]string{
		"broker.session.timeout.ms":    fmt.Sprint(sessionTimeout.Milliseconds()),
		"broker.heartbeat.interval.ms": fmt.Sprint(heartbeatInterval.Milliseconds()),
	}}}
	for _, o := range opts {
		o(&c.cfg)
	}
	if c.cfg.voters < 0 || c.cfg.voters > n {
		c.cfg.voters = n
	}
	if n < 1 || c.cfg.voters == 0 {
		t.Fatalf("StartCluster: %d nodes with %d voters", n, c.cfg.voters)
	}
	// Bind every listener first; the voter list is built from the bound ports.
	var kafkaLns, raftLns []net.Listener
	closeAll := func() {
		for _, ln := range append(kafkaLns, raftLns...) {
			ln.Close()
		}
	}
	for i := range n {
		node := &clusterNode{index: i, dir: t.TempDir(), log: &testLogWriter{t: t, prefix: fmt.Sprintf("node-%d ", i)}}
		// Registered first, so it runs last: after it, stray log lines are dropped
		// rather than reaching a finished test.
		t.Cleanup(node.log.stop)
		kl, err := c.net.listen(i, "127.0.0.1:0", true)
		if err != nil {
			closeAll()
			t.Fatal(err)
		}
		kafkaLns = append(kafkaLns, kl)
		rl, err := c.net.listen(i, "127.0.0.1:0", false)
		if err != nil {
			closeAll()
			t.Fatal(err)
		}
		raftLns = append(raftLns, rl)
		node.kafkaAddr, node.raftAddr = kl.Addr().String(), rl.Addr().String()
		c.nodes = append(c.nodes, node)
		if i < c.cfg.voters {
			c.voters = append(c.voters, broker.Voter{ID: int32(i), Addr: node.raftAddr})
			c.joinAddrs = append(c.joinAddrs, node.kafkaAddr)
		}
	}
	t.Cleanup(c.cleanup)
	for i, node := range c.nodes {
		if err := c.start(node, kafkaLns[i], raftLns[i]); err != nil {
			for j := i; j < n; j++ {
				kafkaLns[j].Close()
				raftLns[j].Close()
			}
			t.Fatalf("node-%d: start: %v", i, err)
		}
	}
	c.waitReady(c.running())
	return c
}

// start starts node's broker on the given listeners.
func (c *Cluster) start(node *clusterNode, kafkaLn, raftLn net.Listener) error {
	props := make(map[string]string, len(c.cfg.props))
	for k, v := range c.cfg.props {
		props[k] = v
	}
	for k, v := range c.cfg.nodeProps[node.index] {
		props[k] = v
	}
	b, err := broker.Start(broker.Config{
		NodeID:        int32(node.index),
		DataDir:       node.dir,
		Listen:        node.kafkaAddr,
		Advertised:    node.kafkaAddr,
		RaftListen:    node.raftAddr,
		Voters:        c.voters,
		JoinAddrs:     c.joinAddrs,
		Properties:    props,
		Logger:        hclog.New(&hclog.LoggerOptions{Output: node.log, Level: hclog.Info}),
		MetricsListen: "127.0.0.1:0",
		KafkaListener: kafkaLn,
		RaftListener:  raftLn,
		Dial:          c.net.dialer(node.index),
	})
	if err != nil {
		return err
	}
	node.broker, node.running = b, true
	return nil
}

// waitReady waits until every listed node is registered, unfenced and in its own
// metadata (broker.WaitReady), and then until every live node's image shows every live
// node unfenced: a node that was partitioned away still holds the stale image in which
// it is unfenced, so its own readiness alone proves nothing after Heal.
func (c *Cluster) waitReady(indices []int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, i := range indices {
		if err := c.nodes[i].broker.WaitReady(ctx); err != nil {
			c.t.Fatalf("node-%d: %v", i, err)
		}
	}
	testwait.For(c.t, startTimeout, func() error {
		live := c.live()
		for _, i := range live {
			im := c.Image(i)
			for _, j := range live {
				if b, ok := im.Brokers[int32(j)]; !ok || b.Fenced {
					return fmt.Errorf("node-%d does not see broker %d unfenced", i, j)
				}
			}
		}
		return nil
	})
}

// cleanup stops every running node and closes what is left of the network.
func (c *Cluster) cleanup() {
	for i := range c.nodes {
		c.t.Logf("node-%d requests seen: %s", i, c.net.requestLog(i).summary())
	}
	for _, i := range c.running() {
		node := c.nodes[i]
		node.running = false
		if len(c.nodes) > 1 {
			node.broker.Kill()
			continue
		}
		// Cut client connections first: a parked long-poll fetch would otherwise
		// hold the graceful shutdown for its max wait.
		c.net.closeAccepted(i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := node.broker.Shutdown(ctx); err != nil {
			c.t.Errorf("node-%d: shutdown: %v", i, err)
		}
		cancel()
	}
	c.net.closeAll()
}

// Node returns node i's broker: the running one, or the last one after Stop or Kill
// (whose Image is then the metadata it held when it stopped).
func (c *Cluster) Node(i int) *broker.Broker { return c.nodes[i].broker }

// Addr is node i's Kafka address, fixed for the cluster's life.
func (c *Cluster) Addr(i int) string { return c.nodes[i].kafkaAddr }

// running lists the running nodes.
func (c *Cluster) running() []int {
	var out []int
	for i, node := range c.nodes {
		if node.running {
			out = append(out, i)
		}
	}
	return out
}

// live lists the running nodes that are not cut off by Partition.
func (c *Cluster) live() []int {
	var out []int
	for _, i := range c.running() {
		if !c.net.isCut(i) {
			out = append(out, i)
		}
	}
	return out
}

// Addrs returns the Kafka addresses of the live nodes (running, not partitioned).
func (c *Cluster) Addrs() []string {
	var out []string
	for _, i := range c.live() {
		out = append(out, c.nodes[i].kafkaAddr)
	}
	return out
}

// Stop shuts node i down gracefully (controlled shutdown first), failing the test if
// the shutdown reports an error.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	node := c.mustRun(i)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := node.broker.Shutdown(ctx)
	node.running = false
	if err != nil {
		c.t.Fatalf("node-%d: shutdown: %v", i, err)
	}
}

// Kill stops node i abruptly, as kill -9 would.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	node := c.mustRun(i)
	node.broker.Kill()
	node.running = false
}

func (c *Cluster) mustRun(i int) *clusterNode {
	c.t.Helper()
	if !c.nodes[i].running {
		c.t.Fatalf("node-%d is not running", i)
	}
	return c.nodes[i]
}

// Restart starts the listed stopped nodes again, each with its data directory and
// its Kafka and Raft addresses, then waits until all of them are ready. Nodes that
// cannot be ready until others are back (a majority of voters was stopped) are
// restarted together in one call.
func (c *Cluster) Restart(indices ...int) {
	c.t.Helper()
	c.Start(indices...)
	c.waitReady(indices)
}

// Start starts the listed stopped nodes again like Restart, without waiting for them.
func (c *Cluster) Start(indices ...int) {
	c.t.Helper()
	for _, i := range indices {
		node := c.nodes[i]
		if node.running {
			c.t.Fatalf("node-%d is running", i)
		}
		kl, err := c.net.listen(i, node.kafkaAddr, true)
		if err != nil {
			c.t.Fatal(err)
		}
		rl, err := c.net.listen(i, node.raftAddr, false)
		if err != nil {
			kl.Close()
			c.t.Fatal(err)
		}
		if err := c.start(node, kl, rl); err != nil {
			kl.Close()
			rl.Close()
			c.t.Fatalf("node-%d: restart: %v", i, err)
		}
	}
}

// WaitReady waits until every running node is registered, unfenced and in its own
// metadata, and every live node sees every live node unfenced.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	c.waitReady(c.running())
}

// Partition cuts node i off: its Raft and Kafka traffic with the other nodes, both
// ways, and client connections to it. Open connections are closed; new ones are
// refused until Heal. With PeersOnly, clients can still reach node i: the node is
// on the minority side of a network split together with some clients.
func (c *Cluster) Partition(i int, opts ...PartitionOption) {
	clients := true
	for _, o := range opts {
		if o == PeersOnly {
			clients = false
		}
	}
	c.net.partition(i, clients)
	c.t.Logf("harness: node-%d partitioned (clients cut too: %v)", i, clients)
}

// PartitionOption modifies Partition.
type PartitionOption int

// PeersOnly makes Partition cut node i from the other nodes only.
const PeersOnly PartitionOption = 1

// KafkaOnly makes CutLink cut the nodes' Kafka connections only (a broker's
// heartbeats, forwarded requests and follower fetches), not Raft.
const KafkaOnly PartitionOption = 2

// CutLink cuts the link between nodes i and j, Raft and Kafka traffic both ways, and
// nothing else: each node still reaches the other nodes and the clients. With
// KafkaOnly their Raft traffic goes on. Heal ends it.
func (c *Cluster) CutLink(i, j int, opts ...PartitionOption) {
	kafkaOnly := slices.Contains(opts, KafkaOnly)
	c.net.cutLink(i, j, kafkaOnly)
	c.t.Logf("harness: link node-%d <-> node-%d cut (Kafka only: %v)", i, j, kafkaOnly)
}

// CutOneWay holds back everything node from writes to node to, Raft and Kafka, as a
// blackhole route from one to the other: nothing is closed or refused, what was written
// arrives once Heal runs, and a dial between the two hangs until then (or until its
// context ends). Node to's traffic to node from flows, and both reach everyone else.
func (c *Cluster) CutOneWay(from, to int) {
	c.net.cutOneWay(from, to)
	c.t.Logf("harness: node-%d -> node-%d cut one way", from, to)
}

// Heal ends every partition.
func (c *Cluster) Heal() {
	c.net.heal()
	c.t.Logf("harness: healed")
}

// Controller returns the index of the node that every live node (running and not
// partitioned) names as controller, and that is itself live and the Raft leader.
func (c *Cluster) Controller() int {
	c.t.Helper()
	ctrl := -1
	testwait.For(c.t, convergeTimeout, func() (err error) {
		ctrl, err = c.agreedController()
		return err
	})
	return ctrl
}

// WaitConverged waits until every live node holds the same metadata image (equal in
// every field, offset included) and returns it.
func (c *Cluster) WaitConverged() imageView {
	c.t.Helper()
	var im imageView
	testwait.For(c.t, convergeTimeout, func() error {
		live := c.live()
		if len(live) == 0 {
			return fmt.Errorf("no live node")
		}
		im = c.Image(live[0])
		for _, i := range live[1:] {
			if other := c.Image(i); !im.equal(other) {
				return fmt.Errorf("node-%d and node-%d differ: %s", live[0], i, im.diff(other))
			}
		}
		return nil
	})
	return im
}

// Image returns node i's metadata image as the test-side view.
func (c *Cluster) Image(i int) imageView {
	c.t.Helper()
	im, err := viewOf(c.nodes[i].broker.Image())
	if err != nil {
		c.t.Fatalf("node-%d: %v", i, err)
	}
	return im
}

// Client returns a kgo client seeded with every live node (running, not partitioned),
// closed at cleanup.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, c.Addrs(), opts...)
}

// ClientTo returns a kgo client seeded with node i only, closed at cleanup.
func (c *Cluster) ClientTo(t testing.TB, i int, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, []string{c.Addr(i)}, opts...)
}

// newClient's Produce and Fetch stop at v12, the last versions naming topics, as the
// raw requests of many tests name them; kgo.MaxVersions among opts overrides it (the
// topic-id tests pass kversion.Stable()).
func newClient(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MaxVersions(namedTopicVersions())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// namedTopicVersions is kgo's versions with Produce and Fetch capped at v12.
func namedTopicVersions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 12)
	v.SetMaxKeyVersion(kmsg.Fetch.Int16(), 12)
	return v
}

// Admin returns a kadm client over a fresh kgo client seeded with every live node.
func (c *Cluster) Admin(t testing.TB) *kadm.Client { return kadm.NewClient(c.Client(t)) }

// RequestTo sends req to node i itself (its seed connection: no metadata routing, so
// an admin request reaches a node that is not the controller).
func (c *Cluster) RequestTo(ctx context.Context, t testing.TB, i int, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	// Produce and Fetch stop at v12, the last versions naming topics: the raw
	// requests sent here name them (v13+ carry topic ids, requestAt sends those).
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(i)), kgo.MaxVersions(namedTopicVersions()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// DropConnections cuts every client connection to node i, as a network blip would;
// clients reconnect. kafka-go's Reader.Close, for one, otherwise waits out a parked
// long-poll fetch (MaxWait 10 s by default).
func (c *Cluster) DropConnections(i int) { c.net.closeAccepted(i) }

// SawRequest reports whether node i received a request with key at version.
func (c *Cluster) SawRequest(i int, key, version int16) bool {
	return c.net.requestLog(i).saw(key, version)
}

// CreateTopic creates a topic with replication factor 1 through kadm, or fails t.
func (c *Cluster) CreateTopic(t testing.TB, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	c.CreateTopicRF(t, topic, partitions, 1, configs)
}

// CreateTopicRF creates a topic through kadm, or fails t.
func (c *Cluster) CreateTopicRF(t testing.TB, topic string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	resp, err := c.Admin(t).CreateTopic(testContext(t), partitions, rf, configs, topic)
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

// testLogWriter sends a node's log lines to t.Log with a prefix, until stop, and keeps
// the lines logged at WARN or ERROR (TakeAlertLines).
type testLogWriter struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	// stopped is set at the end of cleanup; guarded by mu.
	stopped bool
	// alerts are the WARN and ERROR lines so far, with the prefix; guarded by mu.
	alerts []string
	// lines are the lines written so far (Cluster.logLines); guarded by mu.
	lines []string
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	line := w.prefix + strings.TrimRight(string(p), "\n")
	if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
		w.alerts = append(w.alerts, line)
	}
	if !w.stopped {
		w.lines = append(w.lines, strings.TrimRight(string(p), "\n"))
		w.t.Log(line)
	}
	return len(p), nil
}

// TakeAlertLines returns the lines the nodes logged at WARN or ERROR since the last
// call (or the start), node by node, and forgets them.
func (c *Cluster) TakeAlertLines() []string {
	var out []string
	for _, node := range c.nodes {
		node.log.mu.Lock()
		out = append(out, node.log.alerts...)
		node.log.alerts = nil
		node.log.mu.Unlock()
	}
	return out
}

// logLines returns the lines node i has logged so far, in every run of it.
func (c *Cluster) logLines(i int) []string {
	w := c.nodes[i].log
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lines)
}

func (w *testLogWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// recordKey and recordValue are the i-th test record's key and value. Values vary in
// length so that batches are not uniform.
func recordKey(i int) string { return fmt.Sprintf("key-%05d", i) }

func recordValue(prefix string, i int) string {
	return fmt.Sprintf("%s-value-%d-%s", prefix, i, strings.Repeat("x", i%37))
}
