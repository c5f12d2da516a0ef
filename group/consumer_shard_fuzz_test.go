package group

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The replay property of the consumer groups of a Shard: whatever heartbeats, leaves,
// expiries, topic changes, failed and timed-out writes and failovers happen, a fresh
// Shard replaying the records committed so far holds the same consumer groups as the
// live one (whenever no write is pending and no group waits for its resync).

// cgClient is what a consumer remembers between heartbeats.
type cgClient struct {
	epoch int32
	owned AssignedPartitions
}

// cgDriver drives a harness's Shard with consumer group operations chosen by next.
type cgDriver struct {
	h       *harness
	topics  ConsumerTopicMap
	clients map[string]*cgClient // by group + "/" + member
	nextTop int
	// classics are the classic consumers, by group + "/" + member
	// (consumer_migrate.go, consumer_classic.go).
	classics map[string]*classicFuzzClient
}

// classicFuzzClient is what a classic consumer of topic "a" remembers.
type classicFuzzClient struct {
	id    string
	gen   int32
	owned []int32
}

func newCGDriver(t *testing.T) *cgDriver {
	d := &cgDriver{topics: cgTopics(3, 2, 4), clients: map[string]*cgClient{}, nextTop: 3, classics: map[string]*classicFuzzClient{}}
	cfg := testConfig()
	cfg.ConsumerTopics = func() ConsumerTopics { return d.topics }
	d.h = newHarness(t, cfg)
	return d
}

var cgGroupIDs = []string{"g", "h"}

// cgRegexes are the regular expressions members subscribe with ("" clears one; "(" is
// refused).
var cgRegexes = []string{"[ab]", "c|d", ".*", "e.*", "", "("}

