package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakePersister is a share coordinator that initializes and deletes share state at
// once, failing the first failInits initializations with COORDINATOR_NOT_AVAILABLE.
type fakePersister struct {
	mu        sync.Mutex
	failInits int
	inits     []*kmsg.InitializeShareGroupStateRequest
	deletes   []*kmsg.DeleteShareGroupStateRequest
}

func (f *fakePersister) InitializeState(_ context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inits = append(f.inits, req)
	var code int16
	if f.failInits > 0 {
		f.failInits--
		code = kerr.CoordinatorNotAvailable.Code
	}
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (f *fakePersister) DeleteState(_ context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, req)
	return kmsg.NewPtrDeleteShareGroupStateResponse(), nil
}

var errFakeUnused = errors.New("not used by the group coordinator")

func (f *fakePersister) ReadState(context.Context, *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	return nil, errFakeUnused
}

func (f *fakePersister) WriteState(context.Context, *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	return nil, errFakeUnused
}

func (f *fakePersister) ReadStateSummary(context.Context, *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	return nil, errFakeUnused
}

func (f *fakePersister) counts() (inits, deletes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.inits), len(f.deletes)
}

// shareMember is a share consumer speaking ShareGroupHeartbeat v1 itself.
type shareMember struct {
	t        *testing.T
	cl       *kgo.Client
	group    string
	id       string
	epoch    int32
	assigned []int32 // the partitions of the last assignment received
	interval int32
}

