package replication

// How one Fetch request relates to a fetch session (Kafka's FetchManager.newContext and
// its FetchContexts). Fetch v7+ carries a session id and epoch:
//
//	id 0, epoch -1    sessionless: every partition named is answered, session id 0
//	id X, epoch -1    the same, and session X is closed
//	id 0, epoch 0     full: every partition named is answered, and a new session of
//	                  them is created if the cache has room (its id in the answer, else 0)
//	id X, epoch 0     the same, after closing session X
//	id X, epoch N > 0 incremental: N must be session X's epoch (else
//	                  INVALID_FETCH_SESSION_EPOCH; no session X: FETCH_SESSION_ID_NOT_FOUND;
//	                  a v13+ request on a session of names or the reverse:
//	                  FETCH_SESSION_TOPIC_ID_ERROR). The partitions named join the session
//	                  or update its parameters, ForgottenTopicsData leave it, and every
//	                  partition of the session is read; the answer names only those with
//	                  records, a changed high watermark, last stable offset or log start
//	                  offset, an error, a diverging epoch or a preferred read replica. A
//	                  session left empty is closed, and the fetch answered sessionless.
//
// A consumer's incremental fetch parks like a full one (ParkFetch): it watches every
// partition of its session. A follower's session keeps standing waiters instead and
// reads only what changed (fetch_session_watch.go). Its answer is filtered once, when it is sent; if another request of
// the session was accepted meanwhile (a duplicate), the session's epoch has moved and
// the answer is INVALID_FETCH_SESSION_EPOCH, as in Kafka.

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fetchContextKind uint8

const (
	fetchSessionless  fetchContextKind = iota // no session: answer what is named, session id 0
	fetchFull                                 // answer what is named and create a session of it
	fetchIncremental                          // answer the session's partitions that changed
	fetchSessionError                         // answer errorCode alone
)

// FetchContext is one Fetch request's relation to the session cache.
type FetchContext struct {
	kind      fetchContextKind
	errorCode int16 // fetchSessionError
	follower  bool  // replica id >= 0: a privileged session
	topicIDs  bool  // v13+
	// Incremental only: the session, its epoch once this request was accepted, and its
	// partitions in the order they are read (the order of the answer before filtering).
	session *fetchSession
	epoch   int32
	parts   []*cachedFetchPartition
	// A follower's fetch: the session clock its reads count the follower caught up
	// by (a full fetch's new one, a watched session's own; fetch_session_watch.go);
	// for a watched session's incremental fetch, the watch's wake-up count as of the
	// take of its dirty partitions (parts) and the waiters of the partitions it
	// forgot, to remove.
	clock     *atomic.Int64
	replica   int32
	pokes     uint64
	forgotten []watchedPartition
	// brokerEpoch is the broker epoch a follower's fetch names (Fetch v15's
	// ReplicaState, KIP-903), else -1.
	brokerEpoch int64
}

