package integration

// Helpers of the KIP-848 consumer group tests (groups_consumer_test.go): franz-go kgo
// members on the consumer protocol (kgo.ServerSideBalancer, which makes kgo send
// ConsumerGroupHeartbeat once ApiVersions offers v1), and an ownership log fed by
// their assign, revoke and lose callbacks that fails the test the moment a partition
// is owned by two members.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ownership is who owns each partition of one topic, as the members' callbacks say. A
// member's callbacks run before it tells the coordinator it released a partition, so
// a partition given to a second member before the first let go shows as owned twice.
type ownership struct {
	mu     sync.Mutex
	owner  map[int32]string   // partition → member client id
	double []string           // every partition seen owned twice, described
	gained map[string][]int32 // every partition each member was ever assigned, in order
}

func newOwnership() *ownership {
	return &ownership{owner: map[int32]string{}, gained: map[string][]int32{}}
}

func (o *ownership) assigned(member string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gained[member] = append(o.gained[member], ps...)
	for _, p := range ps {
		if prev, ok := o.owner[p]; ok && prev != member {
			o.double = append(o.double, fmt.Sprintf("partition %d assigned to %s while %s owns it", p, member, prev))
		}
		o.owner[p] = member
	}
}

func (o *ownership) released(member string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.owner[p] == member {
			delete(o.owner, p)
		}
	}
}

// releaseAll forgets every partition of member (its process died).
func (o *ownership) releaseAll(member string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	maps.DeleteFunc(o.owner, func(_ int32, m string) bool { return m == member })
}

// split returns each member's partitions, sorted.
func (o *ownership) split() map[string][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]int32{}
	for p, m := range o.owner {
		out[m] = append(out[m], p)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// gainedBy returns every partition member was ever assigned, in order.
func (o *ownership) gainedBy(member string) []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.gained[member])
}

// check fails the test if any partition was ever owned twice.
func (o *ownership) check(t testing.TB) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.double) > 0 {
		t.Fatalf("partitions owned by two members: %v", o.double)
	}
}

// waitOwned waits until every partition 0..partitions-1 is owned by exactly one of
// members, each owning at least one, and the split is settled — no member owns more
// than one partition more than another, as every assignor these tests use ends —
// and returns the split. A member still revoking what the target gave to another
// owns more than its share, so an unsettled split is a rebalance in progress.
func (o *ownership) waitOwned(t testing.TB, partitions int32, members ...string) map[string][]int32 {
	t.Helper()
	return o.waitOwnedWithin(t, groupWait, partitions, members...)
}

// waitOwnedWithin is waitOwned waiting up to d.
func (o *ownership) waitOwnedWithin(t testing.TB, d time.Duration, partitions int32, members ...string) map[string][]int32 {
	t.Helper()
	var got map[string][]int32
	testwait.For(t, d, func() error {
		o.check(t)
		split := o.split()
		if ids := slices.Sorted(maps.Keys(split)); !slices.Equal(ids, slices.Sorted(slices.Values(members))) {
			return fmt.Errorf("owners %v, want %v", split, members)
		}
		n := 0
		for _, ps := range split {
			n += len(ps)
		}
		if n != int(partitions) {
			return fmt.Errorf("%d of %d partitions owned: %v", n, partitions, split)
		}
		least, most := int(partitions), 0
		for _, ps := range split {
			least, most = min(least, len(ps)), max(most, len(ps))
		}
		if most-least > 1 {
			return fmt.Errorf("rebalance in progress: %v", split)
		}
		got = split
		return nil
	})
	return got
}

// cgMember is one kgo consumer-protocol member.
type cgMember struct {
	*groupMember
	cl *kgo.Client
}

// startConsumerMember starts a consumer-protocol member clientID of group on topic,
// reading from the start where nothing is committed, autocommitting every 500 ms, its
// partitions tracked in own. extra options are appended (kgo.InstanceID, ...).
func startConsumerMember(t testing.TB, c *Cluster, own *ownership, group, topic, clientID string, extra ...kgo.Opt) *cgMember {
	t.Helper()
	return startTrackedMember(t, c, own, group, topic, clientID, append([]kgo.Opt{kgo.ServerSideBalancer()}, extra...)...)
}

// startTrackedMember is startConsumerMember on the classic protocol unless extra has
// kgo.ServerSideBalancer.
func startTrackedMember(t testing.TB, c *Cluster, own *ownership, group, topic, clientID string, extra ...kgo.Opt) *cgMember {
	t.Helper()
	ks := &killSwitch{}
	onTopic := func(m map[string][]int32) []int32 { return m[topic] }
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(c.Addrs()...),
		kgo.ClientID(clientID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitInterval(500 * time.Millisecond),
		kgo.Dialer(ks.DialContext),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.assigned(clientID, onTopic(m)) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			// Commit what was polled before letting go, as a careful application does.
			_ = cl.CommitUncommittedOffsets(ctx)
			own.released(clientID, onTopic(m))
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.released(clientID, onTopic(m)) }),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m := &cgMember{groupMember: &groupMember{clientID: clientID}, cl: cl}
	runKgoMember(t, m.groupMember, cl, ks, func() { own.releaseAll(clientID) })
	return m
}

// produceKeyed writes n records with distinct keys, spread over the topic's partitions
// by kgo's key hash, valued "<phase>/<i>", and returns the values.
func produceKeyed(t testing.TB, c *Cluster, topic, phase string, n int) []string {
	t.Helper()
	cl := c.Client(t)
	recs := make([]*kgo.Record, n)
	values := make([]string, n)
	for i := range recs {
		values[i] = fmt.Sprintf("%s/%d", phase, i)
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(recordKey(i)), Value: []byte(values[i])}
	}
	if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", phase, err)
	}
	cl.Close()
	return values
}

// waitConsumed waits until members together consumed every value of want.
func waitConsumed(t testing.TB, want []string, members ...*cgMember) {
	t.Helper()
	testwait.For(t, groupWait, func() error {
		seen := map[string]bool{}
		for _, m := range members {
			for _, r := range m.records() {
				seen[r.value] = true
			}
		}
		missing := 0
		first := ""
		for _, v := range want {
			if !seen[v] {
				if missing == 0 {
					first = v
				}
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d records not consumed yet, e.g. %s", missing, len(want), first)
		}
		return nil
	})
}

// describeConsumerGroupOnFailure logs group as ConsumerGroupDescribe shows it (group
// and assignment epochs, each member's epoch, current and target assignment) if the
// test has failed by the time it ends, before the cluster stops: call it after
// StartCluster.
func describeConsumerGroupOnFailure(t *testing.T, c *Cluster, group string) {
	adm := kadm.NewClient(c.Client(t))
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		described, err := adm.DescribeConsumerGroups(ctx, group)
		if err == nil {
			err = described[group].Err
		}
		if err != nil {
			t.Logf("describe %s: %v", group, err)
			return
		}
		d := described[group]
		t.Logf("group %s on node-%d: %s, epoch %d, assignment epoch %d", group, d.Coordinator.NodeID, d.State, d.Epoch, d.AssignmentEpoch)
		for _, m := range d.Members {
			t.Logf("  member %s (%s): epoch %d, assigned %v, target %v",
				m.ClientID, m.MemberID, m.MemberEpoch, m.Assignment.Sorted(), m.TargetAssignment.Sorted())
		}
	})
}
