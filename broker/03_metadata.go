package broker

// Metadata (key 3), v0-13. A null topic list (v1+) means all topics, an empty one none;
// in v0 an empty list means all. Only unfenced brokers are listed. The controller id is
// the Raft leader, or this broker while the leader is unknown or silent
// (metadataControllerID: every broker forwards controller requests). Topic ids (v10+) are real UUIDs; v12 looks topics up by id. Unknown
// topics are auto-created when the request allows it (always in v0-3) and
// auto.create.topics.enable is true, with num.partitions and default.replication.factor;
// as in Kafka, the request that created a topic gets it LEADER_NOT_AVAILABLE without
// partitions, and the next one finds it ready. Before answering, the other brokers the
// answer names as leaders are probed, and an answer naming one that refuses waits for
// its fence (controller/leader_probes.go, refused_leader_hold.go). v13's top-level
// ErrorCode (KIP-1102) is 0: REBOOTSTRAP_REQUIRED tells a client to resolve its
// bootstrap servers again, and Kafka 4.2's brokers never send it; neither does Petrel,
// whose every broker answers for the whole cluster.

import (
	"context"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.Metadata, 0, 13, (*Broker).handleMetadata, apiOpts{
		authorize: authorizeMetadata,
	})
}

func (b *Broker) handleMetadata(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.MetadataRequest)
	b.checkMetadataLeaders(ctx, r) // no dead leader in the answer (metadata_leader_probes.go)
	allowCreate := (r.Version < 4 || r.AllowAutoTopicCreation) && b.cfg.boolValue("auto.create.topics.enable")
	im := b.Image()
	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)

	type wanted struct {
		name string
		id   [16]byte
	}
	var topics []wanted
	var created map[string]bool
	if all {
		for _, name := range im.TopicNames() {
			topics = append(topics, wanted{name: name})
		}
	} else {
		var missing []string
		for _, t := range r.Topics {
			w := wanted{id: t.TopicID}
			if t.Topic != nil {
				w.name = *t.Topic
			}
			topics = append(topics, w)
			if t.Topic != nil && im.Topic(*t.Topic) == nil && allowCreate && metadata.ValidateTopicName(*t.Topic) == nil && !isInternalTopic(*t.Topic) {
				missing = append(missing, *t.Topic)
			}
		}
		if len(missing) > 0 {
			im, created = b.autoCreateTopics(ctx, missing)
		}
	}

	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	clusterID := im.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = b.metadataControllerID()
	for _, id := range im.UnfencedBrokerIDs() {
		br := im.Brokers[id]
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID = id
		if e, ok := endpointFor(br, req.Conn.ListenerName); ok {
			mb.Host, mb.Port = e.Host, e.Port
		}
		if br.Rack != "" {
			rack := br.Rack
			mb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, mb)
	}
	for _, w := range topics {
		if created[w.name] {
			// Kafka's answer to the request whose auto-creation made the topic: the
			// topic is there, but its partitions are for the next request.
			mt := kmsg.NewMetadataResponseTopic()
			name := w.name
			mt.Topic, mt.ErrorCode = &name, kerr.LeaderNotAvailable.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		mt := b.metadataTopic(im, w.name, w.id, allowCreate)
		if r.Version >= 8 && r.IncludeTopicAuthorizedOperations && mt.ErrorCode == 0 && mt.Topic != nil {
			mt.AuthorizedOperations = b.checks(req).AuthorizedOperations(auth.ResourceTopic, *mt.Topic)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	if r.Version >= 8 && r.Version <= 10 && r.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.checks(req).AuthorizedOperations(auth.ResourceCluster, auth.ClusterName)
	}
	return rpc.Respond(resp)
}

// autoCreateTopics creates topics with the broker defaults through the controller and
// waits (briefly) until this broker's image has them and its replicas are open, so
// that the client's next Metadata finds their leaders ready. It returns the image to
// answer from and the topics this call created: Kafka answers those
// LEADER_NOT_AVAILABLE without partitions, and clients written against Kafka rely on it
// (after a delete, for one).
func (b *Broker) autoCreateTopics(ctx context.Context, names []string) (*metadata.Image, map[string]bool) {
	cctx, cancel := b.waitTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
		req.Topics = append(req.Topics, t)
	}
	resp, err := b.controllerCall(cctx, req)
	if err != nil {
		b.logger.Warn("auto-creating topics", "topics", names, "error", err)
		return b.Image(), nil
	}
	created := map[string]bool{}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		switch t.ErrorCode {
		case 0:
			created[t.Topic] = true
		case kerr.TopicAlreadyExists.Code:
		default:
			b.logger.Warn("auto-creating topic", "topic", t.Topic, "error", kerr.ErrorForCode(t.ErrorCode))
		}
	}
	// Wait for the creation to reach this broker's image and replicas.
	for {
		changed := b.machine.Changed()
		im := b.Image()
		if !slices.ContainsFunc(names, func(n string) bool { return im.Topic(n) == nil }) {
			b.partitions.waitReconciled(cctx, im.Offset)
			return im, created
		}
		select {
		case <-changed:
		case <-cctx.Done():
			return b.Image(), created
		}
	}
}

func (b *Broker) metadataTopic(im *metadata.Image, name string, id [16]byte, allowCreate bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	var t *metadata.Topic
	if name == "" && id != metadata.ZeroUuid {
		if t = im.TopicByID(id); t == nil {
			mt.ErrorCode, mt.TopicID = kerr.UnknownTopicID.Code, id
			return mt
		}
	} else {
		nameCopy := name
		mt.Topic = &nameCopy
		if err := metadata.ValidateTopicName(name); err != nil {
			mt.ErrorCode = kerr.InvalidTopicException.Code
			return mt
		}
		if t = im.Topic(name); t == nil {
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if allowCreate && !isInternalTopic(name) {
				mt.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			return mt
		}
	}
	topicName := t.Name
	mt.Topic, mt.TopicID = &topicName, t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = p.ID, p.Leader, p.LeaderEpoch
		mp.Replicas, mp.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
		mp.OfflineReplicas = unavailableReplicas(im, p.Replicas)
		if p.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// authorizeMetadata is Metadata's rule: a request for all topics (null, or empty in v0)
// lists only those the principal may Describe; a named topic it may not Describe gets
// TOPIC_AUTHORIZATION_FAILED, and an unknown one it may not Create (on the cluster or
// the topic) is not auto-created: UNKNOWN_TOPIC_OR_PARTITION (auth.Checks.MetadataTopic).
func authorizeMetadata(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.MetadataRequest)
	z := checksOf(b, req)
	if r.Topics == nil || r.Version == 0 && len(r.Topics) == 0 { // v0 has no null: empty is all topics
		r.Topics = nil
		return authzDecision{merge: func(resp kmsg.Response) {
			out := resp.(*kmsg.MetadataResponse)
			out.Topics = slices.DeleteFunc(out.Topics, func(t kmsg.MetadataResponseTopic) bool {
				return t.Topic != nil && !z.topicOK(auth.OpDescribe, *t.Topic)
			})
		}}
	}
	im := b.Image()
	var deniedNames, unknownNames []string
	var deniedIDs [][16]byte
	checks := b.checks(req)
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
		switch checks.MetadataTopic(name, im.Topic(name) != nil, autoCreate) {
		case auth.TopicAuthorizationFailed:
			if t.Topic == nil {
				deniedIDs = append(deniedIDs, t.TopicID)
			} else {
				deniedNames = append(deniedNames, name)
			}
			return false
		case auth.TopicUnknown:
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
			return t.Topic != nil && !z.topicOK(auth.OpDescribe, *t.Topic)
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
