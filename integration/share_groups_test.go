package integration

// KIP-932 share groups end to end with franz-go's share consumer (kgo.ShareGroup):
// several members read the same partitions, each record is acquired by one member at
// a time and acknowledged on its own (ACCEPT, RELEASE, REJECT, RENEW), a lock that
// runs out gives the record to another member, and the delivery-count limit archives a
// record nobody can process.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// shareLock is the acquisition lock of the tests that wait one out
// (share.record.lock.duration.ms; the broker's minimum lowered to allow it).
const shareLock = 3 * time.Second

// renewLock is the renewal test's lock: long enough that its renewal, halfway, and
// its acceptance, a tenth of a lock after the first lock ended, are not late on a
// loaded machine.
const renewLock = 6 * time.Second

// setShareGroupConfigs sets share group configs (GROUP resource) before its members
// start: share.auto.offset.reset=earliest so that records produced before the group
// existed are delivered, and any extra.
func setShareGroupConfigs(t testing.TB, c *Cluster, group string, extra map[string]string) {
	t.Helper()
	configs := map[string]string{"share.auto.offset.reset": "earliest"}
	for k, v := range extra {
		configs[k] = v
	}
	if err := alterGroupConfigs(testContext(t), t, c.Client(t), group, configs); err != nil {
		t.Fatalf("share group configs: %v", err)
	}
}

// Four members share two partitions: the SimpleAssignor gives each partition to two
// members, and every record is accepted exactly once in total, whichever member of a
// partition's two is delivered it.
func TestShareGroup_FourMembersShareTwoPartitions(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, shareOptions()...)
	group, topic := "sg-four", "sg-four"
	c.CreateTopic(t, topic, 2, nil)
	setShareGroupConfigs(t, c, group, nil)
	want := produceKeyed(t, c, topic, "before", 2000)
	var members []*shareMember
	for i := range 4 {
		members = append(members, startShareMember(t, c, group, topic, "m"+strconv.Itoa(i), acceptAll))
	}
	adm := c.Admin(t)
	testwait.For(t, groupWait, func() error {
		described, err := adm.DescribeShareGroups(testContext(t), group)
		if err != nil {
			return err
		}
		g := described[group]
		owners := map[int32]int{}
		for _, m := range g.Members {
			for p := range m.Assignment[topic] {
				owners[p]++
			}
		}
		if len(g.Members) != 4 || owners[0] != 2 || owners[1] != 2 {
			return fmt.Errorf("%d members, members per partition %v: want 4, two per partition", len(g.Members), owners)
		}
		return nil
	})
	want = append(want, produceKeyed(t, c, topic, "shared", 2000)...)
	waitShareAnswered(t, groupWait, want, kgo.AckAccept, members...)
	for v, n := range answeredCounts(kgo.AckAccept, members...) {
		if n != 1 {
			t.Errorf("record %s was accepted %d times", v, n)
		}
	}
	for _, m := range members {
		t.Logf("member %s was delivered %d records", m.id, len(m.deliveries()))
	}
}

// RELEASE gives a record back (delivered again, its delivery count one higher),
// REJECT archives it (never delivered again), and a record released every time is
// archived after share.delivery.count.limit deliveries.
func TestShareGroup_ReleaseRejectAndDeliveryLimit(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, shareOptions()...)
	group, topic := "sg-ack", "sg-ack"
	c.CreateTopic(t, topic, 1, nil)
	setShareGroupConfigs(t, c, group, nil)
	const limit = 5 // group.share.delivery.count.limit's default
	decide := func(r *kgo.Record) kgo.AckStatus {
		v := string(r.Value)
		switch {
		case strings.HasPrefix(v, "release/") && r.DeliveryCount() == 1:
			return kgo.AckRelease
		case strings.HasPrefix(v, "reject/"):
			return kgo.AckReject
		case v == "poison":
			return kgo.AckRelease
		}
		return kgo.AckAccept
	}
	m := startShareMember(t, c, group, topic, "m", decide)
	released := produceValues(t, c, topic, "release", 20)
	rejected := produceValues(t, c, topic, "reject", 20)
	produceShareValues(t, c, topic, "poison")
	// Records after the poison one: delivered and accepted while it comes back.
	after := produceValues(t, c, topic, "after", 20)
	waitShareAnswered(t, groupWait, append(released, after...), kgo.AckAccept, m)
	testwait.For(t, groupWait, func() error {
		if n := answeredCounts(kgo.AckRelease, m)["poison"]; n < limit {
			return fmt.Errorf("the poison record was delivered %d times, want %d", n, limit)
		}
		return nil
	})
	// Everything is settled once a record produced last is accepted after the
	// poison record's last delivery: nothing more may come back.
	last := produceValues(t, c, topic, "last", 1)
	waitShareAnswered(t, groupWait, last, kgo.AckAccept, m)
	counts := map[string][]int32{}
	for _, d := range m.deliveries() {
		counts[d.value] = append(counts[d.value], d.deliveryCount)
	}
	if got := counts["poison"]; len(got) != limit || got[limit-1] != limit {
		t.Errorf("the poison record was delivered with delivery counts %v, want 1..%d", got, limit)
	}
	for _, v := range released {
		if got := counts[v]; len(got) != 2 || got[0] != 1 || got[1] != 2 {
			t.Errorf("released record %s: delivery counts %v, want [1 2]", v, got)
		}
	}
	for _, v := range rejected {
		if got := counts[v]; len(got) != 1 {
			t.Errorf("rejected record %s was delivered %d times", v, len(got))
		}
	}
}

