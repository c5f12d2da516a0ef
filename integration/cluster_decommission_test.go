package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeJSON is what `petrel cluster describe -o json` reports of brokers and quorum.
type describeJSON struct {
	Brokers []struct {
		ID     int32 `json:"id"`
		Fenced bool  `json:"fenced"`
	} `json:"brokers"`
	Quorum struct {
		Members []struct {
			ID    int32 `json:"id"`
			Voter bool  `json:"voter"`
		} `json:"members"`
	} `json:"quorum"`
}

// describeVia runs `petrel cluster describe -o json` against the cluster.
func describeVia(t *testing.T, c *Cluster) describeJSON {
	t.Helper()
	code, out, stderr := petrel("cluster", "describe", "-o", "json", "--bootstrap-server="+strings.Join(c.Addrs(), ","))
	var d describeJSON
	if code != 0 {
		t.Fatalf("cluster describe: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("cluster describe -o json: %v\n%s", err, out)
	}
	return d
}

// mentions reports whether the description names broker id anywhere.
func (d describeJSON) mentions(id int32) bool {
	for _, b := range d.Brokers {
		if b.ID == id {
			return true
		}
	}
	for _, m := range d.Quorum.Members {
		if m.ID == id {
			return true
		}
	}
	return false
}

// controllerGauge reads one of the active controller's broker-count gauges.
func (c *Cluster) controllerGauge(t *testing.T, name string) float64 {
	t.Helper()
	return metricSum(c.scrapeNode(t, c.Controller()), name, nil)
}

// TestCluster_RemoveBroker_NonVoter: a node that joined with --join and is then stopped
// for good used to stay listed fenced and as a non-voter forever, the fenced-broker
// gauge at 1 and the Raft leader failing to heartbeat it. `petrel cluster remove-broker`
// refuses it while it runs and while it holds a replica, and once the replica is moved
// away removes it: no image, describe row, Raft configuration or gauge names it.
func TestCluster_RemoveBroker_NonVoter(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 4, WithVoters(3))
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	createAssignedTopic(t, c, "leaving", []int32{3, 0, 1}, nil)
	waitAssignedReplicas(t, c, "leaving", 3, 0)

	code, _, stderr := petrel("cluster", "remove-broker", "3", bs)
	if code == 0 || !strings.Contains(stderr, "broker 3 is running; stop it first") {
		t.Fatalf("remove-broker of a running broker: exit %d, stderr %q", code, stderr)
	}
	c.Stop(3)
	testwait.For(t, convergeTimeout, func() error {
		if d := describeVia(t, c); !d.mentions(3) {
			return fmt.Errorf("describe lost broker 3 before its removal: %+v", d)
		}
		if n := c.controllerGauge(t, "kafka_controller_kafkacontroller_fencedbrokercount"); n != 1 {
			return fmt.Errorf("fenced brokers %v, want 1 (node 3 stopped)", n)
		}
		return nil
	})
	code, _, stderr = petrel("cluster", "remove-broker", "3", bs)
	if code == 0 || !strings.Contains(stderr, "broker 3 still holds 1 replica(s), leaving-0 first") {
		t.Fatalf("remove-broker of a broker with a replica: exit %d, stderr %q", code, stderr)
	}
	if err := reassign(t, c.Admin(t), "leaving", []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, c, "leaving", []int32{0, 1, 2}, convergeTimeout)

	code, out, stderr := petrel("cluster", "remove-broker", "3", bs)
	if code != 0 || out != "Broker 3 unregistered.\n" {
		t.Fatalf("remove-broker 3: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	removedAt := map[int]int{}
	for _, i := range c.live() {
		removedAt[i] = len(c.logLines(i))
	}
	// The controller answers once every live broker applied the removal.
	for _, i := range c.live() {
		if _, ok := c.Image(i).Brokers[3]; ok {
			t.Fatalf("node-%d still has broker 3 in its image", i)
		}
	}
	testwait.For(t, convergeTimeout, func() error { // followers learn the configuration from the leader
		for _, i := range c.live() {
			voters, nonvoters, err := c.Node(i).RaftServers()
			if err != nil || slices.Contains(append(voters, nonvoters...), 3) {
				return fmt.Errorf("node-%d: raft voters %v non-voters %v (%v): node 3 is still a member", i, voters, nonvoters, err)
			}
		}
		return nil
	})
	if d := describeVia(t, c); d.mentions(3) {
		t.Fatalf("cluster describe still names broker 3: %+v", d)
	}
	if n := c.controllerGauge(t, "kafka_controller_kafkacontroller_fencedbrokercount"); n != 0 {
		t.Fatalf("fenced brokers %v after the removal, want 0", n)
	}
	if n := c.controllerGauge(t, "kafka_controller_kafkacontroller_activebrokercount"); n != 3 {
		t.Fatalf("active brokers %v after the removal, want 3", n)
	}
	// The Raft leader stopped trying node 3 (it logged failed heartbeats to it ~3
	// times a second): nothing any node logs at the default level names node 3's
	// addresses over a window of 2 s.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for i, from := range removedAt {
			for _, line := range c.logLines(i)[from:] {
				if strings.Contains(line, c.nodes[3].raftAddr) || strings.Contains(line, c.nodes[3].kafkaAddr) {
					t.Fatalf("node-%d logged after node 3's removal: %s", i, line)
				}
			}
		}
	}
	// Again: Kafka's answer for an unknown broker.
	code, _, stderr = petrel("cluster", "remove-broker", "3", bs)
	if code == 0 || !strings.Contains(stderr, "BROKER_ID_NOT_REGISTERED") && !strings.Contains(stderr, "not registered") {
		t.Fatalf("remove-broker of a removed broker: exit %d, stderr %q", code, stderr)
	}
}

