package broker

// The checks of the data-plane APIs whose requests name topics by id or list topics
// implicitly: Produce, Fetch, Metadata, OffsetFetch (authorize_apis.go).

import (
	"fmt"
	"slices"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type opCheck func(op auth.Operation, name string) bool

// checkProduce: Write on the transactional id of a transactional produce (else every
// partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), Write on each topic (else
// TOPIC_AUTHORIZATION_FAILED). An acks=0 produce with a denied topic closes the
// connection, Kafka's answer to any acks=0 failure.
func (b *Broker) checkProduce(req *rpc.Request, r *kmsg.ProduceRequest, topicOK opCheck, txnOK func(string) bool) authzDecision {
	code := codeTopicAuthz
	var denied []kmsg.ProduceRequestTopic
	if r.TransactionID != nil && !txnOK(*r.TransactionID) {
		code = codeTxnAuthz
		denied, r.Topics = r.Topics, []kmsg.ProduceRequestTopic{}
	} else {
		r.Topics, denied = split(r.Topics, func(t kmsg.ProduceRequestTopic) bool { return topicOK(auth.OpWrite, t.Topic) })
	}
	if len(denied) == 0 {
		return authzDecision{}
	}
	if r.Acks == 0 {
		return authzDecision{close: fmt.Errorf("%w: acks=0 produce to %s by %s", ErrTopicAuthorizationFailed, denied[0].Topic, req.Conn.Principal)}
	}
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.ProduceResponse)
		for _, t := range denied {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = p.Partition, code, -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	}}
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

// checkFetch: a follower's fetch (replica id >= 0) needs ClusterAction, a consumer's
// Read on each topic; denied partitions get TOPIC_AUTHORIZATION_FAILED, as in Kafka.
func (b *Broker) checkFetch(req *rpc.Request, r *kmsg.FetchRequest, topicOK opCheck, clusterOK func(auth.Operation) bool) authzDecision {
	if fetchInSession(r) {
		return authzDecision{} // the handler checks every partition it reads (fetchDenied)
	}
	replica := r.ReplicaID
	if r.Version >= 15 {
		replica = r.ReplicaState.ID
	}
	var denied []kmsg.FetchRequestTopic
	if replica >= 0 {
		if clusterOK(auth.OpClusterAction) {
			return authzDecision{}
		}
		denied, r.Topics = r.Topics, []kmsg.FetchRequestTopic{}
	} else {
		im := b.Image()
		r.Topics, denied = split(r.Topics, func(t kmsg.FetchRequestTopic) bool {
			name, ok := fetchTopicName(im, r.Version, t.Topic, t.TopicID)
			return !ok || topicOK(auth.OpRead, name) // an unknown id is the handler's answer
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

// checkMetadata: a request for all topics (null, or empty in v0) lists only those the
// principal may Describe; a named topic it may not Describe gets TOPIC_AUTHORIZATION_FAILED, and an
// unknown one it may not Create (on the cluster or the topic) is not auto-created:
// UNKNOWN_TOPIC_OR_PARTITION.
func (b *Broker) checkMetadata(r *kmsg.MetadataRequest, topicOK opCheck, clusterOK func(auth.Operation) bool) authzDecision {
	if r.Topics == nil || r.Version == 0 && len(r.Topics) == 0 { // v0 has no null: empty is all topics
		r.Topics = nil
		return authzDecision{merge: func(resp kmsg.Response) {
			out := resp.(*kmsg.MetadataResponse)
			out.Topics = slices.DeleteFunc(out.Topics, func(t kmsg.MetadataResponseTopic) bool {
				return t.Topic != nil && !topicOK(auth.OpDescribe, *t.Topic)
			})
		}}
	}
	im := b.Image()
	var deniedNames, unknownNames []string
	var deniedIDs [][16]byte
	canCreate := clusterOK(auth.OpCreate)
	autoCreate := r.Version < 4 || r.AllowAutoTopicCreation
	r.Topics, _ = split(r.Topics, func(t kmsg.MetadataRequestTopic) bool {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		} else if topic := im.TopicByID(metadata.Uuid(t.TopicID)); topic != nil {
			name = topic.Name
		} else {
			return true // unknown id: the handler's answer
		}
		switch {
		case !topicOK(auth.OpDescribe, name):
			if t.Topic == nil {
				deniedIDs = append(deniedIDs, t.TopicID)
			} else {
				deniedNames = append(deniedNames, name)
			}
			return false
		case autoCreate && im.Topic(name) == nil && !canCreate && !topicOK(auth.OpCreate, name):
			unknownNames = append(unknownNames, name)
			return false
		}
		return true
	})
	if len(deniedNames)+len(deniedIDs)+len(unknownNames) == 0 {
		return authzDecision{}
	}
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.MetadataResponse)
		out.Topics = slices.DeleteFunc(out.Topics, func(t kmsg.MetadataResponseTopic) bool {
			return t.Topic != nil && !topicOK(auth.OpDescribe, *t.Topic)
		})
		add := func(name *string, id [16]byte, code int16) {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic, t.TopicID, t.ErrorCode = name, id, code
			out.Topics = append(out.Topics, t)
		}
		for _, n := range deniedNames {
			add(kmsg.StringPtr(n), [16]byte{}, codeTopicAuthz)
		}
		for _, id := range deniedIDs {
			add(nil, id, codeTopicAuthz)
		}
		for _, n := range unknownNames {
			add(kmsg.StringPtr(n), [16]byte{}, errorCode(metadata.ErrUnknownTopic))
		}
	}}
}

// checkOffsetFetch: Describe on the group (GROUP_AUTHORIZATION_FAILED), and only the
// topics the principal may Describe are answered (named ones it may not get
// TOPIC_AUTHORIZATION_FAILED).
func (b *Broker) checkOffsetFetch(req *rpc.Request, r *kmsg.OffsetFetchRequest, topicOK opCheck, groupOK opCheck) authzDecision {
	if r.Version >= 8 {
		var denied []kmsg.OffsetFetchRequestGroup
		r.Groups, denied = split(r.Groups, func(g kmsg.OffsetFetchRequestGroup) bool { return groupOK(auth.OpDescribe, g.Group) })
		return authzDecision{merge: func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetFetchResponse)
			for i := range out.Groups {
				out.Groups[i].Topics = slices.DeleteFunc(out.Groups[i].Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return !topicOK(auth.OpDescribe, t.Topic) })
			}
			for _, g := range denied {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, codeGroupAuthz
				out.Groups = append(out.Groups, rg)
			}
		}}
	}
	if !groupOK(auth.OpDescribe, r.Group) {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.SetVersion(r.Version)
		resp.ErrorCode = codeGroupAuthz
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, codeGroupAuthz
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return authzDecision{answer: resp}
	}
	all := r.Topics == nil
	var denied []kmsg.OffsetFetchRequestTopic
	if !all {
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return topicOK(auth.OpDescribe, t.Topic) })
	}
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.OffsetFetchResponse)
		out.Topics = slices.DeleteFunc(out.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return !topicOK(auth.OpDescribe, t.Topic) })
		for _, t := range denied {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, codeTopicAuthz
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	}}
}
