package integration

// Real processes: the petrel binary, built once per TestProcessFailover run, started three
// times as `petrel server --voters ...` on 127.0.0.1 ports, and driven through its own
// CLI (`petrel topics create`, `petrel topics describe`) the way an operator would. This
// is issue 4's "Done when" check: stopping a node of a 3-process cluster moves its
// leaderships within the session timeout. The broker's own logs go to t.Log with a node
// prefix. Everything here is self-contained (names start with proc) so that it does not
// depend on the in-process harness.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
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

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// procSessionTimeout and procHeartbeat are the brokers' broker.session.timeout.ms and
	// broker.heartbeat.interval.ms: short, so that a crash is noticed in seconds.
	procSessionTimeout = 3 * time.Second
	procHeartbeat      = 500 * time.Millisecond

	// procPollMargin is how much longer than the session timeout a leadership move may
	// take, as this test sees it, once a controller is running.
	//   - The controller checks sessions every 100 ms.
	//   - It fences in one Raft write, which needs a quorum fsync: milliseconds when
	//     idle, up to 0.5 s seen on a loaded machine.
	//   - One poll of `petrel topics describe` is a process start plus Metadata and
	//     DescribeConfigs: 50-800 ms seen under load.
	//   - The move can land just after a poll read the metadata, so up to two polls and
	//     the 100 ms between them pass before a poll returns the new state.
	// In all about 2 s at worst.
	// A SIGTERM must meet session timeout + this margin from the signal, although its
	// controlled shutdown should move the leaderships before the process exits (see
	// procGracefulBound). A SIGKILL of the controller must meet it from the moment the
	// survivors report a new controller. That controller starts every broker with a
	// fresh session, within its 100 ms tick and after a Raft barrier.
	procPollMargin = 2 * time.Second
	// procGracefulBound is the earliest a session could expire after a SIGTERM: the last
	// heartbeat was at most one interval before the signal. A SIGTERM'd broker's
	// leaderships must have moved before it, so by the controlled shutdown.
	procGracefulBound = procSessionTimeout - procHeartbeat
	// procElectionTimeout bounds the wait for a new controller after the old one crashed.
	// A follower campaigns after hashicorp/raft's heartbeat timeout (500 ms, randomised up
	// to 1 s) and the election takes at most an election timeout (500 ms, randomised up
	// to 1 s): 2 s at worst without a split vote, plus room for one.
	procElectionTimeout = 3 * time.Second

	// procStartTimeout bounds a cluster start or a restart until the brokers are in
	// Metadata.
	procStartTimeout = 20 * time.Second
	// procCommandTimeout bounds one CLI run.
	procCommandTimeout = 15 * time.Second
	// procTopic is the test topic: 4 partitions, replication factor 3.
	procTopic = "t"
)

// TestProcessFailover builds the binary once, then runs each failover scenario on a
// fresh 3-process cluster: a graceful stop (SIGTERM, controlled shutdown) of a broker
// that is not the controller, and a crash (SIGKILL) of the controller itself.
func TestProcessFailover(t *testing.T) {
	bin := procBuildPetrel(t)
	t.Run("sigterm-broker", func(t *testing.T) {
		t.Parallel()
		runProcStop(t, bin, syscall.SIGTERM)
	})
	t.Run("sigkill-controller", func(t *testing.T) {
		t.Parallel()
		runProcStop(t, bin, syscall.SIGKILL)
	})
}