// TestCluster_RemoveBroker_Voter: the controller, stopped, is unregistered and removed
// from the quorum (RemoveRaftVoter) through the new controller, which must not take the
// fresh session it gives every broker for a sign of life; removing a running voter or a
// node that is no voter is refused and changes nothing.
func TestCluster_RemoveBroker_Voter(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 4)
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	victim := c.Controller()
	remaining := slices.DeleteFunc(ids(0, 4), func(id int32) bool { return id == int32(victim) })
	stopped := time.Now()
	c.Stop(victim)
	c.waitFenced(t, int32(victim), stopped, 0)
	code, out, stderr := petrel("cluster", "remove-broker", fmt.Sprint(victim), bs)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("Voter %d removed from the metadata quorum", victim)) {
		t.Fatalf("remove-broker %d: exit %d, stdout %q, stderr %q", victim, code, out, stderr)
	}
	testwait.For(t, convergeTimeout, func() error { // followers learn the configuration from the leader
		for _, i := range c.live() {
			voters, nonvoters, err := c.Node(i).RaftServers()
			slices.Sort(voters)
			if err != nil || !slices.Equal(voters, remaining) || len(nonvoters) > 0 {
				return fmt.Errorf("node-%d: raft voters %v non-voters %v (%v), want %v", i, voters, nonvoters, err, remaining)
			}
		}
		return nil
	})
	if d := describeVia(t, c); d.mentions(int32(victim)) {
		t.Fatalf("cluster describe still names node %d: %+v", victim, d)
	}

	// A running voter, the controller included, is refused: it would keep running
	// outside the quorum.
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	for _, id := range []int32{remaining[0], int32(c.Controller())} {
		req.VoterID = id
		resp, err := req.RequestWith(testContext(t), c.Client(t))
		if err != nil || resp.ErrorCode != kerr.InvalidRequest.Code || !strings.Contains(deref(resp.ErrorMessage), "is running; stop it first") {
			t.Fatalf("removing running voter %d: %v %+v", id, err, resp)
		}
	}
	req.VoterID = 7
	if resp, err := req.RequestWith(testContext(t), c.Client(t)); err != nil || resp.ErrorCode != kerr.VoterNotFound.Code {
		t.Fatalf("removing voter 7, not a voter: %v %+v", err, resp)
	}
	voters, _, err := c.Node(int(remaining[0])).RaftServers()
	if slices.Sort(voters); err != nil || !slices.Equal(voters, remaining) {
		t.Fatalf("voters %v (%v) after refused removals, want %v", voters, err, remaining)
	}
}

// TestCluster_Cordon: `petrel cluster cordon N` keeps new replicas off broker N —
// created topics, added partitions — and a replication factor only N could reach is
// refused naming the cordon; replicas already on N stay; uncordon lifts it.
func TestCluster_Cordon(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	c.CreateTopicRF(t, "before", 3, 3, nil)
	if code, out, stderr := petrel("cluster", "cordon", "2", bs); code != 0 || out != "Broker 2 cordoned: no new replicas are placed on it.\n" {
		t.Fatalf("cordon 2: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr := petrel("configs", "describe", "--entity-type", "brokers", "--entity-name", "2", bs)
	if code != 0 || !strings.Contains(out, "cordoned.log.dirs=*") {
		t.Fatalf("configs describe of broker 2: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	ldReq := kmsg.NewPtrDescribeLogDirsRequest()
	resp, err := c.RequestTo(testContext(t), t, 2, ldReq)
	if err != nil || len(resp.(*kmsg.DescribeLogDirsResponse).Dirs) != 1 || !resp.(*kmsg.DescribeLogDirsResponse).Dirs[0].IsCordoned {
		t.Fatalf("DescribeLogDirs of broker 2 does not report its log directory cordoned: %v %+v", err, resp)
	}
	adm := c.Admin(t)
	if _, err := adm.CreateTopic(testContext(t), 6, 2, nil, "after"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreatePartitions(testContext(t), 4, "before"); err != nil {
		t.Fatal(err)
	}
	im := c.WaitConverged()
	for _, name := range []string{"after", "before"} {
		for _, p := range im.Topics[name].Partitions {
			if name == "before" && p.ID < 3 {
				if !slices.Contains(p.Replicas, 2) {
					t.Fatalf("%s-%d lost its replica on broker 2: %v", name, p.ID, p.Replicas)
				}
				continue
			}
			if slices.Contains(p.Replicas, 2) {
				t.Fatalf("%s-%d was placed on cordoned broker 2: %v", name, p.ID, p.Replicas)
			}
		}
	}
	r := c.createTopicVia(t, 0, "needs-three", 1, 3, nil)
	if r.ErrorCode != kerr.InvalidReplicationFactor.Code || !strings.Contains(deref(r.ErrorMessage), "not cordoned (1 cordoned)") {
		t.Fatalf("rf 3 with broker 2 cordoned: %v %q", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	if code, _, stderr := petrel("cluster", "uncordon", "2", bs); code != 0 {
		t.Fatalf("uncordon 2: exit %d, stderr %q", code, stderr)
	}
	if r := c.createTopicVia(t, 0, "needs-three", 1, 3, nil); r.ErrorCode != 0 {
		t.Fatalf("rf 3 after uncordon: %v %q", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
}
