package broker

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testCluster is n brokers in this process; voters lists which ids vote.
type testCluster struct {
	t       testing.TB
	brokers []*Broker
	configs []Config
}

func startTestCluster(t testing.TB, n, voters int, props map[string]string) *testCluster {
	t.Helper()
	c := &testCluster{t: t}
	var voterList []Voter
	var kafkaLns, raftLns []net.Listener
	for i := 0; i < n; i++ {
		kl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		rl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		kafkaLns, raftLns = append(kafkaLns, kl), append(raftLns, rl)
		if i < voters {
			voterList = append(voterList, Voter{ID: int32(i), Addr: rl.Addr().String()})
		}
	}
	for i := 0; i < n; i++ {
		cfg := Config{
			NodeID: int32(i), DataDir: t.TempDir(), Voters: voterList, Properties: props,
			KafkaListener: kafkaLns[i], RaftListener: raftLns[i],
			Listen: kafkaLns[i].Addr().String(), RaftListen: raftLns[i].Addr().String(),
			JoinAddrs: []string{kafkaLns[0].Addr().String()},
			Logger:    hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, fmt.Sprintf("node-%d ", i)), Level: hclog.Info}),
		}
		b, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.brokers, c.configs = append(c.brokers, b), append(c.configs, cfg)
	}
	t.Cleanup(func() {
		for _, b := range c.brokers {
			if b != nil {
				b.Shutdown(context.Background())
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, b := range c.brokers {
		if err := b.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// notController returns a broker that is not the controller now (the first broker when
// all are).
func (c *testCluster) notController() *Broker {
	for _, b := range c.brokers {
		if b != nil && !b.IsController() {
			return b
		}
	}
	return c.brokers[0]
}

func (c *testCluster) seeds() []string {
	var out []string
	for _, b := range c.brokers {
		if b != nil {
			out = append(out, b.Addr().String())
		}
	}
	return out
}

func TestThreeNodeClusterBasics(t *testing.T) {
	c := startTestCluster(t, 3, 3, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Every broker agrees on the controller and sees all three brokers unfenced.
	testwait.For(t, 20*time.Second, func() error {
		ctrl := c.brokers[0].ControllerID()
		for _, b := range c.brokers {
			if b.ControllerID() != ctrl || ctrl < 0 {
				return fmt.Errorf("controller ids differ")
			}
			if got := b.Image().UnfencedBrokerIDs(); !slices.Equal(got, []int32{0, 1, 2}) {
				return fmt.Errorf("broker %d sees unfenced %v", b.NodeID(), got)
			}
		}
		return nil
	})
	// Create through a broker that is not the controller: it is forwarded.
	ctrl := c.brokers[0].ControllerID()
	other := c.brokers[(ctrl+1)%3]
	adm := newAdmin(t, other)
	resp, err := adm.CreateTopic(testContext(t), 4, 3, nil, "t")
	if err != nil || resp.Err != nil {
		t.Fatalf("create via non-controller: %v %v", err, resp.Err)
	}
	testwait.For(t, 20*time.Second, func() error {
		for _, b := range c.brokers {
			tp := b.Image().Topic("t")
			if tp == nil || len(tp.Partitions) != 4 {
				return fmt.Errorf("broker %d has not applied the topic", b.NodeID())
			}
		}
		return nil
	})
	leaders := map[int32]int{}
	for _, p := range c.brokers[0].Image().Topic("t").Partitions {
		leaders[p.Leader]++
		if len(p.Replicas) != 3 || len(p.ISR) != 3 {
			t.Fatalf("partition %+v", p)
		}
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders not spread: %v", leaders)
	}
}

// restart starts node i again on its data dir and addresses.
func (c *testCluster) restart(i int) *Broker {
	c.t.Helper()
	cfg := c.configs[i]
	var err error
	if cfg.KafkaListener, err = net.Listen("tcp", cfg.Listen); err != nil {
		c.t.Fatal(err)
	}
	if cfg.RaftListener, err = net.Listen("tcp", cfg.RaftListen); err != nil {
		c.t.Fatal(err)
	}
	b, err := Start(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.brokers[i] = b
	return b
}
