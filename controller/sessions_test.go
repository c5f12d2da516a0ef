package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// The previous controller's session counts from its last Raft contact, never later
// than the fresh session every other broker gets, so it expires first.
func TestSessionsHeardAtStartsTheSessionEarlier(t *testing.T) {
	im := metadata.NewImage()
	var err error
	im, err = im.Apply(1, []metadata.Record{
		metadata.RegisterBrokerRecord{BrokerID: 0, IncarnationID: metadata.UuidFromBytes([16]byte{1})},
		metadata.RegisterBrokerRecord{BrokerID: 1, IncarnationID: metadata.UuidFromBytes([16]byte{2})},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := newSessions()
	term := time.Unix(1000, 0)
	timeout := 9 * time.Second
	s.activate(im, term)
	s.heardAt(0, term.Add(-2500*time.Millisecond)) // the previous controller, silent 2.5 s
	s.heardAt(1, term.Add(time.Second))            // later than its session start: ignored

	silentEnd := term.Add(timeout - 2500*time.Millisecond) // 6.5 s into the term
	if got := s.expired(im, silentEnd, timeout); len(got) != 0 {
		t.Fatalf("expired %v 6.5 s into the term, want none", got)
	}
	if got := s.expired(im, silentEnd.Add(time.Millisecond), timeout); !slices.Equal(got, []int32{0}) {
		t.Fatalf("expired %v 6.5 s + 1 ms into the term, want the previous controller [0]", got)
	}
	if got := s.expired(im, term.Add(timeout+time.Millisecond), timeout); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("expired %v one session timeout into the term, want [0 1]", got)
	}
	// A heartbeat from it renews the session as usual.
	s.Heartbeat(0, 5, false, term.Add(time.Second))
	if s.expired(im, silentEnd.Add(time.Millisecond), timeout) != nil {
		t.Fatal("a heartbeat did not renew the previous controller's session")
	}
}

// A session a new controller starts for every registered broker is no sign of life:
// only a registration or heartbeat it received, within the session timeout and without
// a controlled shutdown, makes a broker count as running (UnregisterBroker and
// RemoveRaftVoter refuse running brokers); forget drops the session.
func TestSessionsHeartbeatingNeedsAHeartbeat(t *testing.T) {
	im, err := metadata.NewImage().Apply(1, []metadata.Record{
		metadata.RegisterBrokerRecord{BrokerID: 0}, metadata.RegisterBrokerRecord{BrokerID: 1},
		metadata.RegisterBrokerRecord{BrokerID: 2}, metadata.RegisterBrokerRecord{BrokerID: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := newSessions()
	now, timeout := time.Unix(1000, 0), 9*time.Second
	s.activate(im, now)
	s.Heartbeat(1, 5, false, now)
	s.Registered(2, now)
	s.Heartbeat(3, 5, true, now)
	for id, want := range []bool{false, true, true, false} {
		if got := s.Heartbeating(int32(id), now, timeout); got != want {
			t.Errorf("broker %d: heartbeating %v, want %v", id, got, want)
		}
	}
	if s.Heartbeating(1, now.Add(timeout+time.Millisecond), timeout) {
		t.Error("broker 1 still heartbeating a session timeout later")
	}
	s.Forget(1)
	if _, ok := s.Offsets()[1]; ok || s.Heartbeating(1, now, timeout) {
		t.Error("broker 1's session survived forget")
	}
}
