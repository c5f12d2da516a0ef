package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
)

// memQuorum is a one-node metadata log in memory: Apply decodes the entry and applies
// it to the image, as the FSM would.
type memQuorum struct {
	leader   atomic.Bool
	barriers atomic.Int32
	mu       sync.Mutex
	image    *metadata.Image
	changed  chan struct{} // never closed: leadership is set before Run
}

func newMemQuorum(t *testing.T, records ...metadata.Record) *memQuorum {
	t.Helper()
	im := metadata.NewImage()
	if len(records) > 0 {
		var err error
		if im, err = im.Apply(1, records); err != nil {
			t.Fatal(err)
		}
	}
	return &memQuorum{image: im, changed: make(chan struct{})}
}

func (q *memQuorum) IsLeader() bool                 { return q.leader.Load() }
func (q *memQuorum) LeaderID() int32                { return -1 }
func (q *memQuorum) Term() uint64                   { return 1 }
func (q *memQuorum) LeaderChanged() <-chan struct{} { return q.changed }
func (q *memQuorum) LastContact() time.Time         { return time.Time{} }
func (q *memQuorum) Barrier(time.Duration) error    { q.barriers.Add(1); return nil }

func (q *memQuorum) Image() *metadata.Image {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.image
}

func (q *memQuorum) Apply(data []byte, _ time.Duration) (*metadata.Image, error) {
	if !q.IsLeader() {
		return nil, fmt.Errorf("%w: lost leadership", ErrNotController)
	}
	records, err := metadata.DecodeRecords(data)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	next, err := q.image.Apply(q.image.Offset+1, records)
	q.image = next
	return next, err
}

// startController runs a controller over q until the test ends.
func startController(t *testing.T, q *memQuorum, sessionTimeout time.Duration, opts ...func(*Config)) *Controller {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	cfg := Config{
		NodeID:         0,
		Quorum:         q,
		Image:          q.Image,
		Stop:           stop,
		Go:             func(_ string, fn func()) { wg.Add(1); go func() { defer wg.Done(); fn() }() },
		SessionTimeout: sessionTimeout,
		UncleanAllowed: func(*metadata.Image) func(string) bool { return func(string) bool { return false } },
		Probe:          func(*metadata.Broker) ProbeResult { return ProbeConnected },
		ShuttingDown:   func() bool { return false },
	}
	for _, o := range opts {
		o(&cfg)
	}
	c := New(cfg)
	wg.Add(1)
	go func() { defer wg.Done(); c.Run() }()
	t.Cleanup(func() { close(stop); wg.Wait() })
	return c
}

