package replication

// Fetch sessions (KIP-227), the leader's half (the follower's is fetch_session.go): the
// cache of incremental fetch sessions, Kafka's
// FetchSessionCache and FetchSession. A client (a consumer or a follower) that sends
// Fetch v7+ with session id 0 and epoch 0 asks for a session; the leader answers the
// full fetch with a new session id, and from then on the client sends epochs 1, 2, ...
// naming only the partitions whose fetch parameters changed (plus ForgottenTopicsData
// for those it no longer wants), and the answer names only the partitions with
// records or a changed high watermark, last stable offset, log start offset or error
// (fetch_session_context.go). The cache holds at most
// max.incremental.fetch.session.cache.slots sessions; a new one evicts, in this
// order, a session unused for min.incremental.fetch.session.eviction.ms, or the least
// valuable evictable one (follower sessions are worth more than consumers', then more
// partitions, as in Kafka's tryEvict), or is not created (session id 0: the client
// fetches without a session). Nothing of a session outlives the process: after a
// restart every client's next incremental fetch gets FETCH_SESSION_ID_NOT_FOUND and
// falls back to a full fetch.

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's FetchMetadata constants.
const (
	fetchSessionInvalidID    int32 = 0  // no session
	fetchSessionInitialEpoch int32 = 0  // a full fetch that creates a session
	fetchSessionFinalEpoch   int32 = -1 // a full fetch without a session (closing the one named)
)

// maxCachedFetchSessionPartitions bounds the partitions of every session together
// (Petrel's bound; Kafka has none beyond the request size): the slots bound the number
// of sessions, but an incremental fetch may add partitions to its session without end.
// A session that would pass it is not created, or, on an incremental fetch, removed
// (FETCH_SESSION_ID_NOT_FOUND: the client goes back to a full fetch).
const maxCachedFetchSessionPartitions = 1 << 21

// nextFetchSessionEpoch is Kafka's FetchMetadata.nextEpoch: epochs count up from 1 and
// wrap to 1; the initial and final epochs stay as they are.
func nextFetchSessionEpoch(epoch int32) int32 {
	switch {
	case epoch < 0:
		return epoch
	case epoch == math.MaxInt32:
		return 1
	}
	return epoch + 1
}

// fetchSessionKey names a partition in a session.
type fetchSessionKey struct {
	topic     string   // v4-12 sessions; "" in a v13+ session, whose topics are ids
	id        [16]byte // v13+ sessions: the topic id (Kafka keys by TopicIdPartition)
	partition int32
}

// fetchKey is a session key of topic t's partition: by name below v13, by id from it.
func fetchKey(topicIDs bool, name string, id [16]byte, partition int32) fetchSessionKey {
	if topicIDs {
		return fetchSessionKey{id: id, partition: partition}
	}
	return fetchSessionKey{topic: name, partition: partition}
}

// cachedFetchPartition is one partition of a session: the request parameters the
// client last sent for it, and what the last answer that named it said. Guarded by its
// session's mu.
type cachedFetchPartition struct {
	key fetchSessionKey
	// name is a v13+ session partition's topic name as first resolved (Kafka resolves
	// it once): its topic re-created under the name is INCONSISTENT_TOPIC_ID.
	name string
	// The request parameters, as last sent.
	fetchOffset           int64
	fetcherLogStartOffset int64 // the follower's own log start offset (v5+)
	maxBytes              int32
	currentLeaderEpoch    int32
	lastFetchedEpoch      int32
	// What the client was last told; -1 until an answer named the partition, so that
	// the first answer after it joins always does.
	highWatermark       int64
	lastStableOffset    int64
	localLogStartOffset int64
	// prev and next link the session's partitions in fetch order; seq grows along it.
	prev, next *cachedFetchPartition
	seq        uint64
	// A follower session's watch (fetch_session_watch.go), guarded by the watch's mu:
	// whether the partition is to be read at the next fetch, and its standing waiter
	// and the replica it watches (nil until a read attached it).
	dirty bool
	lp    *Partition
	w     *Waiter
	// forgotten: the partition left the session (forget); a read still in flight must
	// not watch it again.
	forgotten bool
}

func (cp *cachedFetchPartition) setRequest(p *kmsg.FetchRequestTopicPartition) {
	cp.fetchOffset, cp.fetcherLogStartOffset, cp.maxBytes = p.FetchOffset, p.LogStartOffset, p.PartitionMaxBytes
	cp.currentLeaderEpoch, cp.lastFetchedEpoch = p.CurrentLeaderEpoch, p.LastFetchedEpoch
}