// step performs one operation chosen by op and arg.
func (d *cgDriver) step(op, arg byte) {
	h := d.h
	groupID := cgGroupIDs[int(arg)%len(cgGroupIDs)]
	member := fmt.Sprintf("m%d", (arg/2)%5)
	key := groupID + "/" + member
	c := d.clients[key]
	if c == nil {
		c = &cgClient{}
		d.clients[key] = c
	}
	var req *kmsg.ConsumerGroupHeartbeatRequest
	if op >= 208 && op%15 <= 1 { // ops 210, 211, 225, 226: a classic consumer
		d.classicStep(op, groupID, key)
		return
	}
	switch op % 15 {
	case 0, 1: // join, maybe static
		names := []string{}
		for i, n := range []string{"a", "b", "c", "d", "x"} {
			if arg&(1<<uint(i)) != 0 || i == int(arg)%5 {
				names = append(names, n)
			}
		}
		req = cgJoinRequest(member, names...)
		if arg%3 == 1 { // by regex, alone or with the names
			req.SubscribedTopicRegex = kmsg.StringPtr(cgRegexes[int(op/16)%len(cgRegexes)])
			if arg%2 == 0 {
				req.SubscribedTopicNames = nil
			}
		}
		if op%15 == 1 {
			req.InstanceID = kmsg.StringPtr(fmt.Sprintf("i%d", arg%3))
		}
		if arg%5 == 0 {
			req.ServerAssignor = kmsg.StringPtr("range")
		}
	case 2, 3, 4: // heartbeat at the client's epoch with what it owns
		req = cgHBRequest(member, c.epoch, c.owned)
		if c.owned == nil {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		if op >= 240 { // a new regular expression
			req.SubscribedTopicRegex = kmsg.StringPtr(cgRegexes[int(arg)%len(cgRegexes)])
		}
	case 5: // a stale epoch
		req = cgHBRequest(member, c.epoch-1, nil)
	case 6:
		req = cgHBRequest(member, LeaveMemberEpoch, nil)
	case 7:
		req = cgHBRequest(member, LeaveStaticMemberEpoch, nil)
		req.InstanceID = kmsg.StringPtr(fmt.Sprintf("i%d", arg%3))
	case 8: // time passes; the runtime's timer fires
		h.now = h.now.Add(time.Duration(arg%64) * time.Second)
		if at, ok := h.s.NextConsumerDeadline(); ok && !at.After(h.now) {
			h.run(h.s.ExpireConsumerGroups(h.now, d.topics))
		}
	case 9: // the metadata image changes
		switch arg % 4 {
		case 0:
			name := string(rune('a' + arg%4))
			if t, ok := d.topics[name]; ok {
				t.Partitions++
				d.topics[name] = t
			}
		case 1:
			delete(d.topics, string(rune('a'+arg%4)))
		case 2:
			d.nextTop++
			name := string(rune('a' + arg%4))
			if _, ok := d.topics[name]; !ok {
				d.topics[name] = AssignorTopic{ID: testTopicID(d.nextTop), Name: name, Partitions: int32(1 + arg%3)}
			}
		case 3: // a topic only expressions name
			d.nextTop++
			name := fmt.Sprintf("e%d", arg%3)
			if _, ok := d.topics[name]; ok {
				delete(d.topics, name)
			} else {
				d.topics[name] = AssignorTopic{ID: testTopicID(d.nextTop), Name: name, Partitions: 2}
			}
		}
	case 10: // the next writes fail, or succeed again
		h.writeCode = []int16{0, 0, errNotCoordinator, errCoordinatorNotAvailable}[arg%4]
	case 11: // writes are held; the runtime's commit timeout answers them
		if arg%2 == 0 {
			h.hold = true
		} else {
			h.timeOut()
		}
	case 12: // held writes' fate becomes known
		h.release([]int16{0, 0, errNotCoordinator}[arg%3])
	case 13: // failover: a new coordinator loads the log
		if len(h.held) == 0 {
			d.failover()
		}
	case 14: // DeleteGroups or the offsets' expiry; a member or an admin commits first
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Version, commit.Group, commit.Generation = 9, groupID, -1
		if arg%4 == 0 {
			commit.MemberID, commit.Generation = member, c.epoch
		}
		commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: int64(arg)}}}}
		if arg%2 == 0 {
			h.run(h.s.OffsetCommit(h.now, commit, kmsg.NewPtrOffsetCommitResponse(), func(kmsg.Response) {}))
		}
		if arg%3 == 1 {
			h.now = h.now.Add(h.s.cfg.OffsetsRetention)
			h.run(h.s.ExpireOffsets(h.now))
		} else {
			h.run(h.s.DeleteGroup(h.now, groupID, func(int16) {}))
		}
	}
	if req != nil {
		req.Group = groupID
		h.run(h.s.ConsumerGroupHeartbeat(h.now, Client{ID: "client", Host: "/127.0.0.1"}, req, d.topics, func(r kmsg.Response) {
			d.learn(c, req, r.(*kmsg.ConsumerGroupHeartbeatResponse))
		}))
	}
}

// classicStep is a classic consumer's request: op 210 and 226 join (then sync; a
// leader assigns topic "a" round robin), 211 heartbeats, 225 leaves.
func (d *cgDriver) classicStep(op byte, groupID, key string) {
	h := d.h
	c := d.classics[key]
	if c == nil {
		c = &classicFuzzClient{}
		d.classics[key] = c
	}
	reset := func(code int16) {
		if code == kerr.UnknownMemberID.Code || code == kerr.IllegalGeneration.Code {
			c.gen, c.owned = 0, nil
			if code == kerr.UnknownMemberID.Code {
				c.id = ""
			}
		}
	}
	switch op {
	case 211:
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = groupID, c.id, c.gen
		h.run(h.s.Heartbeat(h.now, req, func(r kmsg.Response) { reset(r.(*kmsg.HeartbeatResponse).ErrorCode) }))
		return
	case 225:
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = groupID, c.id
		h.run(h.s.LeaveGroup(h.now, req, func(kmsg.Response) {}))
		c.id, c.gen, c.owned = "", 0, nil
		return
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.MemberID, join.ProtocolType = 3, groupID, c.id, "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 20000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{protocol("range", classicSubscription(c.owned))}
	var joined *kmsg.JoinGroupResponse
	h.run(h.s.JoinGroup(h.now, Client{ID: "classic", Host: "/127.0.0.1"}, join, func(r kmsg.Response) { joined = r.(*kmsg.JoinGroupResponse) }))
	h.advance(0) // a classic group's join phase ends
	if joined == nil || joined.ErrorCode != 0 {
		if joined != nil {
			reset(joined.ErrorCode)
		}
		return
	}
	c.id, c.gen = joined.MemberID, joined.Generation
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = groupID, c.id, c.gen
	if joined.LeaderID == c.id && len(joined.Members) > 0 {
		assign := make([]kmsg.ConsumerMemberAssignment, len(joined.Members))
		for p := int32(0); p < d.topics["a"].Partitions; p++ {
			a := &assign[int(p)%len(assign)]
			if len(a.Topics) == 0 {
				a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "a"}}
			}
			a.Topics[0].Partitions = append(a.Topics[0].Partitions, p)
		}
		for i, m := range joined.Members {
			sync.GroupAssignment = append(sync.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m.MemberID, MemberAssignment: assign[i].AppendTo(nil)})
		}
	}
	gen := c.gen
	h.run(h.s.SyncGroup(h.now, sync, func(r kmsg.Response) {
		resp := r.(*kmsg.SyncGroupResponse)
		if resp.ErrorCode != 0 || c.gen != gen {
			reset(resp.ErrorCode)
			return
		}
		var a kmsg.ConsumerMemberAssignment
		if a.ReadFrom(resp.MemberAssignment) == nil {
			c.owned = nil
			for _, t := range a.Topics {
				c.owned = append(c.owned, t.Partitions...)
			}
		}
	}))
}

