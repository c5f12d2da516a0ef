package integration

// KIP-848 consumer groups end to end with franz-go's consumer-protocol members
// (kgo.ServerSideBalancer): the coordinator assigns, members reconcile through
// ConsumerGroupHeartbeat, and at no observation is a partition owned by two members.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerSessionTimeout is the expiry test's group's consumer.session.timeout.ms, set
// as a GROUP config below Kafka's 45 s default (the broker's
// group.consumer.min.session.timeout.ms lowered to allow it).
const consumerSessionTimeout = 8 * time.Second

// Three members split 12 partitions; a fourth joins and one leaves: each partition is
// owned by one member at every step, and every record produced is consumed.
func TestConsumerProtocol_SplitJoinLeave(t *testing.T) {
	t.Parallel()
	const partitions = 12
	c := StartCluster(t, 1, groupOptions()...)
	group, topic := "cg-split", "cg-split"
	c.CreateTopic(t, topic, partitions, nil)
	own := newOwnership()
	a := startConsumerMember(t, c, own, group, topic, "a")
	b := startConsumerMember(t, c, own, group, topic, "b")
	m3 := startConsumerMember(t, c, own, group, topic, "c")
	split := own.waitOwned(t, partitions, "a", "b", "c")
	t.Logf("three members: %v", split)
	for id, ps := range split {
		if len(ps) != partitions/3 {
			t.Fatalf("member %s owns %v: the uniform assignor gives each 4 of 12", id, ps)
		}
	}
	if !c.SawRequest(0, int16(kmsg.ConsumerGroupHeartbeat), 1) {
		t.Fatal("the members did not use ConsumerGroupHeartbeat v1")
	}
	want := produceKeyed(t, c, topic, "three", 600)
	waitConsumed(t, want, a, b, m3)

	d := startConsumerMember(t, c, own, group, topic, "d")
	t.Logf("four members: %v", own.waitOwned(t, partitions, "a", "b", "c", "d"))
	want = append(want, produceKeyed(t, c, topic, "four", 600)...)
	waitConsumed(t, want, a, b, m3, d)

	a.leave()
	t.Logf("after a left: %v", own.waitOwned(t, partitions, "b", "c", "d"))
	want = append(want, produceKeyed(t, c, topic, "left", 600)...)
	waitConsumed(t, want, a, b, m3, d)
	own.check(t)
	// Each member commits what it consumed before letting a partition go (its
	// revoke callback), and KIP-848 gives the partition to its next owner only once
	// released: nothing is delivered again beyond the last commit.
	if again := logRedelivered(t, a, b, m3, d); again != 0 {
		t.Errorf("%d records were delivered again after a member joined or left", again)
	}
}

// logRedelivered logs and returns how many records were consumed more than once
// (after a partition moved, from its last committed offset).
func logRedelivered(t testing.TB, members ...*cgMember) int {
	seen := map[string]int{}
	for _, m := range members {
		for _, r := range m.records() {
			seen[r.value]++
		}
	}
	again := 0
	for _, n := range seen {
		again += n - 1
	}
	t.Logf("%d records consumed, %d of them again", len(seen), again)
	return again
}

