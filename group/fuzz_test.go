package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzShardOperations drives a shard with an arbitrary sequence of requests, timer
// firings, failed and timed-out writes and unloads. Nothing may panic, no request may be answered
// twice, and after a final Unload every request has been answered exactly once.
func FuzzShardOperations(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 9, 2, 0, 3, 1, 4, 0, 5, 2, 9, 9, 6, 0, 7, 1, 8, 2})
	f.Add([]byte{0, 10, 0, 10, 9, 1, 0, 11, 3, 0, 12, 9, 9, 9, 13, 0, 0, 1, 1})
	f.Add([]byte{0, 0, 9, 1, 6, 0, 4, 4, 1, 0, 14, 0, 4, 8, 14, 1, 7, 0, 12, 0, 14, 2, 7, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		cfg := testConfig()
		cfg.MaxSize = 3
		cfg.InitialRebalanceDelay = time.Second
		h := newHarness(t, cfg)
		var counts []*int
		track := func() func(kmsg.Response) {
			n := new(int)
			counts = append(counts, n)
			return func(kmsg.Response) {
				if *n++; *n > 1 {
					t.Fatalf("request answered twice")
				}
			}
		}
		// Known member ids and generations, learned from responses.
		members := []string{""}
		var gen int32
		learn := func(r kmsg.Response) {
			if j, ok := r.(*kmsg.JoinGroupResponse); ok && j.MemberID != "" {
				members = append(members, j.MemberID)
				if j.Generation > 0 {
					gen = j.Generation
				}
			}
		}
		next := func(i *int) byte {
			if *i >= len(ops) {
				return 0
			}
			b := ops[*i]
			*i++
			return b
		}
		groups := []string{"g", "h"}
		for i := 0; i < len(ops); {
			op := next(&i) % 15
			arg := next(&i)
			groupID := groups[int(arg)%len(groups)]
			memberID := members[int(arg)%len(members)]
			g := gen - int32(arg%2)
			switch op {
			case 0, 10:
				send := track()
				req := kmsg.NewPtrJoinGroupRequest()
				req.Version = int16(arg % 10)
				req.Group, req.MemberID = groupID, memberID
				req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 6000, 8000
				req.ProtocolType = "consumer"
				req.Protocols = []kmsg.JoinGroupRequestProtocol{protocol("range", consumerMeta("t"))}
				if arg%3 == 0 && req.Version >= 5 {
					inst := "i" + string(rune('0'+arg%4))
					req.InstanceID = &inst
				}
				if arg%7 == 0 {
					req.Protocols = append(req.Protocols, protocol("sticky", []byte{byte(arg)}))
				}
				h.run(h.s.JoinGroup(h.now, Client{ID: "c"}, req, func(r kmsg.Response) { learn(r); send(r) }))
			case 1, 11:
				send := track()
				req := kmsg.NewPtrSyncGroupRequest()
				req.Version = int16(arg % 6)
				req.Group, req.MemberID, req.Generation = groupID, memberID, g
				for _, m := range members[1:] {
					req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte{arg}})
				}
				h.run(h.s.SyncGroup(h.now, req, send))
			case 2:
				send := track()
				req := kmsg.NewPtrHeartbeatRequest()
				req.Group, req.MemberID, req.Generation = groupID, memberID, g
				h.run(h.s.Heartbeat(h.now, req, send))
			case 3:
				send := track()
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Version = int16(arg % 6)
				req.Group, req.MemberID = groupID, memberID
				req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: memberID}}
				h.run(h.s.LeaveGroup(h.now, req, send))
			case 4:
				send := track()
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Version = int16(arg % 10)
				req.Group, req.MemberID, req.Generation = groupID, memberID, g
				if arg%4 == 0 {
					req.Generation, req.MemberID = -1, ""
				}
				req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: int32(arg % 3), Offset: int64(arg)}}}}
				h.run(h.s.OffsetCommit(h.now, req, kmsg.NewPtrOffsetCommitResponse(), send))
			case 5:
				h.advance(time.Duration(arg) * 100 * time.Millisecond)
			case 6:
				h.hold = true
			case 7:
				h.release([]int16{0, errNotCoordinator, errCoordinatorNotAvailable}[arg%3])
			case 8:
				h.writeCode = []int16{0, 0, errCoordinatorNotAvailable}[arg%3]
			case 9:
				h.advance(time.Duration(arg) * time.Second)
			case 14:
				h.timeOut() // held writes answered; a later release decides whether they landed
			case 12:
				n := new(int)
				counts = append(counts, n)
				h.run(h.s.DeleteGroup(h.now, groupID, func(int16) {
					if *n++; *n > 1 {
						t.Fatalf("delete answered twice")
					}
				}))
			case 13:
				send := track()
				req := kmsg.NewPtrOffsetDeleteRequest()
				req.Group = groupID
				req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
				h.run(h.s.OffsetDelete(h.now, req, send))
				h.run(h.s.ExpireOffsets(h.now))
				_ = h.s.DescribeGroup(groupID, 5, true)
				_ = h.s.ListGroups(nil, nil)
				_ = h.s.OffsetFetch(groupID, nil, true)
			}
			for _, id := range groups {
				if gr := h.s.groups[id]; gr != nil && len(gr.members) > 3 && !gr.is(statePreparingRebalance) {
					t.Fatalf("group %s has %d members, group.max.size is 3", id, len(gr.members))
				}
			}
		}
		// Whatever is held lands: the committed offsets are then what a load of the log
		// shows (timed-out writes included, failed appends excluded).
		h.release(0)
		loaded := replayLog(t, h.batches)
		for _, id := range groups {
			live, load := fetchAll(h.s, id), fetchAll(loaded, id)
			if live != load {
				t.Fatalf("group %s: live offsets %s, a load shows %s", id, live, load)
			}
		}
		h.run(h.s.Unload())
		for i, n := range counts {
			if *n != 1 {
				t.Fatalf("request %d answered %d times", i, *n)
			}
		}
	})
}

// fetchAll is every committed offset of groupID's topic "t", partitions 0-2.
func fetchAll(s *Shard, groupID string) string {
	got := s.OffsetFetch(groupID, []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1, 2}}}, false)
	out := ""
	for _, p := range got.Topics[0].Partitions {
		out += fmt.Sprintf("%d:%d ", p.Partition, p.Offset)
	}
	return out
}
