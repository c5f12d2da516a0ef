package integration

// Online migration between the classic protocol and KIP-848 consumer groups
// (group.consumer.migration.policy, bidirectional by default) with unmodified kgo
// clients: a running classic group is upgraded when a consumer-protocol member joins,
// its classic member is served by the consumer group, and the group goes back to
// classic when the consumer-protocol member leaves.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupTypeOf is the type ListGroups gives group ("classic" or "consumer").
func groupTypeOf(ctx context.Context, adm *kadm.Client, group string) (string, error) {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return "", err
	}
	for _, g := range listed.Sorted() {
		if g.Group == group {
			return g.GroupType, nil
		}
	}
	return "", fmt.Errorf("group %s is not listed", group)
}

// A classic kgo consumer (cooperative-sticky) runs; a kgo consumer with
// ServerSideBalancer joins the same group: the group becomes a consumer group that
// serves both (ConsumerGroupDescribe shows a classic and a consumer-protocol member),
// no partition is owned by two members at any observation, and every record is
// consumed. When the consumer-protocol member leaves, the group is classic again and
// the classic member owns every partition.
func TestConsumerProtocol_OnlineUpgradeAndDowngrade(t *testing.T) {
	t.Parallel()
	const partitions = 6
	c := StartCluster(t, 1, groupOptions()...)
	group, topic := "cg-migrate", "cg-migrate"
	c.CreateTopic(t, topic, partitions, nil)
	ctx, cancel := context.WithTimeout(testContext(t), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	own := newOwnership()

	classic := startTrackedMember(t, c, own, group, topic, "classic",
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.SessionTimeout(6*time.Second))
	own.waitOwned(t, partitions, "classic")
	want := produceKeyed(t, c, topic, "classic-only", 300)
	waitConsumed(t, want, classic)
	if typ, err := groupTypeOf(ctx, adm, group); err != nil || typ != "classic" {
		t.Fatalf("before the upgrade the group is %q (%v), want classic", typ, err)
	}

	next := startConsumerMember(t, c, own, group, topic, "next")
	split := own.waitOwned(t, partitions, "classic", "next")
	t.Logf("after the upgrade: %v", split)
	testwait.For(t, groupWait, func() error {
		typ, err := groupTypeOf(ctx, adm, group)
		if err != nil || typ != "consumer" {
			return fmt.Errorf("the group is %q (%v), want consumer", typ, err)
		}
		described, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return err
		}
		d := described[group]
		if d.Err != nil {
			return d.Err
		}
		types := map[string]int8{}
		for _, m := range d.Members {
			types[m.ClientID] = m.MemberType
		}
		if len(d.Members) != 2 || types["classic"] != 0 || types["next"] != 1 {
			return fmt.Errorf("members %+v, want the classic member (type 0) and next (type 1)", types)
		}
		return nil
	})
	want = append(want, produceKeyed(t, c, topic, "mixed", 300)...)
	waitConsumed(t, want, classic, next)

	next.leave()
	own.waitOwned(t, partitions, "classic")
	testwait.For(t, groupWait, func() error {
		typ, err := groupTypeOf(ctx, adm, group)
		if err != nil || typ != "classic" {
			return fmt.Errorf("after the downgrade the group is %q (%v), want classic", typ, err)
		}
		return nil
	})
	want = append(want, produceKeyed(t, c, topic, "downgraded", 300)...)
	waitConsumed(t, want, classic, next)
	own.check(t)
	logRedelivered(t, classic, next)
	// The classic member's commits are accepted throughout: its group has offsets.
	offsets, err := adm.FetchOffsets(ctx, group)
	if err != nil || offsets.Error() != nil {
		t.Fatalf("offsets of %s: %v %v", group, err, offsets.Error())
	}
	if _, ok := offsets.Lookup(topic, 0); !ok {
		t.Fatalf("no committed offset for %s/0", topic)
	}
}

// A running classic group is upgraded by rolling its members, as an operator
// redeploys an application with group.protocol=consumer one instance at a time: each
// classic kgo member is replaced by a consumer-protocol one. The group is a consumer
// group from the first replacement on, serves the remaining classic member meanwhile,
// ends with consumer-protocol members only, and every record is consumed with no
// partition owned twice.
func TestConsumerProtocol_RollingUpgrade(t *testing.T) {
	t.Parallel()
	const partitions = 6
	c := StartCluster(t, 1, groupOptions()...)
	group, topic := "cg-roll", "cg-roll"
	c.CreateTopic(t, topic, partitions, nil)
	ctx, cancel := context.WithTimeout(testContext(t), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	own := newOwnership()
	classicOpts := []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.SessionTimeout(6 * time.Second)}

	old1 := startTrackedMember(t, c, own, group, topic, "old1", classicOpts...)
	old2 := startTrackedMember(t, c, own, group, topic, "old2", classicOpts...)
	own.waitOwned(t, partitions, "old1", "old2")
	want := produceKeyed(t, c, topic, "classic", 300)
	members := []*cgMember{old1, old2}
	waitConsumed(t, want, members...)

	new1 := startConsumerMember(t, c, own, group, topic, "new1")
	members = append(members, new1)
	own.waitOwned(t, partitions, "old1", "old2", "new1")
	old1.leave()
	own.waitOwned(t, partitions, "old2", "new1")
	want = append(want, produceKeyed(t, c, topic, "half", 300)...)
	waitConsumed(t, want, members...)

	new2 := startConsumerMember(t, c, own, group, topic, "new2")
	members = append(members, new2)
	own.waitOwned(t, partitions, "old2", "new1", "new2")
	old2.leave()
	own.waitOwned(t, partitions, "new1", "new2")
	want = append(want, produceKeyed(t, c, topic, "rolled", 300)...)
	waitConsumed(t, want, members...)

	testwait.For(t, groupWait, func() error {
		if typ, err := groupTypeOf(ctx, adm, group); err != nil || typ != "consumer" {
			return fmt.Errorf("after the roll the group is %q (%v), want consumer", typ, err)
		}
		described, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return err
		}
		d := described[group]
		if d.Err != nil {
			return d.Err
		}
		if len(d.Members) != 2 {
			return fmt.Errorf("%d members after the roll, want new1 and new2", len(d.Members))
		}
		for _, m := range d.Members {
			if m.MemberType != 1 {
				return fmt.Errorf("member %s has type %d after the roll, want 1 (consumer protocol)", m.ClientID, m.MemberType)
			}
		}
		return nil
	})
	own.check(t)
	logRedelivered(t, members...)
}