// learn updates the client from its response, as a KIP-848 consumer does.
func (d *cgDriver) learn(c *cgClient, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) {
	switch resp.ErrorCode {
	case 0:
		c.epoch = resp.MemberEpoch
		if req.MemberEpoch < 0 {
			c.epoch, c.owned = 0, nil
		} else if a := respAssignment(resp); a != nil {
			c.owned = a
		}
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		c.epoch, c.owned = 0, nil
	}
}

// failover replaces the shard with one loaded from the committed log.
func (d *cgDriver) failover() {
	h := d.h
	h.release(0)
	h.run(h.s.Unload())
	h.s = replayLog(h.t, h.batches)
	h.writeCode = 0
	h.run(h.s.Loaded(h.now))
}

// check asserts the replay property when the log is settled.
func (d *cgDriver) check() {
	h := d.h
	t := h.t
	t.Helper()
	for _, id := range h.s.ConsumerGroupIDs() {
		if err := consumerInvariants(h.s.ConsumerGroup(id)); err != nil {
			t.Fatalf("group %s: %v", id, err)
		}
	}
	// A failed write leaves a group to resync (consumerDirty) or a downgraded group's
	// tombstones to write again (retiredConsumers): the log catches up at its next write.
	if len(h.held) > 0 || len(h.s.consumerDirty) > 0 || len(h.s.retiredConsumers) > 0 {
		return
	}
	loaded := replayLog(t, h.batches)
	live, load := h.s.ConsumerGroupIDs(), loaded.ConsumerGroupIDs()
	if fmt.Sprint(live) != fmt.Sprint(load) {
		t.Fatalf("live consumer groups %v, a load gives %v", live, load)
	}
	for _, id := range live {
		a, b := h.s.ConsumerGroup(id), loaded.ConsumerGroup(id)
		if err := sameConsumerGroup(a, b); err != nil {
			t.Fatalf("group %s: a load differs: %v", id, err)
		}
		if a.State() != b.State() {
			t.Fatalf("group %s: state %v, a load gives %v", id, a.State(), b.State())
		}
	}
	for _, id := range cgGroupIDs {
		if live, load := fetchA(h.s, id), fetchA(loaded, id); live != load {
			t.Fatalf("group %s: offsets %s, a load gives %s", id, live, load)
		}
	}
}

func runCGOps(t *testing.T, ops []byte) {
	d := newCGDriver(t)
	for i := 0; i+1 < len(ops); i += 2 {
		d.step(ops[i], ops[i+1])
		d.check()
	}
	d.h.release(0)
	d.h.writeCode = 0
	// A last heartbeat of each group resyncs a group a failed write left dirty.
	for _, id := range cgGroupIDs {
		if _, dirty := d.h.s.consumerDirty[id]; dirty {
			d.step(8, 0)
			req := cgJoinRequest("resync", "a")
			req.Group = id
			d.h.run(d.h.s.ConsumerGroupHeartbeat(d.h.now, Client{ID: "client"}, req, d.topics, func(kmsg.Response) {}))
		}
	}
	// A classic request writes again the tombstones of a downgraded group whose write
	// failed (withRetiredConsumer).
	for i, id := range cgGroupIDs {
		if _, retired := d.h.s.retiredConsumers[id]; retired {
			d.step(210, byte(i))
		}
	}
	d.check()
	if len(d.h.s.consumerDirty) > 0 || len(d.h.s.retiredConsumers) > 0 {
		t.Fatalf("groups %v still wait for a resync, %v for their tombstones", d.h.s.consumerDirty, d.h.s.retiredConsumers)
	}
}

