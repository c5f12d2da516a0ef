package replication

// One read of a Fetch's partitions: consumers read up to the high watermark, or under
// read_committed (isolation_level 1) up to the last stable offset with the aborted
// transactions of the range; followers up to the log end, fenced by leader epoch
// (KIP-320) and told where they diverge (KIP-595's DivergingEpoch). max_bytes and
// partition_max_bytes are soft limits (KIP-74): the first batch is returned even when
// larger. KIP-392: from v11 a follower serves consumers too, up to its own high
// watermark. A consumer's fetch below v10 of a zstd topic is UNSUPPORTED_COMPRESSION_TYPE
// (KIP-110).

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Read reads every requested partition once. It returns the answer, the record bytes
// it holds and whether any partition must be answered at once (an error, or a
// diverging epoch for a follower). The answer holds its record sets in the segment
// files until the rpc writer has sent it, or it is Released. The partitions of topics
// denied reports (nil: none) get TOPIC_AUTHORIZATION_FAILED.
func (s *FetchServer) Read(r *kmsg.FetchRequest, denied func(topic string) bool) (*FetchAnswer, int, bool) {
	return s.read(r, denied, nil)
}

// read is Read with a follower session's clock (nil: none; FollowerFetch.Clock).
func (s *FetchServer) read(r *kmsg.FetchRequest, denied func(topic string) bool, clock *atomic.Int64) (*FetchAnswer, int, bool) {
	resp := &FetchAnswer{FetchResponse: r.ResponseKind().(*kmsg.FetchResponse)}
	follower := r.ReplicaID >= 0
	total, errored := 0, false
	maxBytes := int(r.MaxBytes)
	if r.Version < 3 || maxBytes <= 0 {
		maxBytes = 1 << 30
	}
	for ti := range r.Topics {
		t := &r.Topics[ti]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = p.Partition
			sp.RecordBatches = []byte{} // never null: librdkafka rejects a null record set
			if r.IsolationLevel == 1 {
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			if follower {
				resp.marks = append(resp.marks, readMark{}) // filled by readPartition
			}
			name, idCode := s.topicName(r, t, p.Partition)
			if idCode != 0 {
				sp.ErrorCode = idCode // v13+: UNKNOWN_TOPIC_ID, INCONSISTENT_TOPIC_ID
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				resp.held = append(resp.held, nil)
				st.Partitions = append(st.Partitions, sp)
				errored = true
				continue
			}
			if denied != nil && denied(name) {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				resp.held = append(resp.held, nil)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			limit := int(p.PartitionMaxBytes)
			if total > 0 {
				limit = min(limit, maxBytes-total) // past the first batch, limits are hard
			}
			code, held := s.readPartition(&sp, name, p, limit, total == 0, follower, r, resp, clock)
			resp.held = append(resp.held, held)
			if resp.remote != nil && resp.remote.topic < 0 {
				resp.remote.topic, resp.remote.part = len(resp.Topics), len(st.Partitions)
			}
			if code != 0 {
				sp.ErrorCode = code
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				errored = true
			}
			if sp.DivergingEpoch.Epoch >= 0 {
				errored = true // the follower must truncate now; do not park it (Kafka answers at once)
			}
			total += len(sp.RecordBatches) + int(held.Len())
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, total, errored
}

// readPartition fills one partition's answer and returns its error code and its
// record set, held in the segment file (nil when empty, or when copied into
// sp.RecordBatches because the file cache had no Hold left). It adds the partition's
// Changes() as of the read to a.changes, and marks a answered by a replication quota
// (a.throttled).
func (s *FetchServer) readPartition(sp *kmsg.FetchResponseTopicPartition, topic string, p kmsg.FetchRequestTopicPartition, limit int, first, follower bool, r *kmsg.FetchRequest, a *FetchAnswer, clock *atomic.Int64) (int16, *segment.Hold) {
	lp, zstd, code := s.Source.Replica(topic, p.Partition)
	if lp == nil {
		return code, nil
	}
	var mark *readMark
	if follower {
		mark = &a.marks[len(a.marks)-1]
		mark.lp = lp // not idle: a partition left out below is read again
	}
	if limit <= 0 && !first {
		a.changes += lp.Changes() // before the read: a change meanwhile shows
		st := lp.State()
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = st.HighWatermark, st.LastStableOffset, st.LogStartOffset
		return 0, nil
	}
	var res FetchResult
	var err error
	if follower {
		lastFetched, logStart := int32(-1), int64(-1)
		if r.Version >= 12 {
			lastFetched = p.LastFetchedEpoch
		}
		if r.Version >= 5 {
			logStart = p.LogStartOffset // the follower's own, for DeleteRecords' low watermark
		}
		brokerEpoch := int64(-1)
		if r.Version >= 15 {
			brokerEpoch = r.ReplicaState.Epoch // KIP-903: the fetching incarnation's broker epoch
		}
		var diverging *DivergingEpoch
		now := time.Now()
		rate := s.Source.LeaderThrottle(topic, p.Partition, r.ReplicaID, lp.InSync(r.ReplicaID))
		throttled := rate >= 0 && s.Leader.Exceeded(rate, now)
		res, diverging, err = lp.ReadForFollowerHeld(FollowerFetch{ReplicaID: r.ReplicaID, FetchOffset: p.FetchOffset,
			CurrentLeaderEpoch: p.CurrentLeaderEpoch, LastFetchedEpoch: lastFetched, MaxBytes: max(limit, 1), LogStartOffset: logStart, BrokerEpoch: brokerEpoch, Clock: clock}, now)
		mark.changes = res.Changes
		mark.idle = err == nil && diverging == nil && !throttled && res.RecordBytes() == 0 && p.FetchOffset >= res.LogEndOffset
		if diverging != nil {
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = diverging.Epoch, diverging.EndOffset
		}
		switch {
		case throttled:
			res.Held.Release() // over the leader's replication quota (throttle.go)
			res.Held, res.Records = nil, nil
			a.throttled = true
		case rate >= 0:
			s.Leader.Record(rate, res.RecordBytes(), now)
		}
	} else {
		if r.Version < 10 && zstd {
			// Kafka: a consumer too old for zstd (KIP-110) cannot read a zstd topic.
			return kerr.UnsupportedCompressionType.Code, nil
		}
		if id := s.readReplica(topic, p, lp, r); id >= 0 {
			// KIP-392: no records, the offsets, and where to fetch instead; answered
			// at once (Kafka, KAFKA-13767).
			st := lp.State()
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = st.HighWatermark, st.LastStableOffset, st.LogStartOffset
			sp.PreferredReadReplica = id
			a.behind = true
			return 0, nil
		}
		scope := LeaderOnly
		if r.Version >= 11 {
			scope = AnyReplica // KIP-392: a follower serves up to its own HW
		}
		res, err = lp.ReadIsolatedHeld(p.FetchOffset, max(limit, 1), p.CurrentLeaderEpoch, scope, r.IsolationLevel == 1)
	}
	if err != nil {
		res.Held.Release()
		if !follower && errors.Is(err, ErrOffsetMovedToTieredStorage) {
			return s.readRemote(sp, lp, res, p.FetchOffset, limit, first, r.IsolationLevel == 1, a), nil
		}
		return s.Source.ErrorCode(err), nil
	}
	a.changes += res.Changes
	if res.FallingBehind {
		a.behind = true
	}
	lso := res.LastStableOffset
	if follower {
		lso = res.HighWatermark
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, lso, res.LogStartOffset
	for _, a := range res.Aborted {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		sp.AbortedTransactions = append(sp.AbortedTransactions, at)
	}
	if first || res.RecordBytes() <= limit { // only the first non-empty partition may exceed its limit
		if res.Held == nil && len(res.Records) > 0 {
			sp.RecordBatches = res.Records // copied: no Hold left (FetchResult.holdOrCopy)
		}
		return 0, res.Held
	}
	res.Held.Release()
	return 0, nil
}

// readRemote answers a consumer's fetch of an offset in remote storage only
// (ErrOffsetMovedToTieredStorage; Kafka never sends OFFSET_MOVED_TO_TIERED_STORAGE to a
// consumer): with a RemoteFetcher, the answer's first such partition is read from
// remote storage before the fetch answers (fetch_remote.go), and any other answers no
// records this time, with the partition's offsets; without one, OFFSET_OUT_OF_RANGE,
// what a consumer gets for an offset this broker cannot serve.
func (s *FetchServer) readRemote(sp *kmsg.FetchResponseTopicPartition, lp *Partition, res FetchResult, offset int64, limit int, first, readCommitted bool, a *FetchAnswer) int16 {
	if s.Remote == nil {
		return kerr.OffsetOutOfRange.Code
	}
	a.changes += res.Changes
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
	a.markRemote(lp, offset, limit, first, readCommitted)
	return 0
}

// readReplica is the replica a consumer's fetch of p should go to instead (KIP-392),
// or -1: only for Fetch v11+ with a client rack, when a selector is configured.
func (s *FetchServer) readReplica(topic string, p kmsg.FetchRequestTopicPartition, lp *Partition, r *kmsg.FetchRequest) int32 {
	if s.ReadReplica == nil || r.Version < 11 || r.Rack == "" {
		return -1
	}
	return s.ReadReplica(topic, p.Partition, lp, r.Rack, p.FetchOffset)
}

// stoppingFollowerFetch answers a follower's (and a consumer's) parked fetch when this
// broker starts to stop: NOT_LEADER_OR_FOLLOWER for every partition, read from nothing. The controlled
// shutdown has moved this broker's leaderships already, so the follower fetches them
// from their new leaders; reading each of a follower's tens of thousands of partitions
// once more would only hold up the drain (Kafka drops its delayed fetches at shutdown).
func stoppingFollowerFetch(r *kmsg.FetchRequest) *FetchAnswer {
	resp := &FetchAnswer{FetchResponse: r.ResponseKind().(*kmsg.FetchResponse)}
	resp.Topics = make([]kmsg.FetchResponseTopic, len(r.Topics))
	for i, t := range r.Topics {
		st := &resp.Topics[i]
		st.Topic, st.TopicID = t.Topic, t.TopicID
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p.Partition, kerr.NotLeaderForPartition.Code
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.RecordBatches = []byte{} // never null
			st.Partitions[j] = sp
		}
	}
	return resp
}