// NewContext decides how r relates to the cache's sessions and, for an incremental
// fetch, applies its partitions and forgotten topics to the session and moves the
// session's epoch on.
func (c *FetchSessionCache) NewContext(r *kmsg.FetchRequest, follower bool, nowMs int64) FetchContext {
	fc := FetchContext{kind: fetchSessionless, follower: follower, topicIDs: r.Version >= 13, replica: r.ReplicaID, brokerEpoch: -1}
	if follower && r.Version >= 15 {
		fc.brokerEpoch = r.ReplicaState.Epoch
	}
	if r.Version < 7 {
		return fc
	}
	if r.SessionEpoch == fetchSessionInitialEpoch || r.SessionEpoch == fetchSessionFinalEpoch {
		if r.SessionID != fetchSessionInvalidID {
			c.remove(r.SessionID) // any session a full fetch names is closed
		}
		if r.SessionEpoch == fetchSessionInitialEpoch {
			fc.kind = fetchFull
			if follower {
				fc.clock = new(atomic.Int64) // the new session's, if one is created
			}
		}
		return fc
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[r.SessionID]
	if s == nil {
		return FetchContext{kind: fetchSessionError, errorCode: kerr.FetchSessionIDNotFound.Code}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != r.SessionEpoch:
		return FetchContext{kind: fetchSessionError, errorCode: kerr.InvalidFetchSessionEpoch.Code}
	case s.topicIDs != fc.topicIDs:
		return FetchContext{kind: fetchSessionError, errorCode: kerr.FetchSessionTopicIDError.Code}
	}
	s.updateLocked(r.Topics, r.ForgottenTopics)
	forgotten := s.unwatched
	s.unwatched = nil
	if c.numPartitions-int64(max(s.cachedSize, 0))+int64(len(s.parts)) > c.maxPartitions {
		c.removeLocked(s) // past the cache's bound: the client starts again with a full fetch
		go unwatchAll(forgotten)
		return FetchContext{kind: fetchSessionError, errorCode: kerr.FetchSessionIDNotFound.Code}
	}
	if len(s.parts) == 0 {
		c.removeLocked(s)
		go unwatchAll(forgotten)
		return fc // sessionless: the partitions named (if any) are answered
	}
	c.touchLocked(s, nowMs, len(s.parts))
	s.epoch = nextFetchSessionEpoch(s.epoch)
	fc.kind, fc.session, fc.epoch = fetchIncremental, s, s.epoch
	if s.watch != nil {
		// A follower session reads only what changed (fetch_session_watch.go).
		s.watch.noteBrokerEpoch(fc.brokerEpoch)
		fc.parts, fc.pokes = s.watch.takeLocked(s)
		fc.clock, fc.forgotten = s.watch.clock, forgotten
		return fc
	}
	fc.parts = make([]*cachedFetchPartition, 0, len(s.parts))
	for cp := s.head; cp != nil; cp = cp.next {
		fc.parts = append(fc.parts, cp)
	}
	return fc
}

// Request is the request to read for fc: r itself, or for an incremental fetch a copy
// of r naming the session's partitions in session order with their cached parameters.
func (fc *FetchContext) Request(r *kmsg.FetchRequest) *kmsg.FetchRequest {
	if fc.kind != fetchIncremental {
		return r
	}
	plan := *r
	plan.Topics = nil
	plan.ForgottenTopics = nil
	fc.session.mu.Lock()
	defer fc.session.mu.Unlock()
	parts := make([]kmsg.FetchRequestTopicPartition, len(fc.parts))
	start := 0
	for i, cp := range fc.parts {
		p := &parts[i]
		p.Partition, p.FetchOffset, p.LogStartOffset, p.PartitionMaxBytes = cp.key.partition, cp.fetchOffset, cp.fetcherLogStartOffset, cp.maxBytes
		p.CurrentLeaderEpoch, p.LastFetchedEpoch = cp.currentLeaderEpoch, cp.lastFetchedEpoch
		if i+1 == len(fc.parts) || fc.parts[i+1].key.topic != cp.key.topic || fc.parts[i+1].key.id != cp.key.id {
			name := cp.key.topic
			if fc.topicIDs {
				name = cp.name // "" until resolved: fetch_topic_ids.go
			}
			t := kmsg.FetchRequestTopic{Topic: name, TopicID: cp.key.id, Partitions: parts[start : i+1 : i+1]}
			plan.Topics = append(plan.Topics, t)
			start = i + 1
		}
	}
	return &plan
}

// SessionAnswer is a Fetch answer a session finishes (the broker's, which holds its
// record sets in the segment files).
type SessionAnswer interface {
	// Response is the answer's FetchResponse.
	Response() *kmsg.FetchResponse
	// KeepPartitions drops, in place, the partitions keep refuses (given each one's
	// index in response order and its record bytes), releasing their records, and the
	// topics left without partitions.
	KeepPartitions(keep func(i int, sp *kmsg.FetchResponseTopicPartition, recordBytes int) bool)
	// DropPartitions releases every partition's records and drops every topic.
	DropPartitions()
}

// ErrorCode is the error a session error answers with alone (FETCH_SESSION_ID_NOT_FOUND,
// INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR), else 0.
func (fc *FetchContext) ErrorCode() int16 {
	if fc.kind != fetchSessionError {
		return 0
	}
	return fc.errorCode
}

// Finish completes resp, the answer read for fc's request plan (request), before it
// is sent: its session id, the new session of a full fetch, the filtering of an
// incremental one.
func (c *FetchSessionCache) Finish(fc *FetchContext, plan *kmsg.FetchRequest, resp SessionAnswer, nowMs int64) {
	switch fc.kind {
	case fetchSessionless:
		resp.Response().SessionID = fetchSessionInvalidID
	case fetchFull:
		n := 0
		for _, t := range plan.Topics {
			n += len(t.Partitions)
		}
		r := resp.Response()
		var watch *sessionWatch
		var read []*cachedFetchPartition // response order, nil for a partition named twice
		r.SessionID = c.maybeCreate(nowMs, fc.follower, fc.topicIDs, n, func(s *fetchSession) {
			if fc.follower {
				s.watch = newSessionWatch(fc.clock, fc.replica, fc.brokerEpoch)
				watch, read = s.watch, make([]*cachedFetchPartition, 0, n)
			}
			// readFetch answers topic by topic, partition by partition, in plan order.
			for ti := range plan.Topics {
				t := &plan.Topics[ti]
				for pi := range t.Partitions {
					p := &t.Partitions[pi]
					key := fetchKey(fc.topicIDs, t.Topic, t.TopicID, p.Partition)
					if s.parts[key] != nil {
						if watch != nil {
							read = append(read, nil)
						}
						continue // a partition named twice joins once
					}
					s.addLocked(key, p)
					if watch != nil {
						read = append(read, s.parts[key])
					}
					if fc.topicIDs {
						s.parts[key].name = t.Topic // as Read resolved it
					}
					if ti < len(r.Topics) && pi < len(r.Topics[ti].Partitions) {
						s.parts[key].answered(&r.Topics[ti].Partitions[pi])
					}
				}
			}
		})
		if watch != nil && r.SessionID != fetchSessionInvalidID {
			// Each partition's standing waiter, from the read that answered it.
			a, _ := resp.(*FetchAnswer)
			if a == nil {
				a = &FetchAnswer{}
			}
			watch.settle(read, a, true)
		}
	case fetchIncremental:
		s := fc.session
		s.mu.Lock()
		defer s.mu.Unlock()
		r := resp.Response()
		r.SessionID = s.id
		if s.epoch != fc.epoch {
			// Another request of the session was accepted since this one (a duplicate).
			resp.DropPartitions()
			r.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
			return
		}
		if fc.topicIDs {
			i := 0
			for _, t := range plan.Topics {
				for range t.Partitions {
					if i < len(fc.parts) && fc.parts[i].name == "" {
						fc.parts[i].name = t.Topic // joined incrementally: as Read resolved it
					}
					i++
				}
			}
		}
		resp.KeepPartitions(func(i int, sp *kmsg.FetchResponseTopicPartition, recordBytes int) bool {
			if i >= len(fc.parts) {
				return true
			}
			cp := fc.parts[i]
			if !cp.mustRespond(sp, recordBytes) {
				return false
			}
			if recordBytes > 0 && s.parts[cp.key] == cp {
				s.moveToBackLocked(cp)
			}
			return true
		})
	}
}

// answered records what an answer told the client of cp.
func (cp *cachedFetchPartition) answered(sp *kmsg.FetchResponseTopicPartition) {
	cp.highWatermark, cp.lastStableOffset, cp.localLogStartOffset = sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset
}

// mustRespond reports whether an incremental answer names the partition (Kafka's
// CachedPartition.maybeUpdateResponseData, plus the last stable offset, which a
// read_committed consumer reads up to), and records what it tells the client.
func (cp *cachedFetchPartition) mustRespond(sp *kmsg.FetchResponseTopicPartition, recordBytes int) bool {
	must := recordBytes > 0 || sp.PreferredReadReplica >= 0 || sp.DivergingEpoch.Epoch >= 0 || sp.DivergingEpoch.EndOffset >= 0
	if cp.highWatermark != sp.HighWatermark || cp.lastStableOffset != sp.LastStableOffset || cp.localLogStartOffset != sp.LogStartOffset {
		must = true
		cp.answered(sp)
	}
	if sp.ErrorCode != 0 {
		cp.highWatermark = -1 // answered again once the error clears
		must = true
	}
	return must
}