// TestConsumerShardReplayProperty runs random operation sequences (seeded, so a
// failure reproduces) through runCGOps.
func TestConsumerShardReplayProperty(t *testing.T) {
	// Favour joins and heartbeats, as a real group sees them.
	// Every tenth run has classic consumers too (classicStep).
	classic := []byte{210, 211, 211, 225, 226}
	runSeededOps(t, 200, 120, func(rng *rand.Rand, seed int64, op byte) byte {
		switch {
		case seed%10 == 0 && rng.Intn(4) == 0:
			return classic[rng.Intn(len(classic))]
		case op%3 != 0:
			return byte(rng.Intn(5))
		}
		return op
	}, runCGOps)
}

// runSeededOps runs seeded random sequences of length operations (two bytes each: an
// operation and its argument) through run, 30 of them with -short; favour may replace
// each operation byte. A failing seed reproduces.
func runSeededOps(t *testing.T, runs, length int, favour func(rng *rand.Rand, seed int64, op byte) byte, run func(*testing.T, []byte)) {
	if testing.Short() {
		runs = 30
	}
	for seed := int64(1); seed <= int64(runs); seed++ {
		rng := rand.New(rand.NewSource(seed))
		ops := make([]byte, 2*length)
		rng.Read(ops)
		for i := 0; i < len(ops); i += 2 {
			ops[i] = favour(rng, seed, ops[i])
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { run(t, ops) })
	}
}

// FuzzConsumerShardReplay is the replay property on fuzzer-chosen operations.
func FuzzConsumerShardReplay(f *testing.F) {
	f.Add([]byte{0, 2, 0, 4, 2, 2, 2, 4, 2, 2, 2, 4, 6, 2})
	f.Add([]byte{0, 2, 10, 2, 0, 4, 2, 2, 10, 0, 2, 4, 13, 0, 2, 2})
	f.Add([]byte{1, 6, 7, 6, 1, 8, 8, 60, 8, 60, 9, 0, 2, 6, 11, 0, 0, 4, 11, 1, 12, 2, 2, 4})
	f.Add([]byte{0, 2, 6, 2, 14, 0, 0, 2, 14, 2, 6, 2, 14, 4, 13, 0})
	// Regular expressions: joins by regex, a topic created and deleted, time passing
	// the refresh interval, a failed tombstone, a switch of expression.
	f.Add([]byte{32, 1, 48, 3, 2, 1, 9, 3, 8, 11, 2, 1, 10, 2, 6, 1, 10, 0, 2, 3, 9, 7, 8, 20, 244, 3, 13, 0, 2, 3})
	// A static member's leave fails, the empty group's deletion and a new group's
	// join fail after it: the new group's resync tombstones the old member.
	f.Add([]byte{46, 9, 116, 178, 180, 206, 25, 218, 72, 108, 81, 189, 56, 18, 179, 63, 180, 87, 27, 2})
	// Classic consumers form a group, a consumer-protocol member upgrades it, the
	// classic members rejoin it, one leaves.
	f.Add([]byte{210, 0, 210, 2, 211, 0, 211, 2, 0, 4, 211, 0, 210, 0, 210, 2, 2, 4, 211, 2, 225, 2, 2, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		runCGOps(t, ops)
	})
}

// fetchA is groupID's committed offset of partition a-0.
func fetchA(s *Shard, groupID string) string {
	got := s.OffsetFetch(groupID, []kmsg.OffsetFetchRequestTopic{{Topic: "a", Partitions: []int32{0}}}, false)
	return fmt.Sprint(got.Topics[0].Partitions[0].Offset)
}
