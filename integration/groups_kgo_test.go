package integration

// Consumer groups through franz-go's kgo with its defaults (the cooperative-sticky
// balancer, autocommit every 5 s and on revoke), and kadm for the simple consumer.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startKgoMember is a startMember for kgo: a ConsumerGroup client polling in its own
// goroutine, with extra options appended.
func startKgoMember(extra ...kgo.Opt) startMember {
	return func(t testing.TB, c *Cluster, group, topic, clientID string) *groupMember {
		t.Helper()
		ks := &killSwitch{}
		opts := append([]kgo.Opt{
			kgo.SeedBrokers(c.Addrs()...),
			kgo.ClientID(clientID),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(groupSessionTimeout),
			kgo.HeartbeatInterval(groupHeartbeat),
			kgo.Dialer(ks.DialContext),
		}, extra...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		m := &groupMember{clientID: clientID, generation: func() int32 {
			_, gen := cl.GroupMetadata()
			return gen
		}}
		runKgoMember(t, m, cl, ks, nil)
		return m
	}
}

// runKgoMember polls cl into m in its own goroutine and sets m's leave (Close: commit
// and leave) and kill (every connection cut, then onKill, if set, once polling
// stopped, and a Close that gives up leaving at once).
func runKgoMember(t testing.TB, m *groupMember, cl *kgo.Client, ks *killSwitch, onKill func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { m.add(r.Partition, r.Offset, string(r.Value)) })
		}
	}()
	m.setStop(t, func() {
		cancel()
		wg.Wait()
		cl.Close() // leaves the group, committing first
	}, func() {
		ks.kill()
		cancel()
		wg.Wait()
		if onKill != nil {
			onKill()
		}
		// Give up leaving at once: the connections are gone.
		leaveCtx, leaveCancel := context.WithCancel(context.Background())
		leaveCancel()
		cl.LeaveGroupContext(leaveCtx)
		cl.Close()
	})
}

// TestGroupsKgo_SplitRebalanceLeaveExpire runs the split scenario with kgo's default
// balancer, cooperative-sticky (its incremental rebalances need only that the group
// protocol carry the members' metadata).
func TestGroupsKgo_SplitRebalanceLeaveExpire(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	runSplitScenario(t, c, "kgo", startKgoMember())
}

// TestGroupsKgo_EagerBalancers runs the split scenario with the eager range and sticky
// balancers.
func TestGroupsKgo_EagerBalancers(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	t.Run("range", func(t *testing.T) {
		runSplitScenario(t, c, "kgo-range", startKgoMember(kgo.Balancers(kgo.RangeBalancer())))
	})
	t.Run("sticky", func(t *testing.T) {
		runSplitScenario(t, c, "kgo-sticky", startKgoMember(kgo.Balancers(kgo.StickyBalancer())))
	})
}

// produceN writes n records to partition 0 of topic, valued "value-i".
func produceN(t *testing.T, c *Cluster, topic string, n int) {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("value-%d", i))}
	}
	if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// committedOffset is group's committed offset of partition 0 of topic (-1: none).
func committedOffset(t *testing.T, c *Cluster, group, topic string) int64 {
	t.Helper()
	offsets, err := c.Admin(t).FetchOffsets(testContext(t), group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	o, ok := offsets.Lookup(topic, 0)
	if !ok {
		return -1
	}
	if o.Err != nil {
		t.Fatalf("fetch offsets of %s: %s-0: %v", group, topic, o.Err)
	}
	return o.At
}

// firstGroupOffset joins group with a fresh kgo member and returns the offset of the
// first record it receives.
func firstGroupOffset(t *testing.T, c *Cluster, group, topic string) int64 {
	t.Helper()
	cl := c.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	defer cl.Close()
	ctx := testContext(t)
	for {
		fs := cl.PollRecords(ctx, 1)
		if err := fs.Err0(); err != nil {
			t.Fatalf("new member of %s: %v", group, err)
		}
		if recs := fs.Records(); len(recs) > 0 {
			return recs[0].Offset
		}
	}
}

// TestGroupsKgo_CommitAndResume consumes 500 of 1000 records in a group, commits,
// closes; a new member of the group starts at 500 exactly.
func TestGroupsKgo_CommitAndResume(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	const topic, group = "kgo-resume", "kgo-resume-group"
	c.CreateTopic(t, topic, 1, nil)
	produceN(t, c, topic, 1000)

	cl := c.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	ctx := testContext(t)
	var got []*kgo.Record
	for len(got) < 500 {
		fs := cl.PollRecords(ctx, 500-len(got))
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", len(got), err)
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		if r.Offset != int64(i) {
			t.Fatalf("record %d at offset %d", i, r.Offset)
		}
	}
	if err := cl.CommitRecords(ctx, got[len(got)-1]); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cl.Close()
	if got := committedOffset(t, c, group, topic); got != 500 {
		t.Fatalf("committed offset %d, want 500", got)
	}
	if first := firstGroupOffset(t, c, group, topic); first != 500 {
		t.Fatalf("a new member started at %d, want 500", first)
	}
}

// TestGroupsKgo_SimpleConsumerCommit commits as a simple consumer (generation -1, no
// member id: kadm.CommitOffsets), reads it back, and a group member then starts there.
// A simple consumer's commit to a group with live members is refused as Kafka refuses
// it (UNKNOWN_MEMBER_ID).
func TestGroupsKgo_SimpleConsumerCommit(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	const topic, group = "kgo-simple", "kgo-simple-group"
	c.CreateTopic(t, topic, 1, nil)
	produceN(t, c, topic, 1000)
	adm := c.Admin(t)
	ctx := testContext(t)
	offsets := kadm.Offsets{}
	offsets.AddOffset(topic, 0, 500, -1)
	resps, err := adm.CommitOffsets(ctx, group, offsets)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		t.Fatalf("simple consumer commit: %v", err)
	}
	if got := committedOffset(t, c, group, topic); got != 500 {
		t.Fatalf("committed offset %d, want 500", got)
	}
	if first := firstGroupOffset(t, c, group, topic); first != 500 {
		t.Fatalf("a group member started at %d, want 500", first)
	}
	// Moving on again as a simple consumer works while the group is empty.
	offsets.AddOffset(topic, 0, 700, -1)
	if resps, err := adm.CommitOffsets(ctx, group, offsets); err != nil || resps.Error() != nil {
		t.Fatalf("second simple commit: %v %v", err, resps.Error())
	}
	if got := committedOffset(t, c, group, topic); got != 700 {
		t.Fatalf("committed offset %d, want 700", got)
	}

	// With a member in the group, the simple consumer is not a member of it.
	member := startKgoMember()(t, c, group, topic, "kgo-simple-member")
	defer member.leave()
	waitSplit(t, c, group, topic, 1, "kgo-simple-member")
	offsets.AddOffset(topic, 0, 900, -1)
	resps, err = adm.CommitOffsets(ctx, group, offsets)
	if err != nil {
		t.Fatalf("simple commit to a Stable group: %v", err)
	}
	if r, _ := resps.Lookup(topic, 0); !errors.Is(r.Err, kerr.UnknownMemberID) {
		t.Fatalf("simple commit to a Stable group: %v, want UNKNOWN_MEMBER_ID", r.Err)
	}
}

