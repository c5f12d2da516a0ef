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
// log start offset, max bytes) and forgets those that left. Any session error, a
// failed request and a new connection go back to a full fetch. Used by the fetcher's
// goroutine only.
type followerSession struct {
	id    int32 // 0: none
	epoch int32 // of the next fetch: 0 full, > 0 incremental
	// sent is the session's partitions as the leader holds them, after the last
	// answered fetch; pending is what they will be once the fetch in flight is answered.
	// The two maps swap at each answer and are reused.
	sent, pending map[sessionPartition]kmsg.FetchRequestTopicPartition
}

// sessionPartition names a partition in a follower session.
type sessionPartition struct {
	topic     string
	partition int32
}

// reset makes the next fetch a full one that closes the current session, if any
// (Kafka's nextCloseExisting).
func (s *followerSession) reset() {
	s.epoch = 0
	clear(s.sent)
	clear(s.pending)
}

// build fills req's session fields and partitions from want (every partition to
// fetch this round, grouped by topic): all of them for a full fetch, else those that
// joined or changed, and the forgotten ones.
func (s *followerSession) build(req *kmsg.FetchRequest, want []kmsg.FetchRequestTopic) {
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	if s.pending == nil {
		s.pending = make(map[sessionPartition]kmsg.FetchRequestTopicPartition, len(s.sent))
	}
	clear(s.pending)
	for _, t := range want {
		for _, p := range t.Partitions {
			s.pending[sessionPartition{t.Topic, p.Partition}] = p
		}
	}
	if s.epoch == 0 {
		req.Topics = want
		return
	}
	for _, t := range want {
		var changed []kmsg.FetchRequestTopicPartition
		for _, p := range t.Partitions {
			if old, ok := s.sent[sessionPartition{t.Topic, p.Partition}]; !ok || !sameFetchParams(old, p) {
				changed = append(changed, p)
			}
		}
		if len(changed) > 0 {
			rt := t
			rt.Partitions = changed
			req.Topics = append(req.Topics, rt)
		}
	}
	forgotten := map[string]int{} // topic -> index in req.ForgottenTopics
	for k := range s.sent {
		if _, ok := s.pending[k]; ok {
			continue
		}
		i, ok := forgotten[k.topic]
		if !ok {
			i = len(req.ForgottenTopics)
			forgotten[k.topic] = i
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic = k.topic
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.partition)
	}
}

// sameFetchParams reports whether a partition's fetch parameters are unchanged.
func sameFetchParams(a, b kmsg.FetchRequestTopicPartition) bool {
	return a.FetchOffset == b.FetchOffset && a.CurrentLeaderEpoch == b.CurrentLeaderEpoch &&
		a.LastFetchedEpoch == b.LastFetchedEpoch && a.LogStartOffset == b.LogStartOffset &&
		a.PartitionMaxBytes == b.PartitionMaxBytes
}

// answered takes the leader's answer to the fetch built last. It reports false on a
// session error (FETCH_SESSION_ID_NOT_FOUND forgets the session; any other error closes
// it with the next, full, fetch); the answer's partitions are then to be ignored.
func (s *followerSession) answered(resp *kmsg.FetchResponse) bool {
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
	s.sent, s.pending = s.pending, s.sent
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
