package controller

import (
	"slices"
	"testing"
	"time"
)

// The evidence rule: the controller's refused probe fences; a probe that connected
// never does; without either, more than half of the suspect's peers must have reported
// it, so one reporter cut off from it cannot fence a healthy broker.
func TestFencesOnPeerEvidence(t *testing.T) {
	peers := []int32{0, 1, 3} // the unfenced brokers but the suspect
	for _, tc := range []struct {
		probe     ProbeResult
		reporters []int32
		want      bool
	}{
		{ProbeRefused, nil, true},
		{ProbeRefused, []int32{0}, true},
		{ProbeConnected, []int32{0, 1, 3}, false}, // the process is there: its session decides
		{ProbeUnanswered, nil, false},
		{ProbeUnanswered, []int32{0}, false},       // one partitioned reporter
		{ProbeUnanswered, []int32{0, 1}, true},     // two of three
		{ProbeUnanswered, []int32{0, 7, 9}, false}, // reporters that are not peers (fenced, gone) do not count
		{ProbeUnanswered, []int32{0, 1, 3}, true},
	} {
		if got := fencesOnPeerEvidence(tc.probe, tc.reporters, peers); got != tc.want {
			t.Errorf("probe %s, reporters %v of peers %v: fence %v, want %v", tc.probe, tc.reporters, peers, got, tc.want)
		}
	}
	if fencesOnPeerEvidence(ProbeUnanswered, []int32{0}, nil) {
		t.Error("no peers at all: fenced on an unanswered probe")
	}
	// Two brokers: the only peer is a majority of one.
	if !fencesOnPeerEvidence(ProbeUnanswered, []int32{0}, []int32{0}) {
		t.Error("the only peer's report did not count as a majority")
	}
}

// Reports start one probe at a time per suspect and at most one per interval; a new
// incarnation starts over.
func TestPeerEvidenceProbesOncePerInterval(t *testing.T) {
	e := newPeerEvidence()
	now := time.Unix(1000, 0)
	if probe, _ := e.report(0, 2, 10, now); !probe {
		t.Fatal("the first report did not start a probe")
	}
	if probe, last := e.report(1, 2, 10, now.Add(time.Millisecond)); probe || last != ProbeConnected {
		t.Fatalf("while a probe is in flight: probe %v, last %s", probe, last)
	}
	e.probeDone(2, 10, ProbeUnanswered)
	if res, ok := e.lastProbe(2, 10); !ok || res != ProbeUnanswered {
		t.Fatalf("last probe %s %v", res, ok)
	}
	if probe, last := e.report(1, 2, 10, now.Add(peerProbeInterval/2)); probe || last != ProbeUnanswered {
		t.Fatalf("within the interval of the last probe: probe %v, last %s", probe, last)
	}
	if probe, _ := e.report(1, 2, 10, now.Add(peerProbeInterval)); !probe {
		t.Fatal("no probe one interval after the last one")
	}
	if got := e.reporters(2, 10, now); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("reporters %v, want [0 1]", got)
	}
	if got := e.reporters(2, 10, now.Add(time.Millisecond)); !slices.Equal(got, []int32{1}) {
		t.Fatalf("reporters since 1 ms %v, want [1]", got)
	}
	// The suspect restarted: reports about the new epoch start afresh.
	if probe, _ := e.report(0, 2, 11, now.Add(peerProbeInterval)); !probe {
		t.Fatal("no probe for a new incarnation")
	}
	if got := e.reporters(2, 10, now); got != nil {
		t.Fatalf("reporters of the old incarnation %v, want none", got)
	}
	e.reset()
	if got := e.reporters(2, 11, now); got != nil {
		t.Fatalf("reporters after reset %v", got)
	}
}
