package controller

import (
	"slices"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// Sessions is the controller's in-memory view of broker heartbeats. Heartbeats are
// not Raft writes: only state changes (fence, unfence) are. A new controller starts every
// registered broker with a fresh session, but the previous controller's from its last
// Raft contact (Controller.activateSessions). Safe for concurrent use; mu is a leaf.
type Sessions struct {
	mu sync.Mutex
	// sessions by broker id; guarded by mu.
	sessions map[int32]*brokerSession
	// reports is closed and replaced whenever a heartbeat reports a higher metadata
	// offset (Lagging); guarded by mu.
	reports chan struct{}
	// shutdowns is closed and replaced whenever a broker first asks for a controlled
	// shutdown (OthersShuttingDown); guarded by mu.
	shutdowns chan struct{}
}

type brokerSession struct {
	lastHeartbeat  time.Time
	metadataOffset int64 // the broker's applied metadata offset, from its heartbeats
	shuttingDown   bool
	// heard is set once this controller had a heartbeat or registration from the
	// broker: a session a new controller started for every registered broker is not
	// evidence that the broker runs.
	heard bool
}

func newSessions() *Sessions {
	return &Sessions{sessions: map[int32]*brokerSession{}, reports: make(chan struct{}), shutdowns: make(chan struct{})}
}

// activate gives every registered broker a fresh session (a new controller term).
func (s *Sessions) activate(im *metadata.Image, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions = map[int32]*brokerSession{}
	for id := range im.Brokers {
		s.sessions[id] = &brokerSession{lastHeartbeat: now, metadataOffset: -1}
	}
}

// heardAt moves broker id's session start back to at, when this controller last heard
// of it some other way (the previous controller's last Raft contact).
func (s *Sessions) heardAt(id int32, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[id]; sess != nil && at.Before(sess.lastHeartbeat) {
		sess.lastHeartbeat = at
	}
}

// Heartbeat records a heartbeat from broker id. Controlled shutdown is sticky: once a
// broker asked for it, it stays shutting down until it registers again.
func (s *Sessions) Heartbeat(id int32, metadataOffset int64, shuttingDown bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.sessions[id]
	if old != nil && old.shuttingDown {
		shuttingDown = true
	} else if shuttingDown {
		close(s.shutdowns)
		s.shutdowns = make(chan struct{})
	}
	s.sessions[id] = &brokerSession{lastHeartbeat: now, metadataOffset: metadataOffset, shuttingDown: shuttingDown, heard: true}
	if old == nil || metadataOffset > old.metadataOffset {
		close(s.reports)
		s.reports = make(chan struct{})
	}
}

// Registered starts a fresh session for a new registration (not shutting down).
func (s *Sessions) Registered(id int32, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[id] = &brokerSession{lastHeartbeat: now, metadataOffset: -1, heard: true}
}

// heard reports whether this controller had a heartbeat or registration from broker
// id this term.
func (s *Sessions) heard(id int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	return ok && sess.heard
}

// Forget drops broker id's session (the broker was unregistered).
func (s *Sessions) Forget(id int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
}

// InControlledShutdown reports whether broker id asked for a controlled shutdown.
func (s *Sessions) InControlledShutdown(id int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	return ok && sess.shuttingDown
}

// OthersShuttingDown reports whether every unfenced broker of im but id has asked
// this controller for a controlled shutdown: the whole cluster is stopping, and no
// broker is left to take id's leaderships. It needs at least one such other broker,
// unless id is the only broker registered: when every other broker is fenced (restarted
// and catching up, as in a fast rolling restart), id's stop is not the cluster's, and
// it is fenced as usual so that its leaderships move once the others are back. It
// also returns the channel closed when another broker next asks for one.
func (s *Sessions) OthersShuttingDown(im *metadata.Image, id int32) (bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stopping, fenced := 0, 0
	for other, br := range im.Brokers {
		if other == id {
			continue
		}
		if br.Fenced {
			fenced++
			continue
		}
		if sess, ok := s.sessions[other]; !ok || !sess.shuttingDown {
			return false, s.shutdowns
		}
		stopping++
	}
	return stopping > 0 || fenced == 0, s.shutdowns
}

// expired returns the unfenced brokers whose last heartbeat is older than timeout.
func (s *Sessions) expired(im *metadata.Image, now time.Time, timeout time.Duration) []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int32
	for id, b := range im.Brokers {
		if b.Fenced {
			continue
		}
		sess, ok := s.sessions[id]
		if !ok {
			s.sessions[id] = &brokerSession{lastHeartbeat: now, metadataOffset: -1}
			continue
		}
		if now.Sub(sess.lastHeartbeat) > timeout {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Valid reports whether broker id has a live session.
func (s *Sessions) Valid(id int32, now time.Time, timeout time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	return ok && !sess.shuttingDown && now.Sub(sess.lastHeartbeat) <= timeout
}

// Heartbeating reports whether broker id runs as far as this controller knows: it
// registered or heartbeat here within timeout and did not ask for a controlled shutdown.
func (s *Sessions) Heartbeating(id int32, now time.Time, timeout time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	return ok && sess.heard && !sess.shuttingDown && now.Sub(sess.lastHeartbeat) <= timeout
}

// Offsets returns each broker's last reported metadata offset.
func (s *Sessions) Offsets() map[int32]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]int64, len(s.sessions))
	for id, sess := range s.sessions {
		out[id] = sess.metadataOffset
	}
	return out
}

// Lagging counts the registered, unfenced brokers of im with a live session whose last
// reported metadata offset is below offset, and returns the channel closed at the next
// higher report (the broker waits for every live broker to apply an admin change).
func (s *Sessions) Lagging(im *metadata.Image, offset int64, now time.Time, timeout time.Duration) (<-chan struct{}, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, br := range im.Brokers {
		sess, ok := s.sessions[id]
		if br.Fenced || !ok || sess.shuttingDown || now.Sub(sess.lastHeartbeat) > timeout {
			continue
		}
		if sess.metadataOffset < offset {
			n++
		}
	}
	return s.reports, n
}
