package broker

// Fetch (key 1), v4-12: names, not topic ids (v13+ is not advertised). Consumers read up
// to the high watermark; read_committed (isolation_level 1, librdkafka's and kafkajs's
// default) reads up to the last stable offset (min of the HW and the first offset of
// the oldest ongoing transaction) and gets the aborted transactions of the range, so
// that it drops their records. Fetch sessions (KIP-227, v7+; replication's
// fetch_session_cache.go, fetch_session_context.go): a full fetch with epoch 0 gets a
// session when the cache has room, and incremental fetches of it name only what
// changed. max_bytes and partition_max_bytes are soft limits (KIP-74): the first batch
// is returned even when larger. A fetch with less than min_bytes parks in the
// purgatory (replication.Purgatory.ParkFetch, no goroutine of its own) until enough
// data arrives, a partition's state changes, or max_wait_ms passes; it
// answers at once when a partition's read came from an older segment than its high
// watermark's (Kafka's DelayedFetch: the fetch is falling behind the current segment).
// KIP-320: current_leader_epoch fences stale or future epochs. KIP-392: from v11 a
// follower serves consumers too, up to its own high watermark (never past the
// leader's); preferred_read_replica is always -1, so clients that do not ask a follower
// themselves keep reading from the leader. A consumer's fetch below v10 of a topic with
// compression.type=zstd is UNSUPPORTED_COMPRESSION_TYPE, as in Kafka (KIP-110).

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/compress"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.Fetch, 4, 12, (*Broker).handleFetch, apiOpts{
		authorize:       authorizeFetch,
		partitionScoped: true,
	})
}

func (b *Broker) handleFetch(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.FetchRequest)
	fc := b.fetchSessions.NewContext(r, r.ReplicaID >= 0, time.Now().UnixMilli())
	if code := fc.ErrorCode(); code != 0 {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		return rpc.Respond(resp)
	}
	plan := fc.Request(r) // the session's partitions for an incremental fetch
	denied := b.fetchDenied(req, r)
	resp, bytes, errored := b.readFetch(plan, denied)
	wait := time.Duration(r.MaxWaitMillis) * time.Millisecond
	if errored || bytes >= int(r.MinBytes) || resp.behind || wait <= 0 {
		b.fetchSessions.Finish(&fc, plan, resp, time.Now().UnixMilli())
		b.countFetched(r, resp, bytes)
		return rpc.Respond(resp)
	}
	// Parked in the purgatory, with no goroutine of its own: the append, high watermark
	// advance or role change of one of its partitions reads it again on the goroutine
	// that made it, and the answer goes to the rpc.Deferred.
	d := req.Defer()
	parts, gone := b.fetchPartitions(plan, denied)
	minBytes := max(int(r.MinBytes), 1)
	b.purgatory.ParkFetch(ctx, parts, wait, resp, gone, replication.DelayedFetch{
		Read: func() (replication.FetchRead, bool) {
			a, n, errored := b.readFetch(plan, denied)
			return a, errored || n >= minBytes || a.behind
		},
		Reusable: func(a replication.FetchRead) bool { return a.(*fetchAnswer).reusable() },
		Answer: func(a replication.FetchRead) {
			if a == nil { // the connection closed
				d.Complete(nil)
				return
			}
			resp := a.(*fetchAnswer)
			b.fetchSessions.Finish(&fc, plan, resp, time.Now().UnixMilli())
			b.countFetched(r, resp, -1)
			d.Complete(resp)
		},
		Follower: r.ReplicaID >= 0,
		Stopping: func() replication.FetchRead { return stoppingFollowerFetch(plan) },
	})
	return rpc.RespondDeferred(d)
}

// fetchPartitions returns the local replicas of r's partitions, those of topics denied
// reports excepted (answered TOPIC_AUTHORIZATION_FAILED: nothing to watch), and
// whether a partition has gone since the first read (read again, to answer its
// error).
func (b *Broker) fetchPartitions(r *kmsg.FetchRequest, denied func(topic string) bool) ([]*replication.Partition, bool) {
	var parts []*replication.Partition
	gone := false
	for _, t := range r.Topics {
		if denied != nil && denied(t.Topic) {
			continue
		}
		for _, p := range t.Partitions {
			if lp := b.partitions.get(t.Topic, p.Partition); lp != nil {
				parts = append(parts, lp.Partition)
			} else {
				gone = true
			}
		}
	}
	return parts, gone
}