// runProcStop starts a cluster, creates the topic with the CLI, stops one broker that
// leads a partition with sig (SIGTERM: a non-controller; SIGKILL: the controller), and
// checks that its leaderships and ISR memberships move to the others in time, by Kafka's
// election rule, and that the restarted process rejoins.
func runProcStop(t *testing.T, bin string, sig syscall.Signal) {
	begin := time.Now()
	c := procStartCluster(t, bin)
	t.Logf("cluster of 3 processes up in %s", time.Since(begin).Round(time.Millisecond))

	out := c.petrel(t, "topics", "create", procTopic, "--partitions", "4", "--replication-factor", "3")
	if strings.TrimSpace(out) != "Created topic "+procTopic+"." {
		t.Fatalf("topics create printed %q", out)
	}
	// CreateTopics answers once the topic is committed; every broker applies it soon
	// after. Describe until the full placement is visible.
	var before procTopicState
	testwait.ForWhat(t, 10*time.Second, "the topic in describe", func() error {
		st, err := c.describe(procTopic)
		if err != nil {
			return err
		}
		before = st
		return procCheckPlacement(st)
	})
	t.Logf("placement:\n%s", before)

	meta, err := c.brokerMetadata(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	controller := meta.Controller
	var victim int32 = -1
	switch sig {
	case syscall.SIGKILL:
		victim = controller // the controller crashes: the two others elect a new one
		if before.leaderCount(victim) == 0 {
			t.Fatalf("controller %d leads no partition of a balanced placement:\n%s", victim, before)
		}
	default:
		for id := int32(0); id < 3; id++ {
			if id != controller && before.leaderCount(id) > 0 {
				victim = id
				break
			}
		}
		if victim < 0 {
			t.Fatalf("no broker but the controller %d leads a partition:\n%s", controller, before)
		}
	}
	epochBefore, err := c.controllerEpoch(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stopping broker %d (controller %d, epoch %d) with %s; it leads %d partition(s)",
		victim, controller, epochBefore, sig, before.leaderCount(victim))

	node := c.nodes[victim]
	stopAt := time.Now()
	node.signal(t, sig)

	// The leaderships must move within the session timeout (+ procPollMargin) of the
	// signal, or, after a crash of the controller, of the moment the survivors report a
	// new one: its fresh sessions start the dead broker's session timeout.
	sessionStart := stopAt
	if sig == syscall.SIGKILL {
		testwait.ForWhat(t, procElectionTimeout, "a new controller", func() error {
			m, err := c.brokerMetadata(time.Second)
			if err != nil {
				return err
			}
			if m.Controller < 0 || m.Controller == victim {
				return fmt.Errorf("controller is %d", m.Controller)
			}
			controller = m.Controller
			return nil
		})
		sessionStart = time.Now()
		t.Logf("broker %d is the controller %s after the signal", controller, sessionStart.Sub(stopAt).Round(time.Millisecond))
	}

	// Poll the CLI's own output until no partition is led by the victim and no ISR lists
	// it. Errors are retried: a client may first try the stopped node.
	bound := procSessionTimeout + procPollMargin
	// The move happened after the start of the last poll that showed the old state and
	// before the first poll showing the new one returned; the bound is checked against
	// the latter.
	var after procTopicState
	lastOld := stopAt
	testwait.ForWhat(t, time.Until(sessionStart.Add(bound)), fmt.Sprintf("broker %d's leaderships and ISR memberships moved", victim), func() error {
		pollStart := time.Now()
		st, err := c.describe(procTopic)
		if err != nil {
			return err
		}
		after = st
		if err := st.checkWithout(victim); err != nil {
			lastOld = pollStart
			return err
		}
		return nil
	})
	movedAt := time.Now()
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("%s: broker %d's leaderships moved %s-%s after the signal, at most %s after the session clock started (bound %s):\n%s",
		sig, victim, ms(lastOld.Sub(stopAt)), ms(movedAt.Sub(stopAt)), ms(movedAt.Sub(sessionStart)), bound, after)
	if sig == syscall.SIGTERM && movedAt.Sub(stopAt) >= procGracefulBound {
		t.Errorf("broker %d's leaderships moved %s after SIGTERM; a controlled shutdown moves them before a session could expire (%s)",
			victim, ms(movedAt.Sub(stopAt)), procGracefulBound)
	}
	if err := procCheckElection(before, after, victim); err != nil {
		t.Fatal(err)
	}

	exitTimeout := 5 * time.Second
	if sig == syscall.SIGTERM {
		exitTimeout = 15 * time.Second // controlled shutdown, flush, checkpoints, Raft
	}
	state := node.waitExit(t, exitTimeout)
	marker := filepath.Join(node.dir, "logs", ".kafka_cleanshutdown")
	_, statErr := os.Stat(marker)
	switch sig {
	case syscall.SIGTERM:
		if !state.Success() {
			t.Errorf("broker %d exited with %s after SIGTERM; want 0", victim, state)
		}
		if statErr != nil {
			t.Errorf("graceful stop wrote no clean-shutdown marker: %v", statErr)
		}
	case syscall.SIGKILL:
		if statErr == nil {
			t.Errorf("a killed broker left a clean-shutdown marker %s", marker)
		}
	}
	t.Logf("broker %d exited %s after the signal: %s", victim, node.exitedAt.Sub(stopAt).Round(time.Millisecond), state)

	// The survivors agree on a controller that is not the stopped node; after a crash of
	// the controller, its epoch (the Raft term) grew.
	testwait.ForWhat(t, 5*time.Second, "a live controller in Metadata, without the stopped broker", func() error {
		m, err := c.brokerMetadata(2 * time.Second)
		if err != nil {
			return err
		}
		if m.Controller < 0 || m.Controller == victim {
			return fmt.Errorf("controller is %d", m.Controller)
		}
		if slices.Contains(m.Brokers.NodeIDs(), victim) {
			return fmt.Errorf("fenced broker %d is still listed: %v", victim, m.Brokers.NodeIDs())
		}
		return nil
	})
	if sig == syscall.SIGKILL {
		epochAfter, err := c.controllerEpoch(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if epochAfter <= epochBefore {
			t.Errorf("controller epoch %d after the controller crashed; want above %d", epochAfter, epochBefore)
		}
		t.Logf("controller epoch %d -> %d", epochBefore, epochAfter)
	}

	// Restart with the same data dir and flags: a new incarnation registers, catches up
	// with the metadata log and is unfenced.
	restartAt := time.Now()
	node.start(t)
	testwait.ForWhat(t, procStartTimeout, fmt.Sprintf("restarted broker %d back in Metadata", victim), func() error {
		if err := node.exited(); err != nil {
			return testwait.Permanent(err)
		}
		m, err := c.brokerMetadata(2 * time.Second)
		if err != nil {
			return err
		}
		if !slices.Contains(m.Brokers.NodeIDs(), victim) {
			return fmt.Errorf("brokers %v", m.Brokers.NodeIDs())
		}
		return nil
	})
	t.Logf("broker %d rejoined %s after its restart", victim, time.Since(restartAt).Round(time.Millisecond))
	// Unfencing elects leaders only where there were none: nothing moves back.
	rejoined, err := c.describe(procTopic)
	if err != nil {
		t.Fatal(err)
	}
	for id, p := range rejoined.partitions {
		if q := after.partitions[id]; p.Leader != q.Leader {
			t.Errorf("partition %d: leader %d after broker %d rejoined; was %d", id, p.Leader, victim, q.Leader)
		}
	}
}

// procCheckPlacement checks a new topic: 4 partitions with 3 distinct replicas on
// brokers 0-2, the ISR equal to the replicas, the first replica leading, and leaders
// spread over the three brokers.
func procCheckPlacement(st procTopicState) error {
	if st.partitionCount != 4 || st.replicationFactor != 3 || len(st.partitions) != 4 {
		return fmt.Errorf("PartitionCount %d, ReplicationFactor %d, %d partition lines; want 4, 3, 4",
			st.partitionCount, st.replicationFactor, len(st.partitions))
	}
	leaders := map[int32]int{}
	for id := int32(0); id < 4; id++ {
		p, ok := st.partitions[id]
		if !ok {
			return fmt.Errorf("partition %d missing", id)
		}
		sorted := slices.Sorted(slices.Values(p.Replicas))
		if !slices.Equal(sorted, []int32{0, 1, 2}) {
			return fmt.Errorf("partition %d: replicas %v; want brokers 0, 1, 2 once each", id, p.Replicas)
		}
		if !slices.Equal(p.ISR, p.Replicas) {
			return fmt.Errorf("partition %d: ISR %v; want all replicas %v", id, p.ISR, p.Replicas)
		}
		if p.Leader != p.Replicas[0] {
			return fmt.Errorf("partition %d: leader %d; want the first replica %d", id, p.Leader, p.Replicas[0])
		}
		leaders[p.Leader]++
	}
	if len(leaders) != 3 {
		return fmt.Errorf("leaders not spread over the three brokers: %v", leaders)
	}
	return nil
}

// procCheckElection checks Kafka's rule on the state after victim was fenced: replicas are
// unchanged, each ISR is the old one without victim (in order), partitions victim did not
// lead keep their leader, and the others are led by the first replica in assignment order
// that is in the new ISR.
func procCheckElection(before, after procTopicState, victim int32) error {
	for id, b := range before.partitions {
		a := after.partitions[id]
		if !slices.Equal(a.Replicas, b.Replicas) {
			return fmt.Errorf("partition %d: replicas %v became %v", id, b.Replicas, a.Replicas)
		}
		wantISR := slices.DeleteFunc(slices.Clone(b.ISR), func(r int32) bool { return r == victim })
		if !slices.Equal(a.ISR, wantISR) {
			return fmt.Errorf("partition %d: ISR %v; want %v", id, a.ISR, wantISR)
		}
		wantLeader := b.Leader
		if b.Leader == victim {
			i := slices.IndexFunc(b.Replicas, func(r int32) bool { return slices.Contains(wantISR, r) })
			wantLeader = b.Replicas[i]
		}
		if a.Leader != wantLeader {
			return fmt.Errorf("partition %d (replicas %v, ISR %v): leader %d; want %d", id, a.Replicas, a.ISR, a.Leader, wantLeader)
		}
	}
	return nil
}

// procTopicState is one topic as `petrel topics describe` prints it.
type procTopicState struct {
	partitionCount    int
	replicationFactor int
	partitions        map[int32]procPartition
	text              string // the lines as printed
}

// procPartition is one partition line. Leader is -1 for "none".
type procPartition struct {
	Leader        int32
	Replicas, ISR []int32
}

func (st procTopicState) String() string { return st.text }

func (st procTopicState) leaderCount(id int32) int {
	n := 0
	for _, p := range st.partitions {
		if p.Leader == id {
			n++
		}
	}
	return n
}

// checkWithout reports whether every partition has a leader other than id and no ISR
// lists id.
func (st procTopicState) checkWithout(id int32) error {
	for pid, p := range st.partitions {
		if p.Leader < 0 || p.Leader == id {
			return fmt.Errorf("partition %d: leader %d", pid, p.Leader)
		}
		if slices.Contains(p.ISR, id) {
			return fmt.Errorf("partition %d: ISR %v lists %d", pid, p.ISR, id)
		}
	}
	return nil
}

var (
	// procSummaryLine is kafka-topics.sh's summary line (no configs on this topic).
	procSummaryLine = regexp.MustCompile(`^Topic: (\S+)\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: (\d+)\tReplicationFactor: (\d+)\tConfigs: $`)
	// procPartitionLine is one partition line of kafka-topics.sh --describe (the ISR is
	// empty while a leaderless partition's last member is in the ELR, KIP-966).
	procPartitionLine = regexp.MustCompile(`^\tTopic: (\S+)\tPartition: (\d+)\tLeader: (\d+|none)\tReplicas: ([\d,]+)\tIsr: ([\d,]*)\tElr: ([\d,]*)\tLastKnownElr: ([\d,]*)$`)
)

// procParseDescribe parses the output of `petrel topics describe topic`, strictly: every line
// is the summary or a partition line of that topic.
func procParseDescribe(out, topic string) (procTopicState, error) {
	st := procTopicState{partitions: map[int32]procPartition{}, text: out}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) == 0 {
		return st, errors.New("describe printed nothing")
	}
	m := procSummaryLine.FindStringSubmatch(lines[0])
	if m == nil || m[1] != topic {
		return st, fmt.Errorf("summary line %q is not kafka-topics.sh's format for %s", lines[0], topic)
	}
	st.partitionCount, _ = strconv.Atoi(m[2])
	st.replicationFactor, _ = strconv.Atoi(m[3])
	for _, line := range lines[1:] {
		m := procPartitionLine.FindStringSubmatch(line)
		if m == nil || m[1] != topic {
			return st, fmt.Errorf("partition line %q is not kafka-topics.sh's format for %s", line, topic)
		}
		id, _ := strconv.ParseInt(m[2], 10, 32)
		p := procPartition{Leader: -1}
		if m[3] != "none" {
			l, _ := strconv.ParseInt(m[3], 10, 32)
			p.Leader = int32(l)
		}
		p.Replicas, p.ISR = procParseIDs(m[4]), procParseIDs(m[5])
		if _, dup := st.partitions[int32(id)]; dup {
			return st, fmt.Errorf("partition %d printed twice", id)
		}
		st.partitions[int32(id)] = p
	}
	return st, nil
}

func procParseIDs(s string) []int32 {
	var out []int32
	if s == "" {
		return nil
	}
	for _, f := range strings.Split(s, ",") {
		n, _ := strconv.ParseInt(f, 10, 32) // the regexp allows digits only
		out = append(out, int32(n))
	}
	return out
}

// procBuild is the petrel binary every process test runs: built once per test binary
// (linking it again for every test cost each one seconds) into a directory that
// TestMain removes after the run.
var procBuild struct {
	once sync.Once
	dir  string
	bin  string
	took time.Duration
	err  error
}

// procBuildPetrel returns the petrel binary, building it on the first call.
func procBuildPetrel(t testing.TB) string {
	t.Helper()
	procBuild.once.Do(func() {
		goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
		if err != nil {
			procBuild.err = fmt.Errorf("no go command to build petrel with: %w", err)
			return
		}
		if procBuild.dir, err = os.MkdirTemp("", "petrel-integration-"); err != nil {
			procBuild.err = err
			return
		}
		bin := filepath.Join(procBuild.dir, "petrel")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, "github.com/petrel-broker/petrel")
		if out, err := cmd.CombinedOutput(); err != nil {
			procBuild.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		procBuild.bin, procBuild.took = bin, time.Since(start)
	})
	if procBuild.err != nil {
		t.Fatal(procBuild.err)
	}
	t.Logf("petrel binary %s (built once in %s)", procBuild.bin, procBuild.took.Round(time.Millisecond))
	return procBuild.bin
}

// procRemoveBuild removes procBuildPetrel's directory, if it made one.
func procRemoveBuild() {
	if procBuild.dir != "" {
		os.RemoveAll(procBuild.dir)
	}
}

// procCluster is three petrel server processes.
type procCluster struct {
	bin   string
	nodes []*procNode
}

// procNode is one node's process with its fixed flags. Its methods are called from the
// test goroutine.
type procNode struct {
	id        int32
	bin       string
	dir       string   // --data-dir, kept across restarts
	kafkaAddr string   // --listen
	raftAddr  string   // --raft-listen
	voters    string   // --voters
	sets      []string // extra --set key=value, after the defaults

	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has exited and its output is flushed
	// waitErr and exitedAt are cmd.Wait's result and when it returned; read after done
	// is closed.
	waitErr  error
	exitedAt time.Time
	out      *procLineWriter
}

// procStartCluster starts three voters and waits until every one is in Metadata. Ports
// are checked free by binding and closing them (procFreePorts), so another process may
// take one in between; a start that fails to bind is retried on fresh ports.
func procStartCluster(t testing.TB, bin string) *procCluster {
	t.Helper()
	return procStartClusterWith(t, bin)
}

// procStartClusterWith is procStartCluster with extra `--set key=value` properties for
// every node, applied after (so overriding) the default session timeout and heartbeat.
func procStartClusterWith(t testing.TB, bin string, sets ...string) *procCluster {
	t.Helper()
	return procStartClusterEach(t, bin, func(int32) []string { return sets })
}

// procStartClusterEach is procStartClusterWith with each node's own properties, setsOf
// its node id (a per-node endpoint, say).
func procStartClusterEach(t testing.TB, bin string, setsOf func(id int32) []string) *procCluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := procTryStartCluster(t, bin, setsOf)
		if err == nil {
			return c
		}
		if !errors.Is(err, errProcAddrInUse) || attempt == 3 {
			t.Fatalf("starting the cluster: %v", err)
		}
		t.Logf("attempt %d: %v; retrying on other ports", attempt, err)
	}
}