// A member that holds records without answering them (it stopped polling, its
// connection open) keeps them only for the acquisition lock: then another member is
// delivered them, with delivery count 2.
func TestShareGroup_LockExpiryRedelivers(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, shareOptions()...)
	group, topic := "sg-expiry", "sg-expiry"
	c.CreateTopic(t, topic, 1, nil)
	setShareGroupConfigs(t, c, group, map[string]string{"share.record.lock.duration.ms": strconv.Itoa(int(shareLock.Milliseconds()))})
	want := produceValues(t, c, topic, "held", 50)

	holder, held, heldAt := holdShareRecords(t, c, group, topic)
	defer holder.Close()
	t.Logf("the holder acquired %d records", len(held))

	other := startShareMember(t, c, group, topic, "other", acceptAll)
	waitShareAnswered(t, groupWait, want, kgo.AckAccept, other)
	for _, d := range other.deliveries() {
		if !held[d.value] {
			continue
		}
		if d.deliveryCount != 2 {
			t.Errorf("held record %s delivered to the other member with delivery count %d, want 2", d.value, d.deliveryCount)
		}
		if early := d.at.Sub(heldAt); early < shareLock-500*time.Millisecond {
			t.Errorf("held record %s delivered to another member %v after it was acquired, within its %v lock", d.value, early, shareLock)
		}
	}
}

// RENEW (KIP-1222) extends a lock: a record renewed before its lock ran out is not
// delivered to another member after the first lock would have expired, and its
// acceptance afterwards succeeds.
func TestShareGroup_RenewExtendsLock(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, shareOptions()...)
	group, topic := "sg-renew", "sg-renew"
	c.CreateTopic(t, topic, 1, nil)
	setShareGroupConfigs(t, c, group, map[string]string{"share.record.lock.duration.ms": strconv.Itoa(int(renewLock.Milliseconds()))})
	produceValues(t, c, topic, "renewed", 20)

	var mu sync.Mutex
	var errs []error
	ackErrs := func() []error { mu.Lock(); defer mu.Unlock(); return append([]error(nil), errs...) }
	holder := c.Client(t, kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if err := rs.Error(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}))
	ctx := testContext(t)
	var recs []*kgo.Record
	testwait.For(t, groupWait, func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		recs = append(recs, holder.PollRecords(pctx, 100).Records()...)
		if len(recs) == 0 {
			return errNotYet
		}
		return nil
	})
	// kgo's AcquisitionDeadline is the lock's end counted from when the fetch's
	// answer arrived: the broker's lock ends at or before it.
	deadline := recs[0].AcquisitionDeadline()
	for _, r := range recs {
		if dl := r.AcquisitionDeadline(); dl.Before(deadline) {
			deadline = dl
		}
	}
	held := map[string]bool{}
	for _, r := range recs {
		held[string(r.Value)] = true
	}
	other := startShareMember(t, c, group, topic, "other", acceptAll)

	// Renew halfway through the lock (its new end: a whole lock after the renewal),
	// then accept once the first lock is surely over: without the renewal the
	// records would be back with the other member by then, and the accept refused.
	waitUntil(t, deadline.Add(-renewLock/2))
	holder.MarkAcks(kgo.AckRenew, recs...)
	if err := holder.FlushAcks(ctx); err != nil || len(ackErrs()) > 0 {
		t.Fatalf("renew: %v %v", err, ackErrs())
	}
	waitUntil(t, deadline.Add(renewLock/10))
	holder.MarkAcks(kgo.AckAccept, recs...)
	if err := holder.FlushAcks(ctx); err != nil || len(ackErrs()) > 0 {
		t.Fatalf("accept after the renewed lock: %v %v", err, ackErrs())
	}
	for _, d := range other.deliveries() {
		if held[d.value] {
			t.Errorf("renewed record %s was delivered to another member (delivery count %d)", d.value, d.deliveryCount)
		}
	}
}

