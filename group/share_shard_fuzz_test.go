package group

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The replay property of the share groups of a Shard: whatever joins, heartbeats,
// leaves, expiries, topic changes, share state initializations (answered or failed),
// failed and timed-out writes, deletions and failovers happen, a fresh Shard
// replaying the records committed so far holds the same share groups as the live one
// (whenever no write is pending and no group waits for its resync), and every state
// keeps shareInvariants.

type sgDriver struct {
	h      *sgHarness
	epochs map[string]int32 // by group + "/" + member
	next   int
}

var sgGroupIDs = []string{"s", "t"}

func newSGDriver(t *testing.T) *sgDriver {
	return &sgDriver{h: newSG(t, cgTopics(3, 1, 2)), epochs: map[string]int32{}, next: 3}
}

// step performs one operation chosen by op and arg.
func (d *sgDriver) step(op, arg byte) {
	h := d.h
	groupID := sgGroupIDs[int(arg)%len(sgGroupIDs)]
	member := fmt.Sprintf("m%d", (arg/2)%5)
	key := groupID + "/" + member
	var req *kmsg.ShareGroupHeartbeatRequest
	switch op % 12 {
	case 0: // join
		var names []string
		for i, n := range []string{"a", "b", "c", "x"} {
			if arg&(1<<uint(i+2)) != 0 || i == int(arg)%4 {
				names = append(names, n)
			}
		}
		req = sgReq(groupID, member, 0, names...)
	case 1, 2, 3: // heartbeat at the member's epoch
		req = sgReq(groupID, member, d.epochs[key])
	case 4: // a stale or future epoch
		req = sgReq(groupID, member, d.epochs[key]+int32(arg%3)-1)
	case 5:
		req = sgReq(groupID, member, LeaveMemberEpoch)
	case 6: // time passes; the runtime's timer fires
		h.wait(int(arg % 64))
		if at, ok := h.s.NextConsumerDeadline(); ok && !at.After(h.now) {
			h.run(h.s.ExpireConsumerGroups(h.now, h.topics))
		}
	case 7: // the metadata image changes
		name := string(rune('a' + arg%3))
		switch t, ok := h.topics[name]; {
		case ok && arg%2 == 0:
			t.Partitions++
			h.topics[name] = t
		case ok:
			delete(h.topics, name)
		default:
			d.next++
			h.topics[name] = AssignorTopic{ID: testTopicID(d.next), Name: name, Partitions: int32(1 + arg%3)}
		}
	case 8: // the share coordinator answers the pending initializations
		h.initialize([]int16{0, 0, kerr.CoordinatorNotAvailable.Code}[arg%3])
	case 9: // the next writes fail, or succeed again; or writes are held
		switch arg % 5 {
		case 0, 1:
			h.writeCode = 0
		case 2:
			h.writeCode = errNotCoordinator
		case 3:
			h.hold = true
		case 4:
			h.timeOut()
		}
	case 10: // held writes' fate becomes known, or a failover
		if len(h.held) > 0 {
			h.release([]int16{0, 0, errNotCoordinator}[arg%3])
		} else if arg%2 == 0 {
			h.run(h.s.Unload())
			h.s = replayLog(h.t, h.batches)
			h.s.cfg.OnShareInitialize = func(i ShareInitialize) { h.inits = append(h.inits, i) }
			h.writeCode, h.inits = 0, nil
			h.run(h.s.Loaded(h.now))
		}
	case 11:
		h.run(h.s.DeleteGroup(h.now, groupID, func(int16) {}))
	}
	if req != nil {
		h.run(h.s.ShareGroupHeartbeat(h.now, Client{ID: "client", Host: "/127.0.0.1"}, req, h.topics, func(r kmsg.Response) {
			resp := r.(*kmsg.ShareGroupHeartbeatResponse)
			switch {
			case resp.ErrorCode == 0 && req.MemberEpoch >= 0:
				d.epochs[key] = resp.MemberEpoch
			case resp.ErrorCode != 0 || req.MemberEpoch < 0:
				d.epochs[key] = 0
			}
		}))
	}
}

// check asserts the invariants, and the replay property when the log is settled.
func (d *sgDriver) check() {
	h := d.h
	h.t.Helper()
	for _, id := range h.s.ShareGroupIDs() {
		if err := shareInvariants(h.s.ShareGroup(id)); err != nil {
			h.t.Fatalf("group %s: %v", id, err)
		}
	}
	if len(h.held) == 0 && len(h.s.shareDirty) == 0 {
		checkShareReplay(h.t, h.s, replayLog(h.t, h.batches))
	}
}

func runSGOps(t *testing.T, ops []byte) {
	d := newSGDriver(t)
	for i := 0; i+1 < len(ops); i += 2 {
		d.step(ops[i], ops[i+1])
		d.check()
	}
	// The writes settle, then a heartbeat of each group a failed write left dirty
	// restates it.
	h := d.h
	h.release(0)
	h.writeCode = 0
	for _, id := range sgGroupIDs {
		if h.s.shareDirty[id] != nil {
			h.hb(sgReq(id, "resync", 0, "a"))
		}
	}
	if d.check(); len(h.s.shareDirty) > 0 {
		t.Fatalf("groups %v still wait for a resync", h.s.shareDirty)
	}
}

// TestShareShardReplayProperty runs random operation sequences (seeded, so a failure
// reproduces) through runSGOps, checking the replay property after every step.
func TestShareShardReplayProperty(t *testing.T) {
	// Favour joins, heartbeats and initializations.
	runSeededOps(t, 200, 120, func(rng *rand.Rand, _ int64, op byte) byte {
		if op%3 != 0 {
			return []byte{0, 1, 2, 8}[rng.Intn(4)]
		}
		return op
	}, runSGOps)
}

// FuzzShareShardReplay is the replay property on fuzzer-chosen operations.
func FuzzShareShardReplay(f *testing.F) {
	f.Add([]byte{0, 2, 0, 4, 8, 0, 1, 2, 1, 4, 5, 2, 11, 0})
	f.Add([]byte{0, 2, 9, 2, 1, 2, 9, 0, 1, 4, 8, 0, 10, 0, 1, 2})
	f.Add([]byte{0, 2, 9, 3, 8, 0, 9, 4, 10, 1, 6, 60, 6, 60, 10, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		runSGOps(t, ops)
	})
}
