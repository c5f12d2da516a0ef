package integration

// Helpers of the consumer-group client tests: members of any client library that
// record what they consume, a dialer that can "kill" a member (every connection cut,
// no new one: it stops heartbeating without leaving), and the scenario every client
// runs (two members split a topic, a third joins, one leaves, one dies).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// groupSessionTimeout is the members' session timeout where a test waits for an
	// expiry: the harness lowers group.min.session.timeout.ms so that it is allowed.
	groupSessionTimeout = 3 * time.Second
	// groupHeartbeat is the members' heartbeat interval.
	groupHeartbeat = 300 * time.Millisecond
	// groupWait bounds a wait for a group to reach a state.
	groupWait = 45 * time.Second
)

// groupOptions are the broker properties of the group tests: no 3 s initial
// rebalance delay, and session timeouts down to one second.
func groupOptions() []Option {
	return []Option{
		WithProperty("group.initial.rebalance.delay.ms", "0"),
		WithProperty("group.min.session.timeout.ms", "1000"),
	}
}

// killSwitch is a dialer whose connections can all be cut at once, after which it
// refuses to dial: the client behind it vanishes as a killed process would.
type killSwitch struct {
	mu     sync.Mutex
	conns  []net.Conn // every connection dialed; guarded by mu
	killed bool       // guarded by mu
}

// DialContext dials unless killed.
func (k *killSwitch) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	k.mu.Lock()
	killed := k.killed
	k.mu.Unlock()
	if killed {
		return nil, errors.New("killSwitch: killed")
	}
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		conn.Close()
		return nil, errors.New("killSwitch: killed")
	}
	k.conns = append(k.conns, conn)
	return conn, nil
}

// Dial is DialContext without a context (sarama's proxy.Dialer).
func (k *killSwitch) Dial(network, addr string) (net.Conn, error) {
	return k.DialContext(context.Background(), network, addr)
}

// kill cuts every connection and refuses new ones.
func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killed = true
	for _, c := range k.conns {
		c.Close()
	}
}

// consumed is one record a member received.
type consumed struct {
	partition int32
	offset    int64
	value     string
	at        time.Time // when the member received it
}

// groupMember is one consumer of any client library in a group. Its client goroutines
// call add; the test reads with records.
type groupMember struct {
	clientID string
	mu       sync.Mutex
	got      []consumed // guarded by mu
	// leave stops the member cleanly (it sends LeaveGroup, or for static members
	// just closes); kill makes it vanish without a word. Only the first call of
	// either does anything; they return once the member's goroutines are done.
	leave, kill func()
	// generation is the member's current generation as its client sees it, where
	// the library tells (kgo); nil otherwise.
	generation func() int32
}

func (m *groupMember) add(partition int32, offset int64, value string) {
	m.mu.Lock()
	m.got = append(m.got, consumed{partition, offset, value, time.Now()})
	m.mu.Unlock()
}

func (m *groupMember) records() []consumed {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.got)
}

// setStop sets the member's leave and kill, of which only the first call does
// anything, and kills the member at cleanup if it is still running.
func (m *groupMember) setStop(t testing.TB, leave, kill func()) {
	var once sync.Once
	m.leave = func() { once.Do(leave) }
	m.kill = func() { once.Do(kill) }
	t.Cleanup(m.kill)
}

// startMember starts a member with client id clientID in group on topic, reading from
// the earliest offset where nothing is committed, with groupSessionTimeout.
type startMember func(t testing.TB, c *Cluster, group, topic, clientID string) *groupMember

// groupAssignment is the described group: each member's client id and partitions.
type groupAssignment map[string][]int32

// describeAssignment describes group through kadm: its state and, per member client
// id, the sorted partitions of topic it is assigned.
func describeAssignment(ctx context.Context, adm *kadm.Client, group, topic string) (string, groupAssignment, error) {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", nil, err
	}
	d := ds[group]
	if d.Err != nil {
		return "", nil, d.Err
	}
	out := groupAssignment{}
	for _, m := range d.Members {
		if _, dup := out[m.ClientID]; dup {
			return "", nil, fmt.Errorf("two members with client id %s", m.ClientID)
		}
		var ps []int32
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, at := range a.Topics {
				if at.Topic == topic {
					ps = append(ps, at.Partitions...)
				}
			}
		}
		slices.Sort(ps)
		out[m.ClientID] = ps
	}
	return d.State, out, nil
}