// A static member (group.instance.id) that leaves with epoch -2 keeps its partitions
// for its session: restarted, it gets them back, and meanwhile nobody else was given
// them. kgo v1.22.3's Close sends that leave without the InstanceId, which Kafka (and
// Petrel, as Kafka) refuses with INVALID_REQUEST "InstanceId can't be null.", so the
// member here stops as a killed process would and its leave is sent as the Java
// consumer sends it.
func TestConsumerProtocol_StaticMemberRestartKeepsPartitions(t *testing.T) {
	t.Parallel()
	const partitions = 6
	c := StartCluster(t, 1, groupOptions()...)
	group, topic := "cg-static", "cg-static"
	c.CreateTopic(t, topic, partitions, nil)
	own := newOwnership()
	s := startConsumerMember(t, c, own, group, topic, "s", kgo.InstanceID("instance-s"))
	o := startConsumerMember(t, c, own, group, topic, "o", kgo.InstanceID("instance-o"))
	before := own.waitOwned(t, partitions, "s", "o")
	oGained := len(own.gainedBy("o"))
	want := produceKeyed(t, c, topic, "before", 300)
	waitConsumed(t, want, s, o)

	memberID, _ := s.cl.GroupMetadata()
	s.kill()
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch, leave.InstanceID = group, memberID, -2, kmsg.StringPtr("instance-s")
	if resp := c.rawTo(t, 0).do(testContext(t), leave).(*kmsg.ConsumerGroupHeartbeatResponse); resp.ErrorCode != 0 {
		t.Fatalf("static leave: %v %v", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	s2 := startConsumerMember(t, c, own, group, topic, "s", kgo.InstanceID("instance-s"))
	after := own.waitOwned(t, partitions, "s", "o")
	if !slices.Equal(after["s"], before["s"]) || !slices.Equal(after["o"], before["o"]) {
		t.Fatalf("assignment %v after the restart, was %v", after, before)
	}
	if got := own.gainedBy("o")[oGained:]; len(got) > 0 {
		t.Fatalf("the other member was given %v while the static member restarted", got)
	}
	want = append(want, produceKeyed(t, c, topic, "after", 300)...)
	waitConsumed(t, want, s, o, s2)
	own.check(t)
}

// A member that stops heartbeating without leaving (its process killed) is removed
// after the session timeout, and the others take its partitions.
func TestConsumerProtocol_SessionTimeoutRemovesSilentMember(t *testing.T) {
	t.Parallel()
	const partitions = 6
	c := StartCluster(t, 1, append(groupOptions(), WithProperty("group.consumer.min.session.timeout.ms", "6000"))...)
	group, topic := "cg-expire", "cg-expire"
	c.CreateTopic(t, topic, partitions, nil)
	// The group's own session timeout (a GROUP config) is what expires the member.
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	if err := alterGroupConfigs(ctx, t, c.Client(t), group, map[string]string{
		"consumer.session.timeout.ms": strconv.Itoa(int(consumerSessionTimeout.Milliseconds()))}); err != nil {
		t.Fatal(err)
	}
	own := newOwnership()
	a := startConsumerMember(t, c, own, group, topic, "a")
	b := startConsumerMember(t, c, own, group, topic, "b")
	own.waitOwned(t, partitions, "a", "b")
	want := produceKeyed(t, c, topic, "two", 300)
	waitConsumed(t, want, a, b)

	killed := time.Now()
	b.kill()
	// Within 20 s past the group's 8 s: Kafka's 45 s default, were the group config
	// ignored, would not make it.
	own.waitOwnedWithin(t, consumerSessionTimeout+20*time.Second, partitions, "a")
	took := time.Since(killed)
	if took < consumerSessionTimeout-2*time.Second {
		t.Fatalf("the killed member's partitions moved after %v, before its session timed out", took)
	}
	t.Logf("the survivor owns every partition %v after the kill", took.Round(time.Millisecond))
	want = append(want, produceKeyed(t, c, topic, "one", 300)...)
	waitConsumed(t, want, a, b)
	own.check(t)
}

// The coordinator's broker is killed (as kill -9) while the group consumes: the new
// coordinator replays the group from __consumer_offsets and the members go on with
// their member ids and assignments; every record is consumed.
func TestConsumerProtocol_CoordinatorFailover(t *testing.T) {
	t.Parallel()
	const partitions = 6
	c := StartCluster(t, 3, append(groupOptions(), WithProperty("offsets.topic.num.partitions", "6"))...)
	group, topic := "cg-failover", "cg-failover"
	c.CreateTopicRF(t, topic, partitions, 3, nil)
	coordinator := coordinatorOf(t, c, 0, group)
	own := newOwnership()
	var members []*cgMember
	for _, id := range []string{"a", "b", "c"} {
		members = append(members, startConsumerMember(t, c, own, group, topic, id))
	}
	before := own.waitOwned(t, partitions, "a", "b", "c")
	ids := map[string]string{}
	for _, m := range members {
		ids[m.clientID], _ = m.cl.GroupMetadata()
	}
	want := produceKeyed(t, c, topic, "before", 600)
	waitConsumed(t, want, members...)

	t.Logf("killing node-%d, the coordinator of %s", coordinator, group)
	c.Kill(coordinator)
	next := coordinatorOf(t, c, (coordinator+1)%3, group)
	if next == coordinator {
		t.Fatalf("node-%d is still named coordinator", next)
	}
	want = append(want, produceKeyed(t, c, topic, "after", 600)...)
	waitConsumed(t, want, members...)
	// The members heartbeat to the new coordinator, which knows them.
	testwait.Until(t, groupWait, "a heartbeat at the new coordinator", func() bool {
		return c.SawRequest(next, int16(kmsg.ConsumerGroupHeartbeat), 1)
	})
	after := own.split()
	for _, m := range members {
		id, epoch := m.cl.GroupMetadata()
		if id != ids[m.clientID] {
			t.Errorf("member %s rejoined as %s (was %s)", m.clientID, id, ids[m.clientID])
		}
		t.Logf("member %s: epoch %d, partitions %v (before %v)", m.clientID, epoch, after[m.clientID], before[m.clientID])
	}
	if !maps.EqualFunc(after, before, slices.Equal[[]int32]) {
		t.Errorf("assignment %v after the failover, was %v", after, before)
	}
	own.check(t)
	logRedelivered(t, members...)
}

// A commit at a member epoch the group has moved past is refused, as Kafka 4.2 does: a
// kgo consumer-protocol member reads its member id and epoch, a second member joins
// (the group epoch moves on and so, once it reconciled, does the first member's), and
// an OffsetCommit v9 at the old epoch is STALE_MEMBER_EPOCH and one from a member not
// in the group UNKNOWN_MEMBER_ID, while the same commit at the current epoch and the
// members' own commits are accepted.
func TestConsumerProtocol_StaleEpochCommitRefused(t *testing.T) {
	t.Parallel()
	const partitions = 4
	c := StartCluster(t, 1, groupOptions()...)
	group, topic := "cg-stale", "cg-stale"
	c.CreateTopic(t, topic, partitions, nil)
	describeConsumerGroupOnFailure(t, c, group)
	ctx := testContext(t)
	own := newOwnership()
	a := startConsumerMember(t, c, own, group, topic, "a")
	own.waitOwned(t, partitions, "a")
	memberID, old := a.cl.GroupMetadata()
	b := startConsumerMember(t, c, own, group, topic, "b")
	own.waitOwned(t, partitions, "a", "b")
	testwait.ForWhat(t, groupWait, "member a past its first epoch", func() error {
		if _, epoch := a.cl.GroupMetadata(); epoch <= old {
			return fmt.Errorf("member a still at epoch %d", epoch)
		}
		return nil
	})
	want := produceKeyed(t, c, topic, "stale", 200)
	waitConsumed(t, want, a, b)
	for _, m := range []*cgMember{a, b} {
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("member %s's own commit: %v", m.clientID, err)
		}
	}

	raw := c.rawTo(t, 0)
	commit := func(member string, epoch int32) int16 {
		return commitRaw(ctx, raw, group, member, epoch, topic, 0, "")
	}
	if code := commit(memberID, old); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at member a's old epoch %d: %v, want STALE_MEMBER_EPOCH", old, kerr.ErrorForCode(code))
	}
	if code := commit("not-a-member", old); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit of an unknown member: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
	}
	testwait.ForWhat(t, groupWait, "a commit at member a's current epoch", func() error {
		_, epoch := a.cl.GroupMetadata()
		if code := commit(memberID, epoch); code != 0 {
			return fmt.Errorf("commit at epoch %d: %v", epoch, kerr.ErrorForCode(code))
		}
		return nil
	})
	own.check(t)
}

