package replication

import "testing"

// Every branch of the acks=all rule, in Kafka's order: leadership first, then the high
// watermark, then the maximal ISR against the effective min.insync.replicas.
func TestAcksAllOutcome(t *testing.T) {
	for _, c := range []struct {
		name   string
		ws     WakeState
		end    int64
		minISR int
		want   Outcome
	}{
		{"follower", WakeState{Role: Follower, HighWatermark: 10, MaximalISRSize: 3}, 5, 2, OutcomeNotLeader},
		{"stopped", WakeState{Role: Stopped, HighWatermark: 10, MaximalISRSize: 3}, 5, 2, OutcomeNotLeader},
		{"follower short of end", WakeState{Role: Follower, HighWatermark: 0, MaximalISRSize: 0}, 5, 2, OutcomeNotLeader},
		{"short of end", WakeState{Role: Leader, HighWatermark: 4, MaximalISRSize: 3}, 5, 2, OutcomeWaiting},
		{"short of end, ISR shrunk", WakeState{Role: Leader, HighWatermark: 4, MaximalISRSize: 1}, 5, 2, OutcomeWaiting},
		{"at end", WakeState{Role: Leader, HighWatermark: 5, MaximalISRSize: 2}, 5, 2, OutcomeCommitted},
		{"past end", WakeState{Role: Leader, HighWatermark: 9, MaximalISRSize: 3}, 5, 2, OutcomeCommitted},
		{"ISR shrunk", WakeState{Role: Leader, HighWatermark: 5, MaximalISRSize: 1}, 5, 2, OutcomeNotEnoughReplicasAfterAppend},
		{"no min ISR", WakeState{Role: Leader, HighWatermark: 5, MaximalISRSize: 0}, 5, 0, OutcomeCommitted},
		{"log failed short of end", WakeState{Role: Leader, HighWatermark: 4, MaximalISRSize: 3, LogFailed: true}, 5, 2, OutcomeStorageError},
		{"log failed, stopped", WakeState{Role: Stopped, HighWatermark: 4, LogFailed: true}, 5, 2, OutcomeStorageError},
		{"log failed past end", WakeState{Role: Leader, HighWatermark: 5, MaximalISRSize: 3, LogFailed: true}, 5, 2, OutcomeCommitted},
	} {
		if got := AcksAllOutcome(c.ws, c.end, c.minISR); got != c.want {
			t.Errorf("%s: AcksAllOutcome(%+v, %d, %d) = %v, want %v", c.name, c.ws, c.end, c.minISR, got, c.want)
		}
	}
}

// Over a grid of states: a non-leader always fails, a leader waits exactly while its
// high watermark is short of the end, and once there the outcome depends on the maximal
// ISR alone and stays put as the high watermark moves on.
func TestAcksAllOutcomeProperties(t *testing.T) {
	for _, role := range []Role{Follower, Leader, Stopped} {
		for hw := int64(0); hw <= 6; hw++ {
			for isr := 0; isr <= 4; isr++ {
				for minISR := 0; minISR <= 4; minISR++ {
					ws := WakeState{Role: role, HighWatermark: hw, MaximalISRSize: isr}
					const end = 3
					got := AcksAllOutcome(ws, end, minISR)
					var want Outcome
					switch {
					case role != Leader:
						want = OutcomeNotLeader
					case hw < end:
						want = OutcomeWaiting
					case isr >= minISR:
						want = OutcomeCommitted
					default:
						want = OutcomeNotEnoughReplicasAfterAppend
					}
					if got != want {
						t.Fatalf("AcksAllOutcome(%+v, %d, %d) = %v, want %v", ws, end, minISR, got, want)
					}
					later := ws
					later.HighWatermark += 5
					if got != OutcomeWaiting && AcksAllOutcome(later, end, minISR) != got {
						t.Fatalf("%+v: the outcome %v changed as the high watermark moved on", ws, got)
					}
				}
			}
		}
	}
}

// A State's WakeState carries the fields the rule reads.
func TestStateWakeState(t *testing.T) {
	s := State{Role: Leader, LeaderEpoch: 7, HighWatermark: 12, MaximalISRSize: 3, LogEndOffset: 20}
	if got, want := s.WakeState(), (WakeState{Role: Leader, HighWatermark: 12, MaximalISRSize: 3}); got != want {
		t.Fatalf("WakeState() = %+v, want %+v", got, want)
	}
}

// min.insync.replicas is capped at the replication factor.
func TestEffectiveMinISR(t *testing.T) {
	for _, c := range []struct{ minInsync, rf, want int }{
		{1, 3, 1},
		{2, 3, 2},
		{3, 3, 3},
		{3, 2, 2},
		{2, 1, 1},
		{0, 3, 0},
	} {
		if got := EffectiveMinISR(c.minInsync, c.rf); got != c.want {
			t.Errorf("EffectiveMinISR(%d, %d) = %d, want %d", c.minInsync, c.rf, got, c.want)
		}
	}
}

// Every outcome has a name.
func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{OutcomeWaiting: "waiting", OutcomeCommitted: "committed",
		OutcomeNotEnoughReplicasAfterAppend: "not enough replicas after append", OutcomeNotLeader: "not leader", 99: "unknown"} {
		if got := o.String(); got != want {
			t.Errorf("%d: %q, want %q", o, got, want)
		}
	}
}