// heartbeat sends one heartbeat with the member's epoch (subscribing to topics when
// given) and returns its error code, the member's state updated from the answer.
func (m *shareMember) heartbeat(topics ...string) int16 {
	m.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version, req.GroupID, req.MemberID, req.MemberEpoch = 1, m.group, m.id, m.epoch
	if len(topics) > 0 {
		req.SubscribedTopicNames = topics
	}
	resp, err := req.RequestWith(testContext(m.t), m.cl)
	if err != nil {
		m.t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	m.epoch, m.interval = resp.MemberEpoch, resp.HeartbeatIntervalMillis
	if resp.Assignment != nil {
		m.assigned = nil
		for _, tp := range resp.Assignment.TopicPartitions {
			m.assigned = append(m.assigned, tp.Partitions...)
		}
		slices.Sort(m.assigned)
	}
	return 0
}

// join makes the member join subscribed to topics, once the coordinator serves the
// group.
func (m *shareMember) join(topics ...string) {
	m.t.Helper()
	testwait.ForWhat(m.t, 30*time.Second, m.id+" joining", func() error {
		m.epoch = 0
		if code := m.heartbeat(topics...); code != 0 {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
}

// waitAssigned heartbeats until the member is assigned want.
func (m *shareMember) waitAssigned(want ...int32) {
	m.t.Helper()
	testwait.ForWhat(m.t, 30*time.Second, fmt.Sprintf("%s assigned %v", m.id, want), func() error {
		if code := m.heartbeat(); code != 0 {
			return testwait.Permanent(kerr.ErrorForCode(code))
		}
		if !slices.Equal(m.assigned, want) {
			return fmt.Errorf("assigned %v", m.assigned)
		}
		return nil
	})
}

// settleShareMembers heartbeats members until cond holds of how many of them hold
// each partition.
func settleShareMembers(t *testing.T, what string, cond func(held map[int32]int) bool, members ...*shareMember) {
	t.Helper()
	testwait.ForWhat(t, 30*time.Second, what, func() error {
		held := map[int32]int{}
		var got []string
		for _, m := range members {
			if code := m.heartbeat(); code != 0 {
				return testwait.Permanent(kerr.ErrorForCode(code))
			}
			for _, p := range m.assigned {
				held[p]++
			}
			got = append(got, fmt.Sprintf("%s:%v", m.id, m.assigned))
		}
		if !cond(held) {
			return fmt.Errorf("assigned %v", got)
		}
		return nil
	})
}

func newShareMember(t *testing.T, b *Broker, group, id string) *shareMember {
	return &shareMember{t: t, cl: newClient(t, b), group: group, id: id}
}

// ShareGroupHeartbeat and ShareGroupDescribe over the wire: both advertised as v1;
// members join, are assigned every partition of their topics (the SimpleAssignor
// shares a partition among the members) once the share coordinator initialized their
// share state, leave; the group is described, listed as type share, refused by
// DescribeGroups as not classic, and deleted with its share state once empty.
func TestShareGroupWire(t *testing.T) {
	b := startTestBroker(t, "", nil)
	fake := &fakePersister{}
	b.setPersister(fake)
	adm := newAdmin(t, b)
	ctx := testContext(t)
	mustCreateTopic(t, adm, "t", 2, nil)

	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		for _, key := range []kmsg.Key{kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe} {
			if min, max, ok := v.KeyVersions(int16(key)); !ok || min != 1 || max != 1 {
				t.Fatalf("%s advertised %v %d-%d", kmsg.NameForKey(int16(key)), ok, min, max)
			}
		}
	}

	m1, m2, m3 := newShareMember(t, b, "sg", "member-1"), newShareMember(t, b, "sg", "member-2"), newShareMember(t, b, "sg", "member-3")
	m1.join("t")
	if m1.interval != 5000 {
		t.Errorf("heartbeat interval %d, want group.share.heartbeat.interval.ms 5000", m1.interval)
	}
	m1.waitAssigned(0, 1)
	// Two members on two partitions: one each (Kafka's SimpleAssignor); a third
	// member makes each partition shared by two members.
	m2.join("t")
	settleShareMembers(t, "each member one partition", func(held map[int32]int) bool {
		return len(m1.assigned) == 1 && len(m2.assigned) == 1 && held[0] == 1 && held[1] == 1
	}, m1, m2)
	m3.join("t")
	settleShareMembers(t, "every partition shared by two members", func(held map[int32]int) bool {
		return held[0] == 2 && held[1] == 2
	}, m1, m2, m3)

	cl := newClient(t, b)
	describe := kmsg.NewPtrShareGroupDescribeRequest()
	describe.GroupIDs, describe.IncludeAuthorizedOperations = []string{"sg"}, true
	dresp, err := describe.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	g := dresp.Groups[0]
	if g.ErrorCode != 0 || g.GroupState != "Stable" || g.Assignor != "simple" || len(g.Members) != 3 || g.AuthorizedOperations&(1<<int(kmsg.ACLOperationRead)) == 0 {
		t.Fatalf("described %+v", g)
	}
	for i, m := range g.Members {
		want := []*shareMember{m1, m2, m3}[i]
		if m.MemberID != want.id || m.MemberEpoch != want.epoch || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "t" ||
			fmt.Sprint(m.Assignment.TopicPartitions[0].Partitions) != fmt.Sprint(want.assigned) || fmt.Sprint(m.SubscribedTopicNames) != "[t]" {
			t.Fatalf("member %+v, want %+v", m, want)
		}
	}

	// ListGroups: type share, state filter; DescribeGroups: not a classic group.
	list := func(types, states []string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.TypesFilter, req.StatesFilter = types, states
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, lg := range resp.Groups {
			out = append(out, lg.Group+":"+lg.GroupType+":"+lg.GroupState+":"+lg.ProtocolType)
		}
		return out
	}
	if got := fmt.Sprint(list([]string{"share"}, nil)); got != "[sg:share:Stable:share]" {
		t.Errorf("ListGroups type share: %s", got)
	}
	if got := list([]string{"consumer"}, nil); len(got) != 0 {
		t.Errorf("ListGroups type consumer: %v", got)
	}
	if got := list(nil, []string{"Empty"}); len(got) != 0 {
		t.Errorf("ListGroups state Empty: %v", got)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"sg"}
	dgr, err := dg.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if d := dgr.Groups[0]; d.State != "Dead" || d.ErrorCode != kerr.GroupIDNotFound.Code || derefOr(d.ErrorMessage) != "Group sg is not a classic group." {
		t.Errorf("DescribeGroups of a share group: %+v", d)
	}

	deleteGroup := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{"sg"}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0].ErrorCode
	}
	if code := deleteGroup(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of a group with members: %v", kerr.ErrorForCode(code))
	}
	for _, m := range []*shareMember{m1, m2, m3} {
		m.epoch = -1
		if code := m.heartbeat(); code != 0 || m.epoch != -1 {
			t.Fatalf("%s leaving: %v, epoch %d", m.id, kerr.ErrorForCode(code), m.epoch)
		}
	}
	if got := fmt.Sprint(list([]string{"share"}, []string{"empty"})); got != "[sg:share:Empty:share]" {
		t.Errorf("ListGroups of the empty group: %s", got)
	}
	if code := deleteGroup(); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	testwait.Until(t, 30*time.Second, "the share state deleted", func() bool { _, d := fake.counts(); return d == 1 })
	fake.mu.Lock()
	del := fake.deletes[0]
	fake.mu.Unlock()
	if del.GroupID != "sg" || len(del.Topics) != 1 || len(del.Topics[0].Partitions) != 2 || [16]byte(b.Image().Topic("t").ID) != del.Topics[0].TopicID {
		t.Errorf("DeleteShareGroupState %+v", del)
	}
	if got := list([]string{"share"}, nil); len(got) != 0 {
		t.Errorf("ListGroups after delete: %v", got)
	}
}

// A partition is assigned only once the share coordinator initialized its share
// state: while InitializeShareGroupState fails the member gets nothing and each
// heartbeat asks again; without a share coordinator at all it fails the same way
// (COORDINATOR_NOT_AVAILABLE) and the member stays unassigned.
func TestShareGroupAssignsOnlyInitializedPartitions(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "t", 3, nil)

	// No share coordinator (every initialization answered COORDINATOR_NOT_AVAILABLE):
	// joined, never assigned; assigned once a coordinator answers.
	b.setPersister(&fakePersister{failInits: math.MaxInt})
	lone := newShareMember(t, b, "no-coordinator", "m")
	lone.join("t")
	for range 3 {
		if code := lone.heartbeat(); code != 0 || len(lone.assigned) != 0 {
			t.Fatalf("without a share coordinator: %v, assigned %v", kerr.ErrorForCode(code), lone.assigned)
		}
	}
	b.setPersister(&fakePersister{})
	lone.waitAssigned(0, 1, 2)

	fake := &fakePersister{failInits: 2}
	b.setPersister(fake)
	m := newShareMember(t, b, "sg", "m")
	m.join("t")
	testwait.Until(t, 30*time.Second, "the failing initializations retried", func() bool {
		if code := m.heartbeat(); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
		inits, _ := fake.counts()
		if inits < 3 && len(m.assigned) != 0 {
			t.Fatalf("assigned %v before the share state was initialized", m.assigned)
		}
		return inits >= 3
	})
	m.waitAssigned(0, 1, 2)
	fake.mu.Lock()
	first := fake.inits[0]
	fake.mu.Unlock()
	if first.GroupID != "sg" || len(first.Topics) != 1 || len(first.Topics[0].Partitions) != 3 ||
		first.Topics[0].Partitions[0].StartOffset != -1 || first.Topics[0].Partitions[0].StateEpoch < 1 {
		t.Errorf("InitializeShareGroupState %+v", first)
	}
}

