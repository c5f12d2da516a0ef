package shareleader

import (
	"context"
	"fmt"
	"sync"

	"github.com/petrel-broker/petrel/share"
)

// Share session epochs (Kafka's ShareRequestMetadata).
const (
	// InitialEpoch opens a share session (ShareFetch only).
	InitialEpoch int32 = 0
	// FinalEpoch closes it: the member's records here are released.
	FinalEpoch int32 = -1
)

// TopicPartition names a partition by topic id, as ShareFetch does.
type TopicPartition struct {
	TopicID   [16]byte
	Partition int32
}

// sessionKey names a share session: the member of a share group.
type sessionKey struct{ group, member string }

// Session is one share session (Kafka's ShareSession): the partitions a member fetches
// from this broker, its next epoch and the connection it lives on.
type Session struct {
	key sessionKey
	// epoch is the epoch the next request must carry; guarded by SessionCache.mu.
	epoch int32
	// partitions, in the order they joined; guarded by SessionCache.mu.
	partitions []TopicPartition
	// cursor rotates the partition a fetch starts with; guarded by SessionCache.mu.
	cursor int
	// stopWatch stops the watch of the connection; set once at creation.
	stopWatch func() bool
}

// SessionCache is Kafka's ShareSessionCache: at most group.share.max.share.sessions
// share sessions, one per (group, member), each tied to the connection that opened it.
// Safe for concurrent use; mu is taken alone.
type SessionCache struct {
	max int

	mu       sync.Mutex
	sessions map[sessionKey]*Session // guarded by mu
}

func newSessionCache(max int) *SessionCache {
	return &SessionCache{max: max, sessions: map[sessionKey]*Session{}}
}

// Len is the number of open share sessions.
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// open opens (or reopens, epoch 0) the session of key with parts. The previous
// session of the member, if any, is returned so that its records can be released.
// onClose runs once connCtx ends with the session still the member's.
func (c *SessionCache) open(key sessionKey, parts []TopicPartition, connCtx context.Context, onClose func(*Session)) (s, prev *Session, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev = c.sessions[key]
	if prev == nil && len(c.sessions) >= c.max {
		return nil, nil, fmt.Errorf("%w: %d share sessions are open (group.share.max.share.sessions)", ErrShareSessionLimitReached, c.max)
	}
	if prev != nil {
		prev.stopWatch()
	}
	s = &Session{key: key, epoch: 1}
	s.add(parts)
	c.sessions[key] = s
	s.stopWatch = context.AfterFunc(connCtx, func() {
		if c.remove(s) {
			onClose(s)
		}
	})
	return s, prev, nil
}

// next checks that epoch is key's session's next one and moves it on; it applies the
// request's new and forgotten partitions.
func (c *SessionCache) next(key sessionKey, epoch int32, add []TopicPartition, forget []TopicPartition) (*Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[key]
	if s == nil {
		return nil, fmt.Errorf("%w: member %s of group %s", ErrShareSessionNotFound, key.member, key.group)
	}
	if s.epoch != epoch {
		return nil, fmt.Errorf("%w: expected %d, got %d", ErrInvalidShareSessionEpoch, s.epoch, epoch)
	}
	s.epoch++
	if s.epoch < 1 {
		s.epoch = 1 // Kafka's nextEpoch wraps to 1
	}
	s.add(add)
	s.forget(forget)
	return s, nil
}

// close removes key's session for a request with the final epoch.
func (c *SessionCache) close(key sessionKey) (*Session, error) {
	c.mu.Lock()
	s := c.sessions[key]
	if s != nil {
		delete(c.sessions, key)
	}
	c.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("%w: member %s of group %s", ErrShareSessionNotFound, key.member, key.group)
	}
	s.stopWatch()
	return s, nil
}

// current reports whether s is still its member's session.
func (c *SessionCache) current(s *Session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[s.key] == s
}

// remove removes s if it is still its member's session.
func (c *SessionCache) remove(s *Session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[s.key] != s {
		return false
	}
	delete(c.sessions, s.key)
	return true
}

// order returns the session's partitions starting at its cursor, which moves on by
// one so that no partition always comes first.
func (c *SessionCache) order(s *Session) []TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(s.partitions)
	out := make([]TopicPartition, 0, n)
	if n == 0 {
		return out
	}
	start := s.cursor % n
	out = append(out, s.partitions[start:]...)
	out = append(out, s.partitions[:start]...)
	s.cursor = start + 1
	return out
}

// partitionsOf returns a copy of s's partitions.
func (c *SessionCache) partitionsOf(s *Session) []TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]TopicPartition(nil), s.partitions...)
}

// add adds the partitions not yet in the session; the caller holds the cache's mu
// (or owns s).
func (s *Session) add(parts []TopicPartition) {
	for _, tp := range parts {
		if !s.has(tp) {
			s.partitions = append(s.partitions, tp)
		}
	}
}

// forget removes parts; the caller holds the cache's mu.
func (s *Session) forget(parts []TopicPartition) {
	for _, f := range parts {
		for i, tp := range s.partitions {
			if tp == f {
				s.partitions = append(s.partitions[:i], s.partitions[i+1:]...)
				break
			}
		}
	}
}

func (s *Session) has(tp TopicPartition) bool {
	for _, x := range s.partitions {
		if x == tp {
			return true
		}
	}
	return false
}

// keyOf is the share partition key of a session's partition.
func keyOf(group string, tp TopicPartition) share.Key {
	return share.Key{GroupID: group, TopicID: tp.TopicID, Partition: tp.Partition}
}
