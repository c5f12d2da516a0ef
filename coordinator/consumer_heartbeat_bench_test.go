package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkConsumerHeartbeat is the coordinator's cost of one steady
// ConsumerGroupHeartbeat (nothing to write: the member's epoch and assignment are
// current) on a partition holding 100 groups of 10 members, through the runtime: the
// executor round trip, the shard's heartbeat and the expiry timer re-set at the
// partition's next deadline (a scan of its 1000 members).
//
//	go test ./coordinator/ -run '^$' -bench BenchmarkConsumerHeartbeat -benchtime 20000x
func BenchmarkConsumerHeartbeat(b *testing.B) {
	const groups, members = 100, 10
	cfg := group.DefaultConfig()
	cfg.ConsumerTopics = func() group.ConsumerTopics {
		return group.ConsumerTopicMap{consumerTestTopic.Name: consumerTestTopic}
	}
	gc := NewGroupCoordinator(GroupConfig{Group: cfg, Partitions: func() int32 { return 1 }})
	b.Cleanup(gc.Close)
	log := newFakeLog(1)
	log.set(func(f *fakeLog) { f.autoCommit = true })
	gc.Reconcile(map[int32]int32{0: 1}, func(int32) (LoadSpec, bool) { return LoadSpec{Log: log}, true })
	for len(gc.Serving()) == 0 {
		time.Sleep(time.Millisecond)
	}
	send := func(g, m string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		r := consumerHeartbeatRequest(g, m, epoch)
		return (<-gc.ConsumerGroupHeartbeat(r, group.Client{ID: "c", Host: "/127.0.0.1"}, nil)).(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	type member struct {
		g, m  string
		epoch int32
	}
	var all []member
	for g := range groups {
		for m := range members {
			mb := member{g: fmt.Sprintf("g%d", g), m: fmt.Sprintf("m%d", m)}
			resp := send(mb.g, mb.m, 0)
			if resp.ErrorCode != 0 {
				b.Fatalf("join: %d", resp.ErrorCode)
			}
			all = append(all, mb)
		}
	}
	// Settle: heartbeat until every member is at its group's epoch.
	for range 5 {
		for i := range all {
			all[i].epoch = send(all[i].g, all[i].m, all[i].epoch).MemberEpoch
		}
	}
	b.ResetTimer()
	for i := range b.N {
		mb := &all[i%len(all)]
		if resp := send(mb.g, mb.m, mb.epoch); resp.ErrorCode != 0 {
			b.Fatalf("heartbeat: %d", resp.ErrorCode)
		}
	}
}