// fetchSession is one incremental fetch session.
type fetchSession struct {
	id         int32
	privileged bool  // created by a follower (replica id >= 0)
	topicIDs   bool  // created by Fetch v13+ (topic ids); never with v4-12
	creationMs int64 // immutable

	// Guarded by the cache's mu.
	lastUsedMs int64
	cachedSize int  // partition count as of the last touch; -1 once out of the cache
	byAll      bool // evictable by any new session (older than the eviction time at the last touch)
	byPriv     bool // evictable by a new follower session

	mu    sync.Mutex // guards the fields below; never held while taking the cache's mu
	epoch int32      // the epoch the next incremental fetch must carry
	parts map[fetchSessionKey]*cachedFetchPartition
	head  *cachedFetchPartition // fetch order
	tail  *cachedFetchPartition
	seq   uint64 // the next cachedFetchPartition.seq
	// watch is a follower session's standing watch (fetch_session_watch.go), or nil;
	// unwatched holds the waiters of the partitions updateLocked removed, for the
	// caller to unwatch once it holds no lock.
	watch     *sessionWatch
	unwatched []watchedPartition
}

// pushBackLocked appends cp to the fetch order.
func (s *fetchSession) pushBackLocked(cp *cachedFetchPartition) {
	cp.prev, cp.next = s.tail, nil
	cp.seq = s.seq
	s.seq++
	if s.tail != nil {
		s.tail.next = cp
	} else {
		s.head = cp
	}
	s.tail = cp
}

// unlinkLocked takes cp out of the fetch order.
func (s *fetchSession) unlinkLocked(cp *cachedFetchPartition) {
	if cp.prev != nil {
		cp.prev.next = cp.next
	} else {
		s.head = cp.next
	}
	if cp.next != nil {
		cp.next.prev = cp.prev
	} else {
		s.tail = cp.prev
	}
	cp.prev, cp.next = nil, nil
}

// addLocked adds a new partition at the end of the fetch order.
func (s *fetchSession) addLocked(key fetchSessionKey, p *kmsg.FetchRequestTopicPartition) {
	cp := &cachedFetchPartition{key: key, highWatermark: -1, lastStableOffset: -1, localLogStartOffset: -1}
	cp.setRequest(p)
	s.parts[key] = cp
	s.pushBackLocked(cp)
}

// moveToBackLocked puts cp last, as Kafka does with a partition that returned
// records: the others get the first chance at the next answer's bytes.
func (s *fetchSession) moveToBackLocked(cp *cachedFetchPartition) {
	if s.tail == cp {
		return
	}
	s.unlinkLocked(cp)
	s.pushBackLocked(cp)
}

// updateLocked applies an incremental fetch's partitions (added, or their parameters
// changed) and forgotten partitions, in Kafka's order (FetchSession.update). It returns
// how many partitions were added and removed.
func (s *fetchSession) updateLocked(topics []kmsg.FetchRequestTopic, forgotten []kmsg.FetchRequestForgottenTopic) (added, removed int) {
	for ti := range topics {
		t := &topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			key := fetchKey(s.topicIDs, t.Topic, t.TopicID, p.Partition)
			if cp := s.parts[key]; cp != nil {
				cp.setRequest(p)
				if s.watch != nil {
					s.watch.mark(cp) // its parameters changed: read it
				}
				continue
			}
			s.addLocked(key, p)
			if s.watch != nil {
				s.watch.mark(s.parts[key])
			}
			added++
		}
	}
	for _, f := range forgotten {
		for _, partition := range f.Partitions {
			key := fetchKey(s.topicIDs, f.Topic, f.TopicID, partition)
			if cp := s.parts[key]; cp != nil {
				s.unlinkLocked(cp)
				delete(s.parts, key)
				if s.watch != nil {
					s.unwatched = append(s.unwatched, s.watch.forget(cp))
				}
				removed++
			}
		}
	}
	return added, removed
}

// FetchSessionCache holds the sessions of one broker. Safe for concurrent use. Lock
// order: the cache's mu, then a session's mu (Kafka's order).
type FetchSessionCache struct {
	maxEntries int   // max.incremental.fetch.session.cache.slots
	evictionMs int64 // min.incremental.fetch.session.eviction.ms
	// maxPartitions bounds the partitions of all sessions (maxCachedFetchSessionPartitions).
	maxPartitions int64

	mu            sync.Mutex
	sessions      map[int32]*fetchSession
	numPartitions int64 // the sessions' cachedSize summed
	evictions     int64
}

// NewFetchSessionCache returns a cache of at most maxEntries sessions
// (max.incremental.fetch.session.cache.slots), evicting by evictionMs
// (min.incremental.fetch.session.eviction.ms).
func NewFetchSessionCache(maxEntries int, evictionMs int64) *FetchSessionCache {
	return &FetchSessionCache{maxEntries: maxEntries, evictionMs: evictionMs, maxPartitions: maxCachedFetchSessionPartitions,
		sessions: map[int32]*fetchSession{}}
}

