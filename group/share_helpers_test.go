package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers for the share group tests: a Shard harness whose runtime records the share
// state initializations asked for and can answer them, request builders, and the
// comparison of a live group with a loaded one.

type sgHarness struct {
	*harness
	topics ConsumerTopicMap
	// inits are the initializations asked for and not answered yet.
	inits []ShareInitialize
}

func newSG(t *testing.T, topics ConsumerTopicMap, tweak ...func(*Config)) *sgHarness {
	t.Helper()
	h := &sgHarness{topics: topics}
	cfg := testConfig()
	cfg.OnShareInitialize = func(i ShareInitialize) { h.inits = append(h.inits, i) }
	for _, f := range tweak {
		f(&cfg)
	}
	h.harness = newHarness(t, cfg)
	return h
}

func sgReq(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version, req.GroupID, req.MemberID, req.MemberEpoch = 1, group, member, epoch
	if len(topics) > 0 {
		req.SubscribedTopicNames = topics
	}
	return req
}

// hb sends a ShareGroupHeartbeat and returns its response once delivered.
func (h *sgHarness) hb(req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	h.t.Helper()
	var got *kmsg.ShareGroupHeartbeatResponse
	h.run(h.s.ShareGroupHeartbeat(h.now, Client{ID: "client", Host: "/127.0.0.1"}, req, h.topics, func(r kmsg.Response) {
		got = r.(*kmsg.ShareGroupHeartbeatResponse)
	}))
	if got == nil {
		h.t.Fatal("no response")
	}
	return got
}

// ok sends req and fails the test on an error response.
func (h *sgHarness) ok(req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	h.t.Helper()
	resp := h.hb(req)
	if resp.ErrorCode != 0 {
		h.t.Fatalf("heartbeat of %s: error %d %s", req.MemberID, resp.ErrorCode, deref(resp.ErrorMessage))
	}
	return resp
}

// wait moves the clock by seconds (the timers are the test's to fire).
func (h *sgHarness) wait(seconds int) { h.now = h.now.Add(time.Duration(seconds) * time.Second) }

// initialize answers every pending initialization with code.
func (h *sgHarness) initialize(code int16) {
	inits := h.inits
	h.inits = nil
	for _, i := range inits {
		h.run(h.s.ShareGroupStateInitialized(h.now, i.GroupID, i.Topics, code, h.topics))
	}
}

// shareAssigned is a heartbeat response's assignment (nil when it carries none).
func shareAssigned(resp *kmsg.ShareGroupHeartbeatResponse) AssignedPartitions {
	if resp.Assignment == nil {
		return nil
	}
	out := AssignedPartitions{}
	for _, t := range resp.Assignment.TopicPartitions {
		out[t.TopicID] = t.Partitions
	}
	return out
}

// shareSnapshot prints everything persistent about g (fmt sorts map keys).
func shareSnapshot(g *ShareGroup) string {
	type memberState struct {
		Meta            ShareMemberUpdated
		Epoch, Previous int32
		Assigned        AssignedPartitions
	}
	members := map[string]memberState{}
	for id, m := range g.members {
		members[id] = memberState{m.meta, m.epoch, m.previousEpoch, m.assigned}
	}
	init, initializing, deleting := g.SharePartitions()
	return fmt.Sprintf("epoch %d hash %d target %d %v\nmembers %+v\nshare state %v %v %v",
		g.groupEpoch, g.metadataHash, g.targetEpoch, g.target, members, init, initializing, deleting)
}

// shareInvariants are what every state of a share group keeps.
func shareInvariants(g *ShareGroup) error {
	if g.targetEpoch > g.groupEpoch {
		return fmt.Errorf("target epoch %d past group epoch %d", g.targetEpoch, g.groupEpoch)
	}
	for id, m := range g.members {
		if m.epoch > g.groupEpoch {
			return fmt.Errorf("member %s epoch %d past group epoch %d", id, m.epoch, g.groupEpoch)
		}
		for t, ps := range m.assigned {
			for _, p := range ps {
				if !assignmentContains(AssignedPartitions{t: g.initialized[t].Partitions}, t, p) {
					return fmt.Errorf("member %s holds %x-%d without share state", id, t[15], p)
				}
			}
		}
	}
	return nil
}

// checkShareReplay fails t unless loaded (a Shard replaying the log) holds live's share
// groups.
func checkShareReplay(t testing.TB, live, loaded *Shard) {
	t.Helper()
	if a, b := fmt.Sprint(live.ShareGroupIDs()), fmt.Sprint(loaded.ShareGroupIDs()); a != b {
		t.Fatalf("live share groups %v, a load gives %v", a, b)
	}
	for _, id := range live.ShareGroupIDs() {
		if a, b := shareSnapshot(live.ShareGroup(id)), shareSnapshot(loaded.ShareGroup(id)); a != b {
			t.Fatalf("group %s: live\n%s\na load gives\n%s", id, a, b)
		}
	}
}