var errProcAddrInUse = errors.New("a port was taken before the node bound it")

func procTryStartCluster(t testing.TB, bin string, setsOf func(int32) []string) (*procCluster, error) {
	ports, err := procFreePorts(6)
	if err != nil {
		t.Fatal(err)
	}
	c := &procCluster{bin: bin}
	var voters []string
	for i := range 3 {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i, ports[2*i+1]))
	}
	for i := range 3 {
		c.nodes = append(c.nodes, &procNode{
			id:        int32(i),
			bin:       bin,
			dir:       t.TempDir(),
			kafkaAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*i]),
			raftAddr:  fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]),
			voters:    strings.Join(voters, ","),
			sets:      setsOf(int32(i)),
		})
	}
	for _, n := range c.nodes {
		n.start(t)
	}
	stopAll := func() {
		for _, n := range c.nodes {
			n.kill()
		}
	}
	deadline := time.Now().Add(procStartTimeout)
	for {
		for _, n := range c.nodes {
			if err := n.exited(); err != nil {
				stopAll()
				if strings.Contains(n.out.all(), "address already in use") {
					return nil, fmt.Errorf("node %d: %w", n.id, errProcAddrInUse)
				}
				return nil, err
			}
		}
		m, err := c.brokerMetadata(2 * time.Second)
		if err == nil && len(m.Brokers) == 3 && m.Controller >= 0 {
			return c, nil
		}
		if time.Now().After(deadline) {
			stopAll()
			if err == nil {
				err = fmt.Errorf("brokers %v, controller %d", m.Brokers.NodeIDs(), m.Controller)
			}
			return nil, fmt.Errorf("the three brokers are not in Metadata within %s: %v", procStartTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// procFreePorts returns n distinct ports on 127.0.0.1 that were free a moment ago. They
// are drawn at random from 10000 up to the kernel's ephemeral port range, which the
// kernel hands out for port 0 and for outgoing connections. So a port picked here is not
// given to anyone else while its node is stopped or between the check and the bind.
// And it was not recently another test's port-0 listener whose Raft peers still dial it:
// that happened once with port 0, and a Raft pre-vote reached a broker's Kafka listener.
// Without /proc/sys/net/ipv4/ip_local_port_range, ports come from port 0.
func procFreePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	lo, hi := 10000, procEphemeralLow()
	for attempt := 0; len(ports) < n && hi-lo >= 1000 && attempt < 1000; attempt++ {
		p := lo + rand.IntN(hi-lo)
		if slices.Contains(ports, p) {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // in use
		}
		lns = append(lns, ln)
		ports = append(ports, p)
	}
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// procEphemeralLow returns the first port of the kernel's ephemeral range, or 0 when it
// is unknown.
func procEphemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return n
}

// start starts the node's process with its flags; it is killed at t's cleanup if still
// running.
func (n *procNode) start(t testing.TB) {
	t.Helper()
	prefix := fmt.Sprintf("node-%d ", n.id)
	if n.out != nil {
		prefix = fmt.Sprintf("node-%d' ", n.id) // a restarted incarnation
	}
	out := &procLineWriter{t: t, prefix: prefix}
	// Registered before the kill, so it runs after it: no line reaches a finished test.
	t.Cleanup(out.stop)
	ctx, cancel := context.WithCancel(context.Background())
	args := []string{"server",
		"--node-id", strconv.Itoa(int(n.id)),
		"--data-dir", n.dir,
		"--listen", n.kafkaAddr,
		"--raft-listen", n.raftAddr,
		"--metrics-listen", "127.0.0.1:0",
		"--voters", n.voters,
		"--set", "broker.session.timeout.ms=" + strconv.Itoa(int(procSessionTimeout.Milliseconds())),
		"--set", "broker.heartbeat.interval.ms=" + strconv.Itoa(int(procHeartbeat.Milliseconds())),
	}
	for _, kv := range n.sets {
		args = append(args, "--set", kv)
	}
	cmd := exec.CommandContext(ctx, n.bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("node-%d: start: %v", n.id, err)
	}
	n.cmd, n.out, n.done, n.waitErr = cmd, out, make(chan struct{}), nil
	done := n.done
	go func() {
		err := cmd.Wait()
		n.exitedAt = time.Now()
		out.flush()
		n.waitErr = err
		cancel()
		close(done)
	}()
	t.Cleanup(n.kill)
}

// exited returns nil while the process runs, else why it ended.
func (n *procNode) exited() error {
	select {
	case <-n.done:
		return fmt.Errorf("node-%d exited: %v (state %s); last output:\n%s", n.id, n.waitErr, n.cmd.ProcessState, n.out.tail(20))
	default:
		return nil
	}
}

// signal sends sig to the running process.
func (n *procNode) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := n.exited(); err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("node-%d: %s: %v", n.id, sig, err)
	}
}