// holdShareRecords joins group with a share consumer that polls once, is delivered
// some records and then holds them: it neither answers nor polls again, its
// connection stays open. It returns the client (the caller closes it), the values
// held and when they were acquired.
func holdShareRecords(t *testing.T, c *Cluster, group, topic string) (*kgo.Client, map[string]bool, time.Time) {
	t.Helper()
	cl := c.Client(t, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(10))
	held := map[string]bool{}
	var at time.Time
	testwait.For(t, groupWait, func() error {
		ctx, cancel := context.WithTimeout(testContext(t), time.Second)
		defer cancel()
		for _, r := range cl.PollRecords(ctx, 10).Records() {
			held[string(r.Value)] = true
		}
		if len(held) == 0 {
			return errNotYet
		}
		at = time.Now()
		return nil
	})
	return cl, held, at
}

// waitUntil returns once the clock passes at: the tests that need a lock to run out
// wait for the time itself, not for an event.
func waitUntil(t *testing.T, at time.Time) {
	t.Helper()
	testwait.Until(t, time.Until(at)+time.Minute, "the clock to pass "+at.Format(time.StampMilli), func() bool {
		return !time.Now().Before(at)
	})
}

// produceValues writes n records valued "<prefix>/<i>" (no key) and returns the values.
func produceValues(t testing.TB, c *Cluster, topic, prefix string, n int) []string {
	t.Helper()
	values := make([]string, n)
	for i := range values {
		values[i] = prefix + "/" + strconv.Itoa(i)
	}
	produceShareValues(t, c, topic, values...)
	return values
}

// produceShareValues writes one record per value, in order.
func produceShareValues(t testing.TB, c *Cluster, topic string, values ...string) {
	t.Helper()
	cl := c.Client(t)
	defer cl.Close()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(v)}
	}
	if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// The leader of a shared partition is killed (kill -9) while records are in flight:
// every record is still accepted in the end (nothing unacknowledged is lost), and no
// record whose acceptance the broker confirmed is delivered again (the new leader
// reloads the share state from the share coordinator).
func TestShareGroup_LeaderFailoverKeepsAcknowledgements(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, shareOptions()...)
	group, topic := "sg-failover", "sg-failover"
	c.CreateTopicRF(t, topic, 2, 3, nil)
	setShareGroupConfigs(t, c, group, nil)
	want := produceKeyed(t, c, topic, "before", 1000)
	a := startShareMember(t, c, group, topic, "a", acceptAll)
	b := startShareMember(t, c, group, topic, "b", acceptAll)
	waitShareAnswered(t, groupWait, want[:100], kgo.AckAccept, a, b)

	victim := int(c.WaitConverged().Topics[topic].Partitions[0].Leader)
	t.Logf("killing node-%d, the leader of %s/0", victim, topic)
	c.Kill(victim)
	want = append(want, produceKeyed(t, c, topic, "after", 1000)...)
	waitShareAnswered(t, 2*groupWait, want, kgo.AckAccept, a, b)

	confirmedAt := map[string]time.Time{}
	for _, m := range []*shareMember{a, b} {
		for v, at := range m.confirmedTimes() {
			if was, ok := confirmedAt[v]; !ok || at.Before(was) {
				confirmedAt[v] = at
			}
		}
	}
	again := 0
	for _, m := range []*shareMember{a, b} {
		for _, d := range m.deliveries() {
			if at, ok := confirmedAt[d.value]; ok && d.at.After(at) {
				again++
				if again <= 5 {
					t.Errorf("record %s delivered again (count %d) to %s after its acceptance was confirmed", d.value, d.deliveryCount, m.id)
				}
			}
		}
	}
	t.Logf("%d records accepted with confirmation, %d delivered again after it", len(confirmedAt), again)
}