// A share group's own share.* configs: described with their broker defaults and
// sources, altered within the broker's group.share.* bounds (INVALID_CONFIG with
// Kafka's messages otherwise), heard by the members (the heartbeat interval) and read
// by the share-partition manager (shareGroupConfig).
func TestShareGroupConfigs(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"group.share.record.lock.duration.ms": "20000", "group.share.heartbeat.interval.ms": "6000"})
	b.setPersister(&fakePersister{})
	cl := newClient(t, b)

	r := describeGroup(t, cl, "sg")
	if v, src, _ := groupEntry(t, r, "share.record.lock.duration.ms"); v != "20000" || src != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("lock duration %s from %v, want 20000 STATIC_BROKER_CONFIG", v, src)
	}
	if v, src, _ := groupEntry(t, r, "share.delivery.count.limit"); v != "5" || src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("delivery count limit %s from %v, want 5 DEFAULT_CONFIG", v, src)
	}
	for _, c := range r.Configs {
		if c.Name == "share.auto.offset.reset" && (derefOr(c.Value) != "latest" || c.ConfigType != kmsg.ConfigTypeString) {
			t.Errorf("share.auto.offset.reset %+v", c)
		}
	}
	if got := b.shareGroupConfig("sg"); got.Partition.RecordLockDurationMs != 20000 || got.Partition.DeliveryCountLimit != 5 ||
		got.Partition.MaxRecordLocks != 2000 || got.AutoOffsetReset != "latest" || got.ReadCommitted {
		t.Errorf("defaults read as %+v", got)
	}

	for _, c := range []struct{ name, value, want string }{
		{"share.record.lock.duration.ms", "60001", "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"},
		{"share.delivery.count.limit", "11", "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"},
		{"share.session.timeout.ms", "44000", "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{"share.auto.offset.reset", "soon", "the value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."},
		{"share.isolation.level", "serializable", "String must be one of: read_committed, read_uncommitted"},
	} {
		code, msg := alterGroup(t, cl, "sg", map[string]*string{c.name: &c.value})
		if code != kerr.InvalidConfig.Code || !strings.Contains(msg, c.want) {
			t.Errorf("%s=%s: %v %q, want INVALID_CONFIG %q", c.name, c.value, kerr.ErrorForCode(code), msg, c.want)
		}
	}
	if code, msg := alterGroup(t, cl, "sg", map[string]*string{
		"share.record.lock.duration.ms": kmsg.StringPtr("15000"), "share.delivery.count.limit": kmsg.StringPtr("3"),
		"share.partition.max.record.locks": kmsg.StringPtr("500"), "share.auto.offset.reset": kmsg.StringPtr("by_duration:PT1H"),
		"share.isolation.level": kmsg.StringPtr("read_committed"), "share.heartbeat.interval.ms": kmsg.StringPtr("7000"),
	}); code != 0 {
		t.Fatalf("alter: %v %s", kerr.ErrorForCode(code), msg)
	}
	testwait.Until(t, 30*time.Second, "the group's configs read", func() bool {
		got := b.shareGroupConfig("sg")
		return got.Partition.RecordLockDurationMs == 15000 && got.Partition.DeliveryCountLimit == 3 && got.Partition.MaxRecordLocks == 500 &&
			got.AutoOffsetReset == "by_duration:pt1h" && got.ReadCommitted
	})
	if v, src, _ := groupEntry(t, describeGroup(t, cl, "sg"), "share.record.lock.duration.ms"); v != "15000" || src != kmsg.ConfigSourceGroupConfig {
		t.Errorf("after alter: %s from %v", v, src)
	}
	if got := b.shareGroupConfig("other"); got.Partition.RecordLockDurationMs != 20000 {
		t.Errorf("another group reads %+v", got)
	}

	// The members hear the heartbeat interval: the group's own, else the broker's.
	m := newShareMember(t, b, "sg", "m")
	m.join("t-missing")
	if m.interval != 7000 {
		t.Errorf("the group's member heartbeat interval %d, want 7000", m.interval)
	}
	o := newShareMember(t, b, "other", "m")
	o.join("t-missing")
	if o.interval != 6000 {
		t.Errorf("another group's member heartbeat interval %d, want 6000", o.interval)
	}
}

