package broker

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// imageConsumerTopics is b's metadata image as the group shard reads it.
func imageConsumerTopics(b *Broker) group.ConsumerTopics { return consumerTopics{im: b.Image()} }

// shareHeartbeatDirect sends member's ShareGroupHeartbeat for share group id at epoch
// straight to the group's shard, once the coordinator serves the group.
func shareHeartbeatDirect(t *testing.T, b *Broker, id, member string, epoch int32, topics ...string) {
	t.Helper()
	if r := newAdmin(t, b).FindGroupCoordinators(testContext(t), id)[id]; r.Err != nil {
		t.Fatal(r.Err)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = 1, id, member, epoch, topics
	testwait.ForWhat(t, 30*time.Second, "the share heartbeat", func() error {
		resp := <-b.groups.Respond(id, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
			return s.ShareGroupHeartbeat(now, group.Client{ID: "direct", Host: "/127.0.0.1"}, hb, imageConsumerTopics(b), send)
		}, func(code int16) kmsg.Response {
			r := hb.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			r.ErrorCode = code
			return r
		})
		return kerr.ErrorForCode(resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode)
	})
}

// sharePartitionsOf returns share group id's initialized, initializing and deleting
// topics as "name:partitions" strings.
func sharePartitionsOf(t *testing.T, b *Broker, id string) (initialized, initializing, deleting string) {
	t.Helper()
	done := make(chan [3]string, 1)
	b.groups.Submit(id, func(_ time.Time, s *group.Shard) group.Effects {
		g := s.ShareGroup(id)
		if g == nil {
			done <- [3]string{"no group"}
			return group.Effects{}
		}
		in, ing, del := g.SharePartitions()
		show := func(ts []group.ShareTopicPartitions) string {
			out := ""
			for _, t := range ts {
				out += fmt.Sprintf("%s:%v ", t.TopicName, t.Partitions)
			}
			return out
		}
		names := ""
		for _, d := range del {
			names += d.TopicName + " "
		}
		done <- [3]string{show(in), show(ing), names}
		return group.Effects{}
	}, func(code int16) { done <- [3]string{kerr.ErrorForCode(code).Error()} })
	got := <-done
	return got[0], got[1], got[2]
}