// waitExit waits for the process to end and returns its state.
func (n *procNode) waitExit(t testing.TB, timeout time.Duration) *os.ProcessState {
	t.Helper()
	select {
	case <-n.done:
		return n.cmd.ProcessState
	case <-time.After(timeout):
		n.kill()
		t.Fatalf("node-%d did not exit within %s; last output:\n%s", n.id, timeout, n.out.tail(20))
		return nil
	}
}

// kill kills the process if it runs and waits for it. Idempotent.
func (n *procNode) kill() {
	if n.cmd == nil {
		return
	}
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Kill()
	<-n.done
}

// addrs returns every node's Kafka address.
func (c *procCluster) addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.kafkaAddr
	}
	return out
}

// petrel runs a petrel client command against the cluster and returns its stdout; a
// failure fails t.
func (c *procCluster) petrel(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.runPetrel(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runPetrel runs `petrel args... --bootstrap-server all-three`, bounded by
// procCommandTimeout.
func (c *procCluster) runPetrel(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), procCommandTimeout)
	defer cancel()
	args = append(args, "--bootstrap-server", strings.Join(c.addrs(), ","), "--timeout", "5s")
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = append(os.Environ(), "PETREL_LOG_LEVEL=error")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("petrel %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// describe runs `petrel topics describe topic` and parses it.
func (c *procCluster) describe(topic string) (procTopicState, error) {
	out, err := c.runPetrel("topics", "describe", topic)
	if err != nil {
		return procTopicState{}, err
	}
	return procParseDescribe(out, topic)
}

// procClient returns a kgo client seeded with every node.
func (c *procCluster) procClient() (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DialTimeout(time.Second))
}

// brokerMetadata asks the cluster for its brokers and controller with a fresh client.
func (c *procCluster) brokerMetadata(timeout time.Duration) (kadm.Metadata, error) {
	cl, err := c.procClient()
	if err != nil {
		return kadm.Metadata{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return kadm.NewClient(cl).BrokerMetadata(ctx)
}

// controllerEpoch returns the controller epoch (the Raft term) from DescribeQuorum.
func (c *procCluster) controllerEpoch(timeout time.Duration) (int32, error) {
	cl, err := c.procClient()
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("describe quorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, fmt.Errorf("describe quorum: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("describe quorum: no partition in the answer")
	}
	return resp.Topics[0].Partitions[0].LeaderEpoch, nil
}

// procLineWriter sends a process's output to t.Log line by line with a prefix, until
// stop, and keeps it all for error messages. Safe for concurrent use.
type procLineWriter struct {
	t      testing.TB
	prefix string

	mu sync.Mutex
	// partial, lines and stopped are guarded by mu.
	partial []byte   // an unfinished last line
	lines   []string // every complete line so far
	stopped bool     // set at cleanup: no more t.Log
}

func (w *procLineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.emitLocked(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

// emitLocked records and logs one line; the caller holds mu.
func (w *procLineWriter) emitLocked(line string) {
	w.lines = append(w.lines, line)
	if !w.stopped {
		w.t.Log(w.prefix + line)
	}
}

// flush emits an unfinished last line.
func (w *procLineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.emitLocked(string(w.partial))
		w.partial = nil
	}
}

func (w *procLineWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// all returns every line so far.
func (w *procLineWriter) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// tail returns the last n lines.
func (w *procLineWriter) tail(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines[max(0, len(w.lines)-n):], "\n")
}
