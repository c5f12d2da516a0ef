package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lineCounter counts the log lines that contain every one of its words.
type lineCounter struct {
	words []string
	mu    sync.Mutex
	n     int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(string(p), "\n") {
		hit := line != ""
		for _, w := range c.words {
			hit = hit && strings.Contains(line, w)
		}
		if hit {
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
		}
	}
	return len(p), nil
}

func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// fastQuorumProps: elections take about half a second (the quorum defaults, stated),
// so that a storm of them shows within a few seconds; sessions end after two.
func fastQuorumProps() map[string]string {
	return map[string]string{
		"controller.quorum.fetch.timeout.ms":    "500",
		"controller.quorum.election.timeout.ms": "500",
		"broker.session.timeout.ms":             "2000",
		"broker.heartbeat.interval.ms":          "250",
	}
}

// leaderChanges counts the leader changes r reports from now on.
func leaderChanges(t *testing.T, r *raft.Raft) *atomic.Int64 {
	var n atomic.Int64
	ch := make(chan raft.Observation, 64)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(obs)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ch:
				n.Add(1)
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		r.DeregisterObserver(obs)
		close(done)
		wg.Wait()
	})
	return &n
}

// injectedENOSPC is the fault the tests give the metadata store's log writes.
var injectedENOSPC = fmt.Errorf("injected: %w", syscall.ENOSPC)