// A regular-expression subscription is resolved by the broker (RE2, whole names): a
// topic created later that matches is picked up once the group's resolution is
// refreshed (Kafka's 10 s minimum), one that does not match is not, and no member
// is handed an internal topic.
func TestConsumerProtocol_RegexSubscriptionPicksUpNewTopic(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	group := "cg-regex"
	c.CreateTopic(t, "rx-orders", 3, nil)
	c.CreateTopic(t, "other", 3, nil)
	own := newOwnership()
	// kgo sends the pattern as SubscribedTopicRegex (".*(?:rx-.*).*" for "rx-.*").
	m := startConsumerMember(t, c, own, group, "^rx-.*", "r", kgo.ConsumeRegex())
	want := produceKeyed(t, c, "rx-orders", "first", 100)
	waitConsumed(t, want, m)

	c.CreateTopic(t, "rx-payments", 2, nil)
	want = append(want, produceKeyed(t, c, "rx-payments", "second", 100)...)
	produceKeyed(t, c, "other", "unmatched", 50)
	waitConsumed(t, want, m)
	for _, r := range m.records() {
		if strings.HasPrefix(r.value, "unmatched/") {
			t.Fatalf("the regex member read %q from a topic it does not match", r.value)
		}
	}
	if !c.SawRequest(0, int16(kmsg.ConsumerGroupHeartbeat), 1) {
		t.Fatal("no ConsumerGroupHeartbeat v1 reached the broker: the member did not use KIP-848")
	}
}

