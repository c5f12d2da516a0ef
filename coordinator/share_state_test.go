package coordinator

import (
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's share coordinator key and partition rule: "group:topicId:partition" with
// the topic id as Kafka prints a Uuid, hashed like a group id.
func TestShareCoordinatorKey(t *testing.T) {
	id := [16]byte{0xdc, 0x73, 0x62, 0x13, 0xde, 0xc3, 0x49, 0x16, 0xa7, 0x89, 0xc6, 0x02, 0x1f, 0x2a, 0x64, 0xd3}
	if k := ShareCoordinatorKey("g", id, 3); k != "g:3HNiE97DSRanicYCHypk0w:3" {
		t.Fatalf("key %q", k)
	}
	// "a:b:0".hashCode() = 91405439 in Java; 91405439 % 50 = 39.
	if p := ShareStatePartitionFor("a:b:0", 50); p != 39 {
		t.Fatalf("partition %d", p)
	}
}

// A WriteShareGroupState is answered only once the high watermark passes its record;
// until then a read answers the state without it. A key not served here is
// NOT_COORDINATOR.
func TestShareCoordinator_AnswersOnceCommitted(t *testing.T) {
	sc := NewShareCoordinator(ShareStateConfig{Partitions: func() int32 { return 1 }})
	t.Cleanup(sc.Close)
	log := newFakeLog(1)
	sc.Reconcile(map[int32]int32{0: 1}, func(int32) (LoadSpec, bool) { return LoadSpec{Log: log}, true })
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(sc.Serving()) == 1 })
	id := [16]byte{7}

	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = "g"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = id
	ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	ip.StateEpoch, ip.StartOffset = 1, 100
	it.Partitions = append(it.Partitions, ip)
	init.Topics = append(init.Topics, it)
	ch := sc.InitializeShareGroupState(init)
	select {
	case resp := <-ch:
		t.Fatalf("answered before the high watermark moved: %+v", resp)
	case <-time.After(50 * time.Millisecond):
	}
	log.set(func(f *fakeLog) { f.hw = f.leo })
	resp := (<-ch).(*kmsg.InitializeShareGroupStateResponse)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("initialize: %v", kerr.ErrorForCode(c))
	}
	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "g"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.LeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	read.Topics = append(read.Topics, rt)
	got := (<-sc.ReadShareGroupState(read)).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.StartOffset != 100 || got.StateEpoch != 1 {
		t.Fatalf("read %+v", got)
	}

	sc2 := NewShareCoordinator(ShareStateConfig{Partitions: func() int32 { return 1 }})
	t.Cleanup(sc2.Close)
	resp = (<-sc2.InitializeShareGroupState(init)).(*kmsg.InitializeShareGroupStateResponse)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.NotCoordinator.Code {
		t.Fatalf("not loaded here: %v", kerr.ErrorForCode(c))
	}
}
