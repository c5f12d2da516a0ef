package integration

// Cluster formation: 3 and 5 voters, and 3 voters with 2 non-voters. Every node is a
// broker; the Raft leader is the controller.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestCluster_ThreeVoters(t *testing.T) {
	t.Parallel()
	testVoters(t, 3)
}

func TestCluster_FiveVoters(t *testing.T) {
	t.Parallel()
	testVoters(t, 5)
}

// testVoters checks an n-voter cluster: the Raft configuration, every broker registered
// and unfenced everywhere, one agreed controller, and a topic created through a node
// that is not the controller placed by Kafka's rule and visible on every node.
func testVoters(t *testing.T, n int) {
	c := StartCluster(t, n)
	all := ids(0, n)
	ctrl := c.Controller()
	t.Logf("controller: node-%d, epoch %d", ctrl, c.Node(ctrl).ControllerEpoch())

	for i := range n {
		voters, nonvoters, err := c.Node(i).RaftServers()
		if err != nil {
			t.Fatalf("node-%d: raft servers: %v", i, err)
		}
		slices.Sort(voters)
		if !slices.Equal(voters, all) || len(nonvoters) != 0 {
			t.Fatalf("node-%d: raft voters %v non-voters %v, expected voters %v", i, voters, nonvoters, all)
		}
	}
	im := c.WaitConverged()
	if im.ClusterID == "" || !slices.Equal(im.brokerIDs(), all) || !slices.Equal(im.unfencedBrokerIDs(), all) {
		t.Fatalf("image: cluster id %q, brokers %v, unfenced %v; expected all of %v", im.ClusterID, im.brokerIDs(), im.unfencedBrokerIDs(), all)
	}
	// Every node answers Metadata with the same brokers and controller.
	testwait.For(t, convergeTimeout, func() error {
		ctrl, err := c.agreedController()
		if err != nil {
			return err
		}
		epoch := c.Node(ctrl).ControllerEpoch()
		for i := range n {
			resp := c.metadataVia(t, i, nil, false)
			if got := metadataBrokerIDs(resp); !slices.Equal(got, all) || resp.ControllerID != int32(ctrl) || deref(resp.ClusterID) != im.ClusterID {
				return fmt.Errorf("node-%d: Metadata brokers %v controller %d cluster %q", i, got, resp.ControllerID, deref(resp.ClusterID))
			}
			if e := c.Node(i).ControllerEpoch(); e != epoch {
				return fmt.Errorf("node-%d is at controller epoch %d, the controller at %d", i, e, epoch)
			}
		}
		return nil
	})

	// 2n partitions, so that the follower shift grows once; RF 3.
	other := (c.Controller() + 1) % n
	topic := fmt.Sprintf("voters-%d", n)
	c.mustCreateTopicVia(t, other, topic, int32(2*n), 3, nil)
	im = c.WaitConverged()
	tp, ok := im.Topics[topic]
	if !ok || len(tp.Partitions) != 2*n {
		t.Fatalf("topic %s after creation via node-%d: %s", topic, other, tp)
	}
	if err := checkBalancedPlacement(tp, all, 3); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		resp := c.metadataVia(t, i, []string{topic}, false)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 2*n {
			t.Fatalf("node-%d: Metadata for %s: %+v", i, topic, resp.Topics)
		}
	}
}

// TestCluster_ThreeVotersTwoNonVoters: nodes 3 and 4 join as Raft non-voters, hold the
// same image as the voters, serve Metadata and forward admin requests; killing one
// changes nothing for the quorum.
func TestCluster_ThreeVotersTwoNonVoters(t *testing.T) {
	c := StartCluster(t, 5, WithVoters(3))
	all := ids(0, 5)
	checkServers := func(nodes []int) error {
		for _, i := range nodes {
			voters, nonvoters, err := c.Node(i).RaftServers()
			if err != nil {
				return fmt.Errorf("node-%d: %v", i, err)
			}
			slices.Sort(voters)
			slices.Sort(nonvoters)
			if !slices.Equal(voters, ids(0, 3)) || !slices.Equal(nonvoters, ids(3, 5)) {
				return fmt.Errorf("node-%d: raft voters %v non-voters %v, expected [0 1 2] and [3 4]", i, voters, nonvoters)
			}
		}
		return nil
	}
	testwait.For(t, convergeTimeout, func() error { return checkServers([]int{0, 1, 2, 3, 4}) })
	ctrl := c.Controller()
	if ctrl > 2 {
		t.Fatalf("controller is node-%d, a non-voter", ctrl)
	}
	epoch := c.Node(ctrl).ControllerEpoch()

	// A topic created through a non-voter (forwarded to the controller).
	c.mustCreateTopicVia(t, 3, "observed", 5, 3, map[string]string{"retention.ms": "3600000"})
	im := c.WaitConverged() // the non-voters' images equal the voters'
	if !slices.Equal(im.unfencedBrokerIDs(), all) {
		t.Fatalf("unfenced brokers %v, expected %v", im.unfencedBrokerIDs(), all)
	}
	if err := checkBalancedPlacement(im.Topics["observed"], all, 3); err != nil {
		t.Fatal(err)
	}
	if got := im.topicConfigs("observed"); got["retention.ms"] != "3600000" {
		t.Fatalf("configs of observed: %v", got)
	}
	for _, i := range []int{3, 4} {
		resp := c.metadataVia(t, i, nil, false)
		var names []string
		for _, tp := range resp.Topics {
			names = append(names, deref(tp.Topic))
		}
		if got := metadataBrokerIDs(resp); !slices.Equal(got, all) || resp.ControllerID != int32(ctrl) || !slices.Equal(names, []string{"observed"}) {
			t.Fatalf("non-voter node-%d: Metadata brokers %v controller %d topics %v", i, got, resp.ControllerID, names)
		}
	}

	// Kill a non-voter: the quorum keeps its members and a voter as leader, and
	// metadata writes go on; the dead broker is fenced like any other.
	killed := time.Now()
	c.Kill(4)
	if got := c.Controller(); got > 2 {
		t.Fatalf("node-%d, a non-voter, is controller", got)
	} else if e := c.Node(got).ControllerEpoch(); got != ctrl || e != epoch {
		t.Logf("note: controller node-%d epoch %d -> node-%d epoch %d (an election the non-voter's death did not need)", ctrl, epoch, got, e)
	}
	if err := checkServers([]int{0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.mustCreateTopicVia(t, 3, "after-observer-death", 2, 2, nil)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("creating a topic took %s after a non-voter died", d)
	}
	c.waitFenced(t, 4, killed, 0)
	im = c.WaitConverged()
	if _, ok := im.Topics["after-observer-death"]; !ok {
		t.Fatalf("after-observer-death missing: %v", im.topicNames())
	}
	if r := c.createTopicVia(t, 0, "observed", 1, 1, nil); r.ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("creating observed again: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