// The coordinator's broker is killed (as kill -9) in the middle of a rebalance: a
// fourth member has just joined and the others have yet to revoke. The new
// coordinator replays the group, the rebalance completes with the four members, no
// partition is owned by two members at any observation, and every record is consumed.
func TestConsumerProtocol_CoordinatorFailoverMidRebalance(t *testing.T) {
	t.Parallel()
	const partitions = 8
	c := StartCluster(t, 3, append(groupOptions(), WithProperty("offsets.topic.num.partitions", "6"))...)
	group, topic := "cg-failover-rebalance", "cg-failover-rebalance"
	c.CreateTopicRF(t, topic, partitions, 3, nil)
	describeConsumerGroupOnFailure(t, c, group)
	coordinator := coordinatorOf(t, c, 0, group)
	own := newOwnership()
	// kgo v1.22.3 sends a ConsumerGroupHeartbeat to its cached coordinator without
	// the retry wrapper that forgets a coordinator it cannot dial, so after the kill
	// its heartbeats keep dialling the dead broker. A member that commits offsets
	// finds the new coordinator through its OffsetCommit, which forgets the dead one;
	// d, which owns nothing yet, commits nothing, and would only find it once its
	// metadata, which no longer lists the fenced broker, is refreshed: every 5 min
	// by default (as the Java consumer's metadata.max.age.ms). The members refresh
	// every 5 s, so the test waits on the brokers, not on that client default.
	rediscover := kgo.MetadataMaxAge(5 * time.Second)
	var members []*cgMember
	for _, id := range []string{"a", "b", "c"} {
		members = append(members, startConsumerMember(t, c, own, group, topic, id, rediscover))
	}
	own.waitOwned(t, partitions, "a", "b", "c")
	want := produceKeyed(t, c, topic, "before", 400)
	waitConsumed(t, want, members...)

	// The join is in the log once the joiner has its member epoch; the others learn
	// of the new target only at their next heartbeat, up to 5 s later.
	d := startConsumerMember(t, c, own, group, topic, "d", rediscover)
	members = append(members, d)
	testwait.For(t, groupWait, func() error {
		if _, epoch := d.cl.GroupMetadata(); epoch <= 0 {
			return fmt.Errorf("member d has epoch %d", epoch)
		}
		return nil
	})
	ids := map[string]string{}
	for _, m := range members {
		ids[m.clientID], _ = m.cl.GroupMetadata()
	}
	t.Logf("killing node-%d, the coordinator of %s, while the group rebalances: %v", coordinator, group, own.split())
	c.Kill(coordinator)
	want = append(want, produceKeyed(t, c, topic, "after", 400)...)
	split := own.waitOwned(t, partitions, "a", "b", "c", "d")
	waitConsumed(t, want, members...)
	// The new coordinator replayed the group: nobody had to rejoin with a new id.
	for _, m := range members {
		if id, _ := m.cl.GroupMetadata(); id != ids[m.clientID] {
			t.Errorf("member %s rejoined as %s (was %s)", m.clientID, id, ids[m.clientID])
		}
	}
	for id, ps := range split {
		if len(ps) != partitions/4 {
			t.Errorf("member %s owns %v after the rebalance: the uniform assignor gives each 2 of 8", id, ps)
		}
	}
	own.check(t)
	logRedelivered(t, members...)
}