// The group.share.* properties are checked across each other at start, as Kafka.
func TestShareGroupProperties(t *testing.T) {
	if _, err := checkProps(t, false, map[string]string{"group.share.record.lock.duration.ms": "10000"}); err == nil ||
		!strings.Contains(err.Error(), "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms") {
		t.Errorf("lock duration under its minimum: %v", err)
	}
	if _, err := checkProps(t, false, map[string]string{"group.share.delivery.count.limit": "11"}); err == nil ||
		!strings.Contains(err.Error(), "Value must be no more than 10") {
		t.Errorf("delivery count limit 11: %v", err)
	}
	got := shareGroupsConfig(&Config{Properties: map[string]string{
		"group.share.session.timeout.ms": "50000", "group.share.heartbeat.interval.ms": "6000", "group.share.max.size": "7"}})
	if got.SessionTimeout != 50*time.Second || got.HeartbeatInterval != 6*time.Second || got.MaxSize != 7 {
		t.Errorf("share groups config %+v", got)
	}
}

// franz-go's share consumer (kgo.ShareGroup) joins through ShareGroupHeartbeat and
// is assigned the topic's partitions once their share state is initialized.
func TestShareGroupFranzGoJoins(t *testing.T) {
	b := startTestBroker(t, "", nil)
	b.setPersister(&fakePersister{})
	mustCreateTopic(t, newAdmin(t, b), "t", 2, nil)
	consumer := newClient(t, b, kgo.ShareGroup("kgo-share"), kgo.ConsumeTopics("t"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() { // the share consumer heartbeats while it polls
		defer close(done)
		for ctx.Err() == nil && !consumer.PollFetches(ctx).IsClientClosed() {
		}
	}()
	cl := newClient(t, b)
	testwait.ForWhat(t, 60*time.Second, "the kgo member assigned both partitions", func() error {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{"kgo-share"}
		resp, err := req.RequestWith(testContext(t), cl)
		if err != nil {
			return err
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			return kerr.ErrorForCode(g.ErrorCode)
		}
		if len(g.Members) != 1 || len(g.Members[0].Assignment.TopicPartitions) != 1 || len(g.Members[0].Assignment.TopicPartitions[0].Partitions) != 2 {
			return fmt.Errorf("described %+v", g.Members)
		}
		return nil
	})
}
