package broker

// Fetch (key 1), v4-17: names up to v12, topic ids from v13 (UNKNOWN_TOPIC_ID,
// INCONSISTENT_TOPIC_ID: replication/fetch_topic_ids.go), the follower's id in
// ReplicaState from v15, KIP-951's CurrentLeader and NodeEndpoints on
// NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH from v16 (leader_hints.go), v17's
// ReplicaDirectoryId read and not used (one log directory per replica). This file
// declares the authorization (a follower's fetch needs ClusterAction, a consumer's Read
// on each topic, checked again at every fetch of a session: fetchDenied) and counts the
// bytes answered; replication.FetchServer answers it (fetch_serve.go: sessions, reads
// up to the HW or LSO, min_bytes and parking in the purgatory; fetch_read.go; the
// answer's held record sets in fetch_answer.go and fetch_encode.go). KIP-392: with
// replica.selector.class set, a leader answers a consumer's fetch that names its rack
// with preferred_read_replica, an in-sync replica in that rack (read_replica.go);
// otherwise -1, and consumers stay on the leader.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/compress"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.Fetch, 4, 17, (*Broker).handleFetch, apiOpts{
		authorize:       authorizeFetch,
		partitionScoped: true,
	})
}

func (b *Broker) handleFetch(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.FetchRequest)
	if r.Version >= 15 {
		r.ReplicaID = r.ReplicaState.ID // KIP-903: the follower's id moved to a tag
	}
	var hints func(*kmsg.FetchResponse)
	if r.Version >= 16 {
		hints = func(resp *kmsg.FetchResponse) { b.newLeaderHints(req.Conn.ListenerName).fetch(resp) }
	}
	return b.fetches.Serve(ctx, req, b.fetchDenied(req, r), hints)
}

// fetchSource is what replication.FetchServer asks of the broker.
type fetchSource struct{ b *Broker }

func (s fetchSource) Replica(topic string, partition int32) (*replication.Partition, bool, int16) {
	lp := s.b.partitions.get(topic, partition)
	if lp == nil {
		return nil, false, s.b.noReplicaError(topic, partition)
	}
	set := lp.settings.Load() // stored before the replica is listed
	return lp.Partition, set != nil && set.compression.Codec == compress.Zstd, 0
}

func (s fetchSource) TopicName(id [16]byte, known string, partition int32) (string, int16) {
	im := s.b.Image()
	t := im.TopicByID(metadata.Uuid(id))
	if t == nil {
		if known != "" && im.Topic(known) != nil {
			return "", kerr.InconsistentTopicID.Code // the session's topic was re-created
		}
		return "", kerr.UnknownTopicID.Code
	}
	if lp := s.b.partitions.get(t.Name, partition); lp != nil && lp.topicID != t.ID {
		return "", kerr.InconsistentTopicID.Code // the replica is of the topic's previous incarnation
	}
	return t.Name, 0
}

func (s fetchSource) ErrorCode(err error) int16 { return s.b.errorCodeLogged(err, "fetch") }

func (s fetchSource) LeaderThrottle(topic string, partition, replica int32, inSync bool) int64 {
	return s.b.leaderThrottle(s.b.Image(), topic, partition, replica, inSync)
}

func (s fetchSource) Fetched(r *kmsg.FetchRequest, a *replication.FetchAnswer, total int) {
	s.b.countFetched(r, a, total)
}

// countFetched counts the record bytes of a fetch answer (total, or -1 to add them up)
// into BytesOut per topic, or ReplicationBytesOut for a follower: once per answer and
// per topic, never per record.
func (b *Broker) countFetched(r *kmsg.FetchRequest, resp *replication.FetchAnswer, total int) {
	if total == 0 {
		return
	}
	if r.ReplicaID >= 0 {
		if total < 0 {
			total = 0
			i := 0
			for _, t := range resp.Topics {
				for pi := range t.Partitions {
					total += resp.RecordBytes(i, &t.Partitions[pi])
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
			n += resp.RecordBytes(i, &t.Partitions[pi])
			i++
		}
		if n > 0 {
			b.metrics.Topic(t.Topic).Fetched(int64(n))
		}
	}
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
		out := replication.FetchResponseOf(resp)
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