// TestMetadataStoreFailure_SoleVoterStepsDownOnce: the only voter's raft.db refuses
// appends (a full file system). The node steps down once and stays down for a window of
// many election timeouts (hashicorp/raft alone lost and won leadership again about once
// a second); it says so in one ERROR line, /readyz answers 503 with the reason, the
// metric is 1, and client requests are refused.
func TestMetadataStoreFailure_SoleVoterStepsDownOnce(t *testing.T) {
	failedLines := &lineCounter{words: []string{"[ERROR]", "metadata store failed: Raft stopped"}}
	var out io.Writer = io.MultiWriter(newTestLogWriter(t, "node-0 "), failedLines)
	metricsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(Config{
		NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: fastQuorumProps(),
		MetricsListener: metricsLn,
		Logger:          hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Info}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	ctx := testContext(t)
	if err := b.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	changes := leaderChanges(t, b.raft.raft)
	term := b.ControllerEpoch()
	b.raft.meta.fault.Store(&injectedENOSPC)

	// A metadata write: the controller's append fails.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, _ = kadm.NewClient(newClient(t, b, kgo.RetryTimeout(time.Second))).CreateTopic(cctx, 1, 1, nil, "after-the-failure")
	cancel()
	testwait.For(t, 10*time.Second, func() error {
		if b.metadataStoreFailure() == nil {
			return fmt.Errorf("the store's failure is not recorded")
		}
		return nil
	})

	// Eight election timeouts: an election storm would change the leader several times.
	window := time.NewTimer(4 * time.Second)
	<-window.C
	if n, terms := changes.Load(), b.ControllerEpoch()-term; n > 1 || terms > 0 {
		t.Fatalf("%d leader changes and %d new terms after the metadata store failed; want one step-down and none", n, terms)
	}
	if st := b.raft.raft.State(); st == raft.Leader || st == raft.Candidate {
		t.Fatalf("Raft is %v on a node whose metadata store failed", st)
	}
	if n := failedLines.count(); n != 1 {
		t.Fatalf("%d ERROR lines about the failed metadata store, want 1", n)
	}
	resp, err := http.Get("http://" + metricsLn.Addr().String() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "metadata store failed") {
		t.Fatalf("/readyz = %d %q, want 503 naming the failed metadata store", resp.StatusCode, body)
	}
	resp, err = http.Get("http://" + metricsLn.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "\npetrel_metadata_store_offline 1\n") {
		t.Fatal("petrel_metadata_store_offline is not 1")
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(newClient(t, b, kgo.RetryTimeout(time.Second))).ListTopics(lctx); err == nil {
		t.Fatal("a client request was answered from the image of a node whose metadata store failed")
	}
}

// TestMetadataStoreFailure_ControllerHandsOver: the controller of three voters cannot
// append to its raft.db. It steps down once and stops voting; the two others elect a
// controller that keeps its term for many election timeouts (no storm), finish the
// admin request that found the failure, and fence the failed node once its session
// expires.
func TestMetadataStoreFailure_ControllerHandsOver(t *testing.T) {
	c := startTestCluster(t, 3, 3, fastQuorumProps())
	t.Cleanup(func() { // before the cluster's graceful stops: the last voter's waits out its timeout
		for _, b := range c.brokers {
			b.Kill()
		}
	})
	var failed *Broker
	testwait.For(t, 10*time.Second, func() error {
		for _, b := range c.brokers {
			if b.IsController() {
				failed = b
				return nil
			}
		}
		return fmt.Errorf("no controller")
	})
	changes := leaderChanges(t, failed.raft.raft)
	var others []*Broker
	for _, b := range c.brokers {
		if b != failed {
			others = append(others, b)
		}
	}
	failed.raft.meta.fault.Store(&injectedENOSPC)

	// An admin request sent to the failed controller is refused (NOT_CONTROLLER, then the
	// connection closed); sent again, it reaches the next controller.
	ctx := testContext(t)
	start := time.Now()
	testwait.For(t, 20*time.Second, func() error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		adm := kadm.NewClient(newClient(t, others[0]))
		defer adm.Close()
		resp, err := adm.CreateTopic(cctx, 3, 2, nil, "created-after-the-failure")
		if err == nil && resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			err = resp.Err
		}
		return err
	})
	t.Logf("topic created %s after the failure", time.Since(start).Round(time.Millisecond))
	var controller int32
	testwait.For(t, 10*time.Second, func() error {
		controller = others[0].ControllerID()
		if controller < 0 || controller == failed.NodeID() || others[1].ControllerID() != controller {
			return fmt.Errorf("controllers seen: %d and %d", controller, others[1].ControllerID())
		}
		return nil
	})
	terms := []uint64{others[0].ControllerEpoch(), others[1].ControllerEpoch()}
	window := time.NewTimer(4 * time.Second)
	<-window.C
	for i, b := range others {
		if b.ControllerID() != controller || b.ControllerEpoch() != terms[i] {
			t.Fatalf("node %d: controller %d in term %d, was %d in term %d: elections after the hand-over",
				b.NodeID(), b.ControllerID(), b.ControllerEpoch(), controller, terms[i])
		}
	}
	if n := changes.Load(); n > 1 {
		t.Fatalf("the failed node saw %d leader changes, want one step-down", n)
	}
	if err := failed.readiness(); err == nil || !strings.Contains(err.Error(), "metadata store failed") {
		t.Fatalf("readiness of the failed node: %v", err)
	}
	testwait.For(t, 10*time.Second, func() error {
		if br, ok := others[0].Image().Brokers[failed.NodeID()]; !ok || !br.Fenced {
			return fmt.Errorf("node %d is not fenced", failed.NodeID())
		}
		return nil
	})

	// Stopped (no controlled shutdown to wait for) and restarted with a writable store,
	// the node rejoins: its raft.db kept every entry it acknowledged, the leader sends
	// the rest.
	start = time.Now()
	if err := failed.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown of the failed node: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown of the failed node took %s", d)
	}
	restarted := c.restart(slices.Index(c.brokers, failed))
	if err := restarted.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, func() error {
		if restarted.Image().Topics["created-after-the-failure"] == nil {
			return fmt.Errorf("the restarted node's image lacks the topic created while it was down")
		}
		if br := others[0].Image().Brokers[restarted.NodeID()]; br.Fenced {
			return fmt.Errorf("node %d is fenced", restarted.NodeID())
		}
		return nil
	})
}