// stoppingFollowerFetch answers a follower's parked fetch when this broker starts to
// stop: NOT_LEADER_OR_FOLLOWER for every partition, read from nothing. The controlled
// shutdown has moved this broker's leaderships already, so the follower fetches them
// from their new leaders; reading each of a follower's tens of thousands of partitions
// once more would only hold up the drain (Kafka drops its delayed fetches at shutdown).
func stoppingFollowerFetch(r *kmsg.FetchRequest) *fetchAnswer {
	resp := &fetchAnswer{FetchResponse: r.ResponseKind().(*kmsg.FetchResponse)}
	resp.Topics = make([]kmsg.FetchResponseTopic, len(r.Topics))
	for i, t := range r.Topics {
		st := &resp.Topics[i]
		st.Topic = t.Topic
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

// countFetched counts the record bytes of a fetch answer (total, or -1 to add them up)
// into BytesOut per topic, or ReplicationBytesOut for a follower: once per answer and
// per topic, never per record.
func (b *Broker) countFetched(r *kmsg.FetchRequest, resp *fetchAnswer, total int) {
	if total == 0 {
		return
	}
	if r.ReplicaID >= 0 {
		if total < 0 {
			total = 0
			i := 0
			for _, t := range resp.Topics {
				for pi := range t.Partitions {
					total += resp.recordBytes(i, &t.Partitions[pi])
					i++
				}
			}
		}
		b.metrics.ReplicationOut(int64(total))
		return
	}
	i := 0
	for _, t := range resp.Topics {
		n := 0
		for pi := range t.Partitions {
			n += resp.recordBytes(i, &t.Partitions[pi])
			i++
		}
		if n > 0 {
			b.metrics.Topic(t.Topic).Fetched(int64(n))
		}
	}
}

// readFetch reads every requested partition once. It returns the response, the record
// bytes it holds and whether any partition must be answered at once (an error, or a
// diverging epoch for a follower). The response holds its record sets in the segment
// files (fetch_encode.go) until the rpc writer has sent it, or it is Released. The
// partitions of topics denied reports (nil: none) get TOPIC_AUTHORIZATION_FAILED
// (fetchDenied).
func (b *Broker) readFetch(r *kmsg.FetchRequest, denied func(topic string) bool) (*fetchAnswer, int, bool) {
	resp := &fetchAnswer{FetchResponse: r.ResponseKind().(*kmsg.FetchResponse)}
	follower := r.ReplicaID >= 0
	total, errored := 0, false
	maxBytes := int(r.MaxBytes)
	if r.Version < 3 || maxBytes <= 0 {
		maxBytes = 1 << 30
	}
	for _, t := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = t.Topic
		deny := denied != nil && denied(t.Topic)
		for _, p := range t.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = p.Partition
			sp.RecordBatches = []byte{} // never null: librdkafka rejects a null record set
			if r.IsolationLevel == 1 {
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			if deny {
				sp.ErrorCode = codeTopicAuthz
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				resp.held = append(resp.held, nil)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			limit := int(p.PartitionMaxBytes)
			if total > 0 {
				limit = min(limit, maxBytes-total) // past the first batch, limits are hard
			}
			code, held := b.fetchPartition(&sp, t.Topic, p, limit, total == 0, follower, r, resp)
			resp.held = append(resp.held, held)
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

// fetchPartition fills one partition's answer and returns its error code and its
// record set, held in the segment file (nil when empty). It adds the partition's
// Changes() as of the read to a.changes, and marks a answered by a replication quota
// (a.throttled).
func (b *Broker) fetchPartition(sp *kmsg.FetchResponseTopicPartition, topic string, p kmsg.FetchRequestTopicPartition, limit int, first, follower bool, r *kmsg.FetchRequest, a *fetchAnswer) (int16, *segment.Hold) {
	lp := b.partitions.get(topic, p.Partition)
	if lp == nil {
		return b.noReplicaError(topic, p.Partition), nil
	}
	if limit <= 0 && !first {
		a.changes += lp.Changes() // before the read: a change meanwhile shows
		st := lp.State()
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = st.HighWatermark, st.LastStableOffset, st.LogStartOffset
		return 0, nil
	}
	var res replication.FetchResult
	var err error
	if follower {
		lastFetched, logStart := int32(-1), int64(-1)
		if r.Version >= 12 {
			lastFetched = p.LastFetchedEpoch
		}
		if r.Version >= 5 {
			logStart = p.LogStartOffset // the follower's own, for DeleteRecords' low watermark
		}
		var diverging *replication.DivergingEpoch
		now := time.Now()
		rate := b.leaderThrottle(b.Image(), topic, p.Partition, r.ReplicaID, lp.InSync(r.ReplicaID))
		throttled := rate >= 0 && b.throttles.Leader.Exceeded(rate, now)
		res, diverging, err = lp.ReadForFollowerHeld(replication.FollowerFetch{ReplicaID: r.ReplicaID, FetchOffset: p.FetchOffset,
			CurrentLeaderEpoch: p.CurrentLeaderEpoch, LastFetchedEpoch: lastFetched, MaxBytes: max(limit, 1), LogStartOffset: logStart}, now)
		if diverging != nil {
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = diverging.Epoch, diverging.EndOffset
		}
		switch {
		case throttled:
			res.Held.Release() // over the leader's replication quota (throttle.go)
			res.Held = nil
			a.throttled = true
		case rate >= 0:
			b.throttles.Leader.Record(rate, int(res.Held.Len()), now)
		}
	} else {
		if r.Version < 10 && lp.settings.Load().compression.Codec == compress.Zstd {
			// Kafka: a consumer too old for zstd (KIP-110) cannot read a zstd topic.
			return kerr.UnsupportedCompressionType.Code, nil
		}
		scope := replication.LeaderOnly
		if r.Version >= 11 {
			scope = replication.AnyReplica // KIP-392: a follower serves up to its own HW
		}
		res, err = lp.ReadIsolatedHeld(p.FetchOffset, max(limit, 1), p.CurrentLeaderEpoch, scope, r.IsolationLevel == 1)
	}
	if err != nil {
		res.Held.Release()
		return b.errorCodeLogged(err, "fetch"), nil
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
	if first || int(res.Held.Len()) <= limit {
		return 0, res.Held // only the first non-empty partition may exceed its limit
	}
	res.Held.Release()
	return 0, nil
}

// authorizeFetch is Fetch's rule: a follower's fetch (replica id >= 0) needs
// ClusterAction, a consumer's Read on each topic; denied partitions get
// TOPIC_AUTHORIZATION_FAILED, as in Kafka.
func authorizeFetch(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.FetchRequest)
	z := checksOf(b, req)
	if fetchInSession(r) {
		return authzDecision{} // the handler checks every partition it reads (fetchDenied)
	}
	replica := r.ReplicaID
	if r.Version >= 15 {
		replica = r.ReplicaState.ID
	}
	var denied []kmsg.FetchRequestTopic
	if replica >= 0 {
		if z.clusterOK(auth.OpClusterAction) {
			return authzDecision{}
		}
		denied, r.Topics = r.Topics, []kmsg.FetchRequestTopic{}
	} else {
		im := b.Image()
		r.Topics, denied = split(r.Topics, func(t kmsg.FetchRequestTopic) bool {
			name, ok := fetchTopicName(im, r.Version, t.Topic, t.TopicID)
			return !ok || z.topicOK(auth.OpRead, name) // an unknown id is the handler's answer
		})
	}
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := fetchResponseOf(resp)
		for _, t := range denied {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuthz
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset, rp.PreferredReadReplica = -1, -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	})
}

// fetchTopicName is a fetch topic's name: by id from v13.
func fetchTopicName(im *metadata.Image, version int16, name string, id [16]byte) (string, bool) {
	if version < 13 {
		return name, true
	}
	t := im.TopicByID(metadata.Uuid(id))
	if t == nil {
		return "", false
	}
	return t.Name, true
}

// fetchInSession reports whether r creates or uses a fetch session (KIP-227): v7+ with
// an epoch other than -1.
func fetchInSession(r *kmsg.FetchRequest) bool { return r.Version >= 7 && r.SessionEpoch >= 0 }

// fetchDenied is the Fetch handler's authorization of a fetch in a session, whose
// partitions are mostly not named in the request: it reports the topics whose
// partitions get TOPIC_AUTHORIZATION_FAILED at this fetch — every one for a follower
// without ClusterAction, those a consumer may not Read — as Kafka checks the session's
// partitions at every fetch. nil when nothing is denied or authorization is off. It
// is called from one goroutine at a time.
func (b *Broker) fetchDenied(req *rpc.Request, r *kmsg.FetchRequest) func(topic string) bool {
	if !b.authzEnabled() || !fetchInSession(r) {
		return nil
	}
	if r.ReplicaID >= 0 {
		if b.authorizedCluster(req, auth.OpClusterAction) {
			return nil
		}
		return func(string) bool { return true }
	}
	memo := map[string]bool{}
	return func(topic string) bool {
		d, ok := memo[topic]
		if !ok {
			d = !b.authorized(req, auth.OpRead, auth.ResourceTopic, topic)
			memo[topic] = d
		}
		return d
	}
}