// waitSplit waits until group is Stable with exactly the members clientIDs, whose
// assignments split partitions 0..partitions-1 of topic among them with none left
// out and each member given at least one (when there are enough partitions).
func waitSplit(t testing.TB, c *Cluster, group, topic string, partitions int32, clientIDs ...string) groupAssignment {
	t.Helper()
	adm := c.Admin(t)
	var got groupAssignment
	testwait.For(t, groupWait, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		state, a, err := describeAssignment(ctx, adm, group, topic)
		if err != nil {
			return err
		}
		if state != "Stable" {
			return fmt.Errorf("group %s is %s (members %v)", group, state, a)
		}
		var ids []string
		for id := range a {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		want := slices.Sorted(slices.Values(clientIDs))
		if !slices.Equal(ids, want) {
			return fmt.Errorf("members %v, want %v", a, want)
		}
		seen := map[int32]string{}
		for id, ps := range a {
			if len(ps) == 0 && int(partitions) >= len(clientIDs) {
				return fmt.Errorf("member %s has no partition: %v", id, a)
			}
			for _, p := range ps {
				if other, dup := seen[p]; dup {
					return fmt.Errorf("partition %d assigned to %s and %s", p, other, id)
				}
				seen[p] = id
			}
		}
		if len(seen) != int(partitions) {
			return fmt.Errorf("%d of %d partitions assigned: %v", len(seen), partitions, a)
		}
		got = a
		return nil
	})
	return got
}

// producePhase writes perPartition records to each partition of topic, valued
// "<phase>/<partition>/<i>", and returns them.
func producePhase(t testing.TB, c *Cluster, topic, phase string, partitions int32, perPartition int) []string {
	t.Helper()
	// gzip: the one codec every client decodes without plug-ins (kafkajs needs codec
	// packages for the others; kgo's default is snappy).
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.GzipCompression()))
	var recs []*kgo.Record
	var values []string
	for p := range partitions {
		for i := range perPartition {
			v := fmt.Sprintf("%s/%d/%d", phase, p, i)
			values = append(values, v)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce phase %s: %v", phase, err)
	}
	cl.Close()
	return values
}

// checkPhase produces a phase's records once the group is split among members, then
// waits until the members together have consumed every one, and checks that each
// member received only records of the partitions it is assigned.
func checkPhase(t testing.TB, c *Cluster, group, topic, phase string, partitions int32, members ...*groupMember) {
	t.Helper()
	var ids []string
	for _, m := range members {
		ids = append(ids, m.clientID)
	}
	assignment := waitSplit(t, c, group, topic, partitions, ids...)
	t.Logf("phase %s: assignment %v", phase, assignment)
	want := producePhase(t, c, topic, phase, partitions, 10)
	prefix := phase + "/"
	testwait.For(t, groupWait, func() error {
		seen := map[string]bool{}
		for _, m := range members {
			for _, r := range m.records() {
				if strings.HasPrefix(r.value, prefix) {
					seen[r.value] = true
				}
			}
		}
		var missing []string
		for _, v := range want {
			if !seen[v] {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("phase %s: %d of %d records not consumed yet, e.g. %s", phase, len(missing), len(want), missing[0])
		}
		return nil
	})
	for _, m := range members {
		for _, r := range m.records() {
			if strings.HasPrefix(r.value, prefix) && !slices.Contains(assignment[m.clientID], r.partition) {
				t.Fatalf("phase %s: member %s consumed %q from partition %d, outside its share %v (assignment %v)",
					phase, m.clientID, r.value, r.partition, assignment[m.clientID], assignment)
			}
		}
	}
}

// runSplitScenario is the scenario every client library runs on a 4-partition topic:
// two members split it and each consumes only its share; a third joins and the
// partitions are rebalanced over three; the first leaves (LeaveGroup) and the other two
// take its partitions; the third is killed and, after its session timeout, the last
// one consumes everything.
func runSplitScenario(t *testing.T, c *Cluster, prefix string, start startMember) {
	const partitions = 4
	group, topic := prefix+"-group", prefix+"-split"
	c.CreateTopic(t, topic, partitions, nil)
	a := start(t, c, group, topic, prefix+"-a")
	b := start(t, c, group, topic, prefix+"-b")
	checkPhase(t, c, group, topic, "two", partitions, a, b)

	m3 := start(t, c, group, topic, prefix+"-c")
	checkPhase(t, c, group, topic, "three", partitions, a, b, m3)

	a.leave()
	checkPhase(t, c, group, topic, "left", partitions, b, m3)

	killed := time.Now()
	m3.kill()
	checkPhase(t, c, group, topic, "expired", partitions, b)
	t.Logf("%s: the survivor consumed the killed member's partitions %s after the kill", prefix, time.Since(killed).Round(time.Millisecond))
	b.leave()
}
