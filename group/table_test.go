package group

import "testing"

// TestStateEventTable is Kafka's classic group table: for each state, what a member's
// Heartbeat, SyncGroup, OffsetCommit and LeaveGroup get and the state that follows.
func TestStateEventTable(t *testing.T) {
	type setup func(h *harness) (member string, generation int32)
	states := map[string]setup{
		"Empty": func(h *harness) (string, int32) {
			h.commit(8, "g", "", -1, map[int32]int64{0: 1})
			return "client-uuid9", 0
		},
		"PreparingRebalance": func(h *harness) (string, int32) {
			ids, gen := h.stableGroup("g", 2)
			h.join("g", ids[0])
			return ids[1], gen
		},
		"CompletingRebalance": func(h *harness) (string, int32) {
			h.join("g", "")
			b := h.join("g", "")
			h.advance(0)
			return b.resp.MemberID, b.resp.Generation
		},
		"Stable": func(h *harness) (string, int32) {
			ids, gen := h.stableGroup("g", 2)
			return ids[1], gen
		},
	}
	const parked = int16(-100) // the request waits
	for _, tc := range []struct {
		state, event string
		want         int16
		after        string
	}{
		{"Empty", "heartbeat", errUnknownMemberID, "Empty"},
		{"Empty", "sync", errUnknownMemberID, "Empty"},
		{"Empty", "commit", errUnknownMemberID, "Empty"},
		{"Empty", "leave", errUnknownMemberID, "Empty"},
		{"Empty", "join-known", errUnknownMemberID, "Empty"},
		{"PreparingRebalance", "heartbeat", errRebalanceInProgress, "PreparingRebalance"},
		{"PreparingRebalance", "sync", errRebalanceInProgress, "PreparingRebalance"},
		{"PreparingRebalance", "commit", 0, "PreparingRebalance"},
		{"PreparingRebalance", "old-generation-commit", errIllegalGeneration, "PreparingRebalance"},
		{"PreparingRebalance", "leave", 0, "CompletingRebalance"}, // the leader alone has rejoined
		{"PreparingRebalance", "join-known", 0, "CompletingRebalance"},
		{"CompletingRebalance", "heartbeat", 0, "CompletingRebalance"},
		{"CompletingRebalance", "sync", parked, "CompletingRebalance"},
		{"CompletingRebalance", "commit", errRebalanceInProgress, "CompletingRebalance"},
		{"CompletingRebalance", "old-generation-commit", errIllegalGeneration, "CompletingRebalance"},
		{"CompletingRebalance", "leave", 0, "PreparingRebalance"},
		{"CompletingRebalance", "join-known", 0, "CompletingRebalance"}, // same metadata: the current generation again
		{"Stable", "heartbeat", 0, "Stable"},
		{"Stable", "sync", 0, "Stable"},
		{"Stable", "commit", 0, "Stable"},
		{"Stable", "old-generation-commit", errIllegalGeneration, "Stable"},
		{"Stable", "leave", 0, "PreparingRebalance"},
		{"Stable", "join-known", 0, "Stable"}, // a follower with unchanged metadata
		{"Stable", "join-changed", parked, "PreparingRebalance"},
	} {
		t.Run(tc.state+"/"+tc.event, func(t *testing.T) {
			h := newHarness(t, testConfig())
			member, gen := states[tc.state](h)
			got := parked
			switch tc.event {
			case "heartbeat":
				got = h.heartbeat("g", member, gen)
			case "sync":
				if b := h.sync("g", member, gen, nil); b.done() {
					got = b.resp.ErrorCode
				}
			case "commit":
				got = commitCodes(h.commit(8, "g", member, gen, map[int32]int64{0: 5}).resp)[0]
			case "old-generation-commit":
				got = commitCodes(h.commit(8, "g", member, gen-1, map[int32]int64{0: 5}).resp)[0]
			case "leave":
				got = h.leave("g", 3, member).Members[0].ErrorCode
			case "join-known":
				if b := h.join("g", member); b.done() {
					got = b.resp.ErrorCode
				}
			case "join-changed":
				if b := h.join("g", member, withProtocols(protocol("range", consumerMeta("t", "u")))); b.done() {
					got = b.resp.ErrorCode
				}
			}
			if got != tc.want {
				t.Fatalf("code %d, want %d", got, tc.want)
			}
			if st := h.state("g"); st != tc.after {
				t.Fatalf("state %s, want %s", st, tc.after)
			}
		})
	}
}