// TestGroupsKgo_StaticMembership restarts a static member (group.instance.id) within
// its session timeout: it gets its partitions back, the generation is unchanged, and
// the other member sees no rebalance.
func TestGroupsKgo_StaticMembership(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	const topic, group = "kgo-static", "kgo-static-group"
	c.CreateTopic(t, topic, 4, nil)
	// Long sessions: the restart must fall well within it.
	static := func(instance string) startMember {
		return startKgoMember(kgo.InstanceID(instance), kgo.SessionTimeout(20*time.Second))
	}
	type revocations struct {
		mu    sync.Mutex
		count int
	}
	var revoked revocations
	// a counts its revocations: a rebalance of the cooperative-sticky balancer
	// that moves nothing revokes nothing, so a revoked or lost callback after b's
	// arrival would mean a rebalance took partitions away.
	count := func(context.Context, *kgo.Client, map[string][]int32) {
		revoked.mu.Lock()
		revoked.count++
		revoked.mu.Unlock()
	}
	a := startKgoMember(kgo.InstanceID("static-a"), kgo.SessionTimeout(20*time.Second),
		kgo.OnPartitionsRevoked(count), kgo.OnPartitionsLost(count))(t, c, group, topic, "kgo-static-a")
	waitSplit(t, c, group, topic, 4, "kgo-static-a")
	b := static("static-b")(t, c, group, topic, "kgo-static-b")
	before := waitSplit(t, c, group, topic, 4, "kgo-static-a", "kgo-static-b")
	gen := a.generation()
	if gen < 1 || b.generation() != gen {
		t.Fatalf("generations: a %d, b %d", gen, b.generation())
	}
	revoked.mu.Lock()
	revokedBefore := revoked.count
	revoked.mu.Unlock()

	// Static members do not send LeaveGroup on close; the new incarnation takes the
	// old one's place with its assignment.
	b.leave()
	b2 := static("static-b")(t, c, group, topic, "kgo-static-b")
	testwait.For(t, groupWait, func() error {
		_, a, err := describeAssignment(testContext(t), c.Admin(t), group, topic)
		if err != nil {
			return err
		}
		if !slices.Equal(a["kgo-static-b"], before["kgo-static-b"]) || !slices.Equal(a["kgo-static-a"], before["kgo-static-a"]) {
			return fmt.Errorf("assignment %v, before the restart %v", a, before)
		}
		return nil
	})
	testwait.For(t, groupWait, func() error {
		if got := b2.generation(); got != gen {
			return fmt.Errorf("the restarted member is in generation %d, want %d", got, gen)
		}
		return nil
	})
	t.Logf("generation %d before and after the static member's restart; assignment %v", gen, before)
	if got := a.generation(); got != gen {
		t.Fatalf("generation %d after the static member's restart, was %d: the group rebalanced", got, gen)
	}
	checkPhase(t, c, group, topic, "static", 4, a, b2)
	revoked.mu.Lock()
	defer revoked.mu.Unlock()
	if revoked.count != revokedBefore {
		t.Fatalf("the other member lost partitions during the restart (%d revocations)", revoked.count-revokedBefore)
	}
}
