package replication

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// followerSession is a fetcher's KIP-227 fetch session with its leader (the follower
// half of Kafka's FetchSessionHandler). The first fetch on a connection is full (epoch
// 0, naming the previous session, if any, so that the leader closes it); once the
// leader answers with a session id, each fetch names only the partitions that joined
// or whose fetch parameters changed (fetch offset, leader epoch, last fetched epoch,
// log start offset, max bytes, and from v13 the topic's id) and forgets those that
// left. Any session error, a failed request and a new connection go back to a full
// fetch. Used by the fetcher's goroutine only.
type followerSession struct {
	id    int32 // 0: none
	epoch int32 // of the next fetch: 0 full, > 0 incremental
	// sent is the session's partitions, by topic and partition, with the parameters
	// last sent: what the leader holds once the fetch in flight is answered. A fetch
	// that is not answered with the session resets it (the next one is full), so
	// build updates it at once.
	sent  map[string]map[int32]*sentPartition
	round uint64 // counts builds: marks the partitions of the latest
	// names maps the topic ids the session's partitions were sent under (v13+) to
	// their names, for the answers; renew says a partition was sent under a new id (its
	// topic re-created under its name), so the session is renewed once the fetch in
	// flight is answered: the next fetch is full and the leader's session drops the
	// old id's partitions, whose answers are ignored meanwhile (fetcher_topic_ids.go).
	names map[[16]byte]string
	renew bool
}

// sentPartition is a session partition's parameters as last sent.
type sentPartition struct {
	params  kmsg.FetchRequestTopicPartition
	topicID [16]byte // its topic's id (v13+): a new one is a change
	round   uint64   // the build that last wanted it
}

// reset makes the next fetch a full one that closes the current session, if any
// (Kafka's nextCloseExisting).
func (s *followerSession) reset() {
	s.epoch = 0
	clear(s.sent)
	clear(s.names)
	s.renew = false
}

// build fills req's session fields and partitions from want (every partition to
// fetch this round, grouped by topic): all of them for a full fetch, else those that
// joined or changed, and the forgotten ones.
func (s *followerSession) build(req *kmsg.FetchRequest, want []kmsg.FetchRequestTopic) {
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	full := s.epoch == 0
	if full {
		clear(s.sent)
		clear(s.names)
		req.Topics = want
	}
	s.init()
	s.round++
	for _, t := range want {
		if changed := s.noteSent(t); len(changed) > 0 && !full {
			rt := t
			rt.Partitions = changed
			req.Topics = append(req.Topics, rt)
		}
	}
	for topic, ps := range s.sent {
		for partition, e := range ps {
			if e.round != s.round {
				delete(ps, partition)
				if !full {
					req.ForgottenTopics = appendForgotten(req.ForgottenTopics, topic, e.topicID, partition)
				}
			}
		}
		if len(ps) == 0 {
			delete(s.sent, topic)
		}
	}
}

// init makes the session's maps on first use.
func (s *followerSession) init() {
	if s.sent == nil {
		s.sent, s.names = map[string]map[int32]*sentPartition{}, map[[16]byte]string{}
	}
}

// buildChanged fills an incremental fetch (the session in use) from the partitions a
// round looked at again (changed: each one's parameters now, sent only when they
// differ from what the leader holds) and those that left the fetch (left); every other
// partition of the session stays as sent. Each partition of changed must already be in
// the session or join it now.
func (s *followerSession) buildChanged(req *kmsg.FetchRequest, changed []kmsg.FetchRequestTopic, left []kmsg.FetchRequestForgottenTopic) {
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	s.init()
	for _, t := range changed {
		if diff := s.noteSent(t); len(diff) > 0 {
			rt := t
			rt.Partitions = diff
			req.Topics = append(req.Topics, rt)
		}
	}
	for _, ft := range left {
		ps := s.sent[ft.Topic]
		var gone []int32
		for _, partition := range ft.Partitions {
			if ps[partition] != nil {
				delete(ps, partition)
				gone = append(gone, partition)
			}
		}
		if len(ps) == 0 {
			delete(s.sent, ft.Topic)
		}
		if len(gone) > 0 {
			g := ft
			g.Partitions = gone
			req.ForgottenTopics = append(req.ForgottenTopics, g)
		}
	}
}

// noteSent records t's partitions as sent in the current round and returns those that
// joined the session or whose parameters or topic id changed.
func (s *followerSession) noteSent(t kmsg.FetchRequestTopic) []kmsg.FetchRequestTopicPartition {
	if t.TopicID != ([16]byte{}) {
		s.names[t.TopicID] = t.Topic
	}
	ps := s.sent[t.Topic]
	if ps == nil {
		ps = make(map[int32]*sentPartition, len(t.Partitions))
		s.sent[t.Topic] = ps
	}
	var changed []kmsg.FetchRequestTopicPartition
	for _, p := range t.Partitions {
		e := ps[p.Partition]
		switch {
		case e == nil:
			e = &sentPartition{}
			ps[p.Partition] = e
			changed = append(changed, p)
		case e.topicID != t.TopicID:
			changed = append(changed, p)
			delete(s.names, e.topicID)
			s.renew = true
		case !sameFetchParams(e.params, p):
			changed = append(changed, p)
		}
		e.params, e.topicID, e.round = p, t.TopicID, s.round
	}
	return changed
}

// sameFetchParams reports whether a partition's fetch parameters are unchanged.
func sameFetchParams(a, b kmsg.FetchRequestTopicPartition) bool {
	return a.FetchOffset == b.FetchOffset && a.CurrentLeaderEpoch == b.CurrentLeaderEpoch &&
		a.LastFetchedEpoch == b.LastFetchedEpoch && a.LogStartOffset == b.LogStartOffset &&
		a.PartitionMaxBytes == b.PartitionMaxBytes
}

// nameTopics sets the name of each topic of a v13+ answer from its id, as the
// session's partitions were sent; a topic of another id keeps the empty name, which no
// followed replica has, and is ignored.
func (s *followerSession) nameTopics(resp *kmsg.FetchResponse) {
	if resp.Version < 13 {
		return
	}
	for i := range resp.Topics {
		resp.Topics[i].Topic = s.names[resp.Topics[i].TopicID]
	}
}

// answered takes the leader's answer to the fetch built last. It reports false on a
// session error (FETCH_SESSION_ID_NOT_FOUND forgets the session; any other error closes
// it with the next, full, fetch); the answer's partitions are then to be ignored. A
// session to renew (renew) is closed by the next fetch, full, either way.
func (s *followerSession) answered(resp *kmsg.FetchResponse) bool {
	defer func() {
		if s.renew {
			s.reset()
		}
	}()
	if resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.FetchSessionIDNotFound.Code {
			s.id = 0
		}
		s.reset()
		return false
	}
	if resp.SessionID == 0 {
		// No session created (full), or the leader ended it (incremental): the next
		// fetch is full and asks again.
		s.id = 0
		s.reset()
		return true
	}
	s.id = resp.SessionID
	s.epoch = nextSessionEpoch(s.epoch)
	return true
}

// nextSessionEpoch is Kafka's FetchMetadata.nextEpoch for a session in use: 0 (full)
// becomes 1, and the epochs count up, wrapping to 1.
func nextSessionEpoch(epoch int32) int32 {
	if epoch == 1<<31-1 {
		return 1
	}
	return epoch + 1
}