// get returns the session with this id, or nil.
func (c *FetchSessionCache) get(id int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// size is the number of sessions; partitions the partitions they hold.
func (c *FetchSessionCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

func (c *FetchSessionCache) partitions() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.numPartitions
}

// FetchSessionCacheState is the cache's metrics (Kafka's
// kafka.server:type=FetchSessionCache).
type FetchSessionCacheState struct {
	Sessions   int   // NumIncrementalFetchSessions
	Partitions int64 // NumIncrementalFetchPartitionsCached
	Evictions  int64 // evictions since start
}

// State is the cache's metrics.
func (c *FetchSessionCache) State() FetchSessionCacheState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return FetchSessionCacheState{Sessions: len(c.sessions), Partitions: c.numPartitions, Evictions: c.evictions}
}

// newSessionIDLocked is a random id in [1, MaxInt32) not in use (Kafka's newSessionId).
func (c *FetchSessionCache) newSessionIDLocked() int32 {
	for {
		id := rand.Int32N(math.MaxInt32-1) + 1
		if c.sessions[id] == nil {
			return id
		}
	}
}

// maybeCreate creates a session of the partitions fill adds (called with the new
// session's mu held) when there is room, or room can be made by eviction, and returns
// its id; fetchSessionInvalidID when none was created.
func (c *FetchSessionCache) maybeCreate(nowMs int64, privileged, topicIDs bool, size int, fill func(s *fetchSession)) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.numPartitions+int64(size) > c.maxPartitions {
		return fetchSessionInvalidID
	}
	if len(c.sessions) >= c.maxEntries && !c.tryEvictLocked(privileged, size, nowMs) {
		return fetchSessionInvalidID
	}
	s := &fetchSession{id: c.newSessionIDLocked(), privileged: privileged, topicIDs: topicIDs, creationMs: nowMs,
		lastUsedMs: nowMs, cachedSize: -1, epoch: nextFetchSessionEpoch(fetchSessionInitialEpoch),
		parts: make(map[fetchSessionKey]*cachedFetchPartition, size)}
	s.mu.Lock()
	fill(s)
	n := len(s.parts)
	s.mu.Unlock()
	c.sessions[s.id] = s
	c.touchLocked(s, nowMs, n)
	return s.id
}

// tryEvictLocked makes room for a new session (Kafka's tryEvict): the least recently
// used session if it is stale (unused for evictionMs), else the least valuable
// evictable one — by privilege, then size, then id — when the new one is worth at
// least as much. A follower's new session may evict any consumer session; any new
// session may evict one created more than evictionMs ago (as of its last use).
func (c *FetchSessionCache) tryEvictLocked(privileged bool, size int, nowMs int64) bool {
	var lru, cheapest *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsedMs < lru.lastUsedMs || (s.lastUsedMs == lru.lastUsedMs && s.id < lru.id) {
			lru = s
		}
		if (privileged && s.byPriv) || (!privileged && s.byAll) {
			if cheapest == nil || evictableLess(s, cheapest) {
				cheapest = s
			}
		}
	}
	switch {
	case lru == nil:
		return false
	case nowMs-lru.lastUsedMs > c.evictionMs:
		c.removeLocked(lru)
	case cheapest == nil:
		return false
	case evictableKeyLess(privileged, size, 0, cheapest.privileged, cheapest.cachedSize, cheapest.id):
		return false // the new session is worth less
	default:
		c.removeLocked(cheapest)
	}
	c.evictions++
	return true
}

// evictableLess orders sessions by Kafka's EvictableKey (privileged, size, id).
func evictableLess(a, b *fetchSession) bool {
	return evictableKeyLess(a.privileged, a.cachedSize, a.id, b.privileged, b.cachedSize, b.id)
}

func evictableKeyLess(aPriv bool, aSize int, aID int32, bPriv bool, bSize int, bID int32) bool {
	if aPriv != bPriv {
		return !aPriv
	}
	if aSize != bSize {
		return aSize < bSize
	}
	return aID < bID
}

// touchLocked records a use of s at nowMs: its last use, its size (its partition
// count now) and whether it may be evicted (Kafka's touch).
func (c *FetchSessionCache) touchLocked(s *fetchSession, nowMs int64, size int) {
	if c.sessions[s.id] != s {
		return // removed meanwhile
	}
	s.lastUsedMs = nowMs
	if s.cachedSize >= 0 {
		c.numPartitions -= int64(s.cachedSize)
	}
	s.cachedSize = size
	old := nowMs-s.creationMs > c.evictionMs
	s.byPriv = !s.privileged || old
	s.byAll = old
	c.numPartitions += int64(s.cachedSize)
}

// remove takes the session with this id out of the cache; it reports whether there
// was one.
func (c *FetchSessionCache) remove(id int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s == nil {
		return false
	}
	c.removeLocked(s)
	return true
}

func (c *FetchSessionCache) removeLocked(s *fetchSession) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	c.numPartitions -= int64(s.cachedSize)
	s.cachedSize = -1
	if s.watch != nil {
		s.watch.close()
	}
}