// startActiveController runs an active controller (sessions of a minute) over a log of
// records; ctx ends with the test, at most 10 s later.
func startActiveController(t *testing.T, records []metadata.Record, opts ...func(*Config)) (*memQuorum, *Controller, context.Context) {
	t.Helper()
	q := newMemQuorum(t, records...)
	q.leader.Store(true)
	c := startController(t, q, time.Minute, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return q, c, ctx
}

// elrMinISR2 turns eligible leader replicas on, with min.insync.replicas 2 for every topic.
func elrMinISR2(cfg *Config) {
	cfg.ELREnabled = func(*metadata.Image) bool { return true }
	cfg.MinISR = func(*metadata.Image) func(string) int { return func(string) int { return 2 } }
}

// A node that is not the leader takes no decision: NOT_CONTROLLER, and nothing is
// written.
func TestDoOffTheLeaderIsNotController(t *testing.T) {
	q := newMemQuorum(t)
	c := startController(t, q, time.Minute)
	_, err := c.Do(context.Background(), func(*metadata.Image) ([]metadata.Record, error) {
		t.Error("a plan ran on a node that is not the leader")
		return nil, nil
	})
	if !errors.Is(err, ErrNotController) {
		t.Fatalf("Do off the leader: %v, want ErrNotController", err)
	}
	if q.Image().Offset != 0 {
		t.Fatalf("something was written: offset %d", q.Image().Offset)
	}
}

// The first decision of a term comes after a barrier and the cluster id; its records
// are applied, and a plan's error is returned without writing.
func TestDoRunsAfterTheTermStarts(t *testing.T) {
	q := newMemQuorum(t)
	q.leader.Store(true)
	c := startController(t, q, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	im, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		if im.ClusterID == "" {
			t.Error("a decision ran before the term wrote the cluster id")
		}
		return []metadata.Record{metadata.RegisterBrokerRecord{BrokerID: 3}}, nil
	})
	if err != nil || im.Brokers[3] == nil {
		t.Fatalf("Do: image %v, err %v; want broker 3 registered", im, err)
	}
	if q.barriers.Load() == 0 {
		t.Fatal("the term started without a barrier")
	}
	refused := errors.New("refused")
	offset := q.Image().Offset
	if _, err := c.Do(ctx, func(*metadata.Image) ([]metadata.Record, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Fatalf("plan error: %v", err)
	}
	if q.Image().Offset != offset {
		t.Fatal("a refused plan wrote an entry")
	}
}

// A broker that stops heartbeating is fenced once its session expires; one that keeps
// heartbeating stays unfenced.
func TestExpiredSessionIsFenced(t *testing.T) {
	q := newMemQuorum(t, metadata.RegisterBrokerRecord{BrokerID: 1}, metadata.RegisterBrokerRecord{BrokerID: 2})
	q.leader.Store(true)
	const timeout = time.Second // far above the poll interval of a loaded machine
	c := startController(t, q, timeout)
	testwait.Until(t, 10*time.Second, "broker 1 fenced", func() bool {
		c.Sessions().Heartbeat(2, int64(q.Image().Offset), false, time.Now())
		return q.Image().Brokers[1].Fenced
	})
	if q.Image().Brokers[2].Fenced {
		t.Fatal("a heartbeating broker was fenced")
	}
}

// The automatic leader rebalance moves a leadership back to its preferred replica once
// a check is due, at most Rebalance.MaxRecords partitions per check.
func TestRebalanceElectsPreferredLeaders(t *testing.T) {
	topic := metadata.UuidFromBytes([16]byte{7})
	q := newMemQuorum(t,
		metadata.RegisterBrokerRecord{BrokerID: 1}, metadata.RegisterBrokerRecord{BrokerID: 2},
		metadata.TopicRecord{Name: "t", TopicID: topic},
		metadata.PartitionRecord{TopicID: topic, PartitionID: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2},
		metadata.PartitionRecord{TopicID: topic, PartitionID: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2},
		metadata.PartitionRecord{TopicID: topic, PartitionID: 2, Replicas: []int32{2, 1}, ISR: []int32{1, 2}, Leader: 2},
	)
	q.leader.Store(true)
	c := startController(t, q, time.Minute, func(cfg *Config) {
		cfg.Rebalance = Rebalance{Enabled: true, Interval: 50 * time.Millisecond, ImbalancePercentage: 10, MaxRecords: 1}
	})
	leaders := func() []int32 {
		var out []int32
		for _, p := range q.Image().Topic("t").Partitions {
			out = append(out, p.Leader)
		}
		return out
	}
	testwait.Until(t, 10*time.Second, "partitions 0 and 1 led by their preferred replica", func() bool {
		l := leaders()
		return l[0] == 1 && l[1] == 1
	})
	if l := leaders(); l[2] != 2 {
		t.Fatalf("partition 2 moved off its preferred leader: leaders %v", l)
	}
	if n := c.LeaderRebalanceChecks(); n < 2 {
		t.Fatalf("%d checks for two elections of at most one partition each", n)
	}
}

// An admin answer waits until every live broker reported the change applied; a fenced
// broker is not waited for.
func TestAwaitAppliedWaitsForLiveBrokers(t *testing.T) {
	q := newMemQuorum(t, metadata.RegisterBrokerRecord{BrokerID: 1}, metadata.RegisterBrokerRecord{BrokerID: 2, Fenced: true})
	c := New(Config{Quorum: q, Image: q.Image, Stop: make(chan struct{}), SessionTimeout: time.Minute})
	now := time.Now()
	c.sessions.activate(q.Image(), now)
	c.sessions.Heartbeat(1, 4, false, now)
	done := make(chan struct{})
	go func() { c.AwaitApplied(context.Background(), 5); close(done) }()
	select {
	case <-done:
		t.Fatal("answered before broker 1 applied offset 5")
	case <-time.After(50 * time.Millisecond): // a short look for a premature answer
	}
	c.sessions.Heartbeat(1, 5, false, time.Now())
	select {
	case <-done:
	case <-time.After(adminVisibilityWait / 2):
		t.Fatal("still waiting after broker 1 reported offset 5")
	}
}

// Decisions run one at a time, each against the image that holds every decision before
// it (DESIGN.md C2): concurrent callers whose plans read the broker count and register
// the next id never plan together and never reuse an id.
func TestDoOneDecisionAtATime(t *testing.T) {
	q := newMemQuorum(t)
	q.leader.Store(true)
	c := startController(t, q, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const callers = 16
	var planning atomic.Int32
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
				if planning.Add(1) != 1 {
					t.Error("two plans ran at once")
				}
				defer planning.Add(-1)
				return []metadata.Record{metadata.RegisterBrokerRecord{BrokerID: int32(100 + len(im.Brokers))}}, nil
			})
			if err != nil {
				t.Errorf("Do: %v", err)
			}
		})
	}
	wg.Wait()
	if n := len(q.Image().Brokers); n != callers {
		t.Fatalf("%d brokers registered by %d decisions: a plan did not see the one before it", n, callers)
	}
}