// The share group offsets APIs over the wire (kadm's helpers), with a fake Persister:
// advertised versions; describe of an unknown group; describe with start offsets and
// lag; alter refused on a group with members and applied on an empty one (a bumped
// state epoch, unknown partitions answered UNKNOWN_TOPIC_OR_PARTITION); delete, after
// which the group has no share state for the topic.
func TestShareGroupOffsetsWire(t *testing.T) {
	f := newFakeSharePersister()
	b := startTestBroker(t, "", nil)
	b.setPersister(f)
	adm := newAdmin(t, b)
	ctx := testContext(t)
	mustCreateTopic(t, adm, "t", 3, nil)

	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for key, max := range map[kmsg.Key]int16{kmsg.DescribeShareGroupOffsets: 1, kmsg.AlterShareGroupOffsets: 0, kmsg.DeleteShareGroupOffsets: 0} {
		for _, v := range versions {
			if lo, hi, ok := v.KeyVersions(int16(key)); !ok || lo != 0 || hi != max {
				t.Fatalf("%v advertised %v %d-%d", key, ok, lo, hi)
			}
		}
	}

	// An unknown group: GROUP_ID_NOT_FOUND with Kafka's message.
	if _, err := adm.FindGroupCoordinators(ctx, "sg")["sg"], error(nil); err != nil {
		t.Fatal(err)
	}
	testwait.ForWhat(t, 30*time.Second, "the coordinator", func() error {
		d, err := adm.DescribeShareGroupOffsets(ctx, "sg")
		if err != nil {
			return err
		}
		if !errors.Is(d["sg"].Err, kerr.GroupIDNotFound) {
			return fmt.Errorf("unknown group: %v", d["sg"].Err)
		}
		return nil
	})

	// A member joins; its partitions' share state is initialized at offset 0 (as the
	// heartbeat's initialization would); 10 records are produced to partition 0.
	shareHeartbeatDirect(t, b, "sg", "m1", 0, "t")
	if _, err := adm.AlterShareGroupOffsets(ctx, "sg", kadm.Offsets{"t": {0: {Topic: "t", Partition: 0, At: 0}}}); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("alter with a member: %v", err)
	}
	topicID := b.Image().Topic("t").ID
	f.mu.Lock()
	for p := range int32(3) {
		f.state[fakeShareKey{"sg", topicID, p}] = fakeShareState{stateEpoch: 1, leaderEpoch: 0, startOffset: 0}
	}
	f.mu.Unlock()
	initialized := make(chan struct{})
	b.groups.Submit("sg", func(now time.Time, s *group.Shard) group.Effects {
		defer close(initialized)
		return s.ShareGroupStateInitialized(now, "sg", []group.ShareTopicPartitions{{TopicID: topicID, TopicName: "t", Partitions: []int32{0, 1, 2}}}, 0, imageConsumerTopics(b))
	}, func(code int16) { t.Errorf("initialize: %v", kerr.ErrorForCode(code)) })
	<-initialized
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := adm.DescribeShareGroupOffsets(ctx, "sg")
	if err != nil || d["sg"].Err != nil {
		t.Fatal(err, d["sg"].Err)
	}
	if got := d["sg"].Offsets["t"][0]; got.StartOffset != 0 || got.Lag != 10 || got.Err != nil || got.TopicID != kadm.TopicID(topicID) {
		t.Fatalf("described p0 %+v", got)
	}
	if got := d["sg"].Offsets["t"][2]; got.StartOffset != 0 || got.Lag != 0 {
		t.Fatalf("described p2 %+v", got)
	}

	// The member leaves: alter sets partition 0 to 4 under a bumped state epoch.
	shareHeartbeatDirect(t, b, "sg", "m1", -1, "t")
	altered, err := adm.AlterShareGroupOffsets(ctx, "sg", kadm.Offsets{
		"t":    {0: {Topic: "t", Partition: 0, At: 4}, 7: {Topic: "t", Partition: 7, At: 1}},
		"nope": {0: {Topic: "nope", Partition: 0, At: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := altered.Lookup("t", 0); e != nil {
		t.Fatalf("alter t-0: %v", e)
	}
	for _, tp := range []struct {
		topic string
		p     int32
	}{{"t", 7}, {"nope", 0}} {
		if e, _ := altered.Lookup(tp.topic, tp.p); !errors.Is(e, kerr.UnknownTopicOrPartition) {
			t.Fatalf("alter %s-%d: %v", tp.topic, tp.p, e)
		}
	}
	f.mu.Lock()
	last := f.initialized[len(f.initialized)-1]
	f.mu.Unlock()
	if len(last.Topics) != 1 || len(last.Topics[0].Partitions) != 1 || last.Topics[0].Partitions[0].StartOffset != 4 || last.Topics[0].Partitions[0].StateEpoch <= 1 {
		t.Fatalf("initialized %+v", last.Topics)
	}
	if in, ing, _ := sharePartitionsOf(t, b, "sg"); in != "t:[0 1 2] " || ing != "" {
		t.Fatalf("after alter: initialized %q initializing %q", in, ing)
	}
	d, err = adm.DescribeShareGroupOffsets(ctx, "sg")
	if err != nil || d["sg"].Err != nil {
		t.Fatal(err, d["sg"].Err)
	}
	if got := d["sg"].Offsets["t"][0]; got.StartOffset != 4 || got.Lag != 6 {
		t.Fatalf("described after alter %+v", got)
	}

	// Delete: t's state goes, the group forgets it; an unknown topic is refused.
	deleted, err := adm.DeleteShareGroupOffsets(ctx, "sg", "t", "nope")
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := deleted.Lookup("t"); !ok || e != nil {
		t.Fatalf("delete t: %v %v", ok, e)
	}
	if e, _ := deleted.Lookup("nope"); !errors.Is(e, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete nope: %v", e)
	}
	f.mu.Lock()
	del := f.deleted
	f.mu.Unlock()
	if len(del) != 1 || len(del[0].Topics) != 1 || len(del[0].Topics[0].Partitions) != 3 {
		t.Fatalf("deleted %+v", del)
	}
	if in, ing, dl := sharePartitionsOf(t, b, "sg"); in != "" || ing != "" || dl != "" {
		t.Fatalf("after delete: %q %q %q", in, ing, dl)
	}
	d, err = adm.DescribeShareGroupOffsets(ctx, "sg")
	if err != nil || d["sg"].Err != nil || len(d["sg"].Offsets) != 0 {
		t.Fatalf("described after delete %v %+v", err, d["sg"])
	}
	// A named partition without state is described with start offset -1.
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = "sg"
	rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "t", Partitions: []int32{1}}, {Topic: "nope", Partitions: []int32{0}}}
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var starts []string
	for _, tp := range resp.Groups[0].Topics {
		for _, p := range tp.Partitions {
			starts = append(starts, fmt.Sprintf("%s-%d:%d", tp.Topic, p.Partition, p.StartOffset))
		}
	}
	slices.Sort(starts)
	if fmt.Sprint(starts) != "[nope-0:-1 t-1:-1]" {
		t.Fatalf("named partitions %v", starts)
	}
}

// Without a Persister (no share coordinator wired) the share offsets APIs answer
// COORDINATOR_NOT_AVAILABLE; a classic group is not a share group.
func TestShareGroupOffsetsUnavailableAndOtherGroupTypes(t *testing.T) {
	b := startTestBroker(t, "", nil)
	b.setPersister(nil)
	adm := newAdmin(t, b)
	ctx := testContext(t)
	mustCreateTopic(t, adm, "t", 1, nil)
	if _, err := adm.DeleteShareGroupOffsets(ctx, "sg", "t"); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("no persister: %v", err)
	}

	b.setPersister(newFakeSharePersister())
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "classic", offsets); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = "classic"
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0}}}}
	resp, err := req.RequestWith(ctx, newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.GroupIDNotFound.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Group classic is not a share group." {
		t.Fatalf("classic group: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
}
