package broker

// CreateTopics (key 19), v2-7. -1 partitions or replication factor (v4+) mean the broker
// defaults; explicit assignments override placement; validate_only checks without
// creating. A request naming more than 10,000 topics or creating more than 10,000
// partitions in all, or a topic needing more than 10,000 metadata records, is refused
// with POLICY_VIOLATION before anything is planned (controller/limits.go). Each topic is
// validated on its own (a bad one does not stop the others); the controller decides
// (controller/topics.go). v5+ echoes the effective partitions, replication factor and
// configs; v7 returns the topic id. The answer waits until the topic is committed to the
// metadata log and every live broker has applied it (admin_visibility.go); a request of
// at most createWaitMaxPartitions partitions also waits, briefly, for the controller's
// replicas to open.

import (
	"context"
	"errors"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.CreateTopics, 2, 7, (*Broker).handleCreateTopics, apiOpts{
		authorize:  authorizeCreateTopics,
		controller: onController((*Broker).createTopics),
		fillError:  fillErrorCreateTopics,
		isNotController: func(resp kmsg.Response) bool {
			return allNotController(resp.(*kmsg.CreateTopicsResponse).Topics, func(t kmsg.CreateTopicsResponseTopic) int16 { return t.ErrorCode })
		},
		adminChange: true,
		ownTimeout:  true,
	})
}

func (b *Broker) handleCreateTopics(ctx context.Context, req *rpc.Request) rpc.Result {
	if fromBroker(req) && (b.clusterPrincipal(req) || !b.authzEnabled()) {
		// A broker's own request may create internal topics (a user's request that
		// another broker forwards had its internal topics removed there). With the
		// authorizer on, only a principal holding ClusterAction is a broker; without
		// it, any client may claim a broker's client id, but the controller creates an
		// internal topic only with its own partitions, replication factor and configs
		// (canonicalInternalTopic), so the claim can only create it early.
		return b.respondFromController(allowInternalCreate(ctx), req)
	}
	r := req.Body.(*kmsg.CreateTopicsRequest)
	var refused []kmsg.CreateTopicsResponseTopic
	kept := r.Topics[:0:0]
	for _, t := range r.Topics {
		if isInternalTopic(t.Topic) {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.InvalidRequest.Code
			rt.ErrorMessage = errorMessage(controller.InternalTopicError("create", t.Topic))
			refused = append(refused, rt)
			continue
		}
		kept = append(kept, t)
	}
	if len(refused) == 0 {
		return b.respondFromController(ctx, req)
	}
	if len(kept) == 0 {
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		resp.Topics = refused
		return rpc.Respond(resp)
	}
	rest := *r
	rest.Topics = kept
	ch := make(chan kmsg.Response, 1)
	b.goLoop("controller request", func() {
		resp, err := b.forwardToController(ctx, &rest)
		if err != nil {
			resp = notControllerResponse(&rest, err)
		}
		cr := resp.(*kmsg.CreateTopicsResponse)
		cr.Topics = append(cr.Topics, refused...)
		ch <- cr
	})
	return rpc.RespondLater(ch)
}

// createTopics runs on the controller: it decodes the topics, asks the controller
// (controller/topics.go) and encodes each topic's outcome.
func (b *Broker) createTopics(ctx context.Context, r *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	specs := make([]controller.TopicSpec, len(r.Topics))
	for i, t := range r.Topics {
		spec := controller.TopicSpec{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor, Configs: map[string]string{},
			Internal: internalCreateAllowed(ctx) && isInternalTopic(t.Topic)}
		for _, a := range t.ReplicaAssignment {
			for int(a.Partition) >= len(spec.Assignment) && a.Partition < 1<<20 {
				spec.Assignment = append(spec.Assignment, nil)
			}
			if a.Partition >= 0 && a.Partition < 1<<20 {
				spec.Assignment[a.Partition] = a.Replicas
			}
		}
		for _, c := range t.Configs {
			if c.Value != nil {
				spec.Configs[c.Name] = *c.Value
			}
		}
		if spec.Internal {
			b.canonicalInternalTopic(&spec) // Kafka's layout, whoever asked
		}
		specs[i] = spec
	}
	cctx, cancel := b.waitTimeout(ctx, timeout)
	defer cancel()
	results, committed, err := b.ctrl.CreateTopics(cctx, specs, r.ValidateOnly)
	if err != nil {
		// Refused whole before anything is planned, as Kafka refuses it.
		fillErrorCreateTopics(r, resp, kerr.PolicyViolation.Code, err)
		return resp
	}
	if committed > 0 && createdPartitions(results) <= createWaitMaxPartitions {
		// Give this broker's replicas a moment to open, so that a client that
		// produces right away finds a leader; committed is success either way.
		wctx, wcancel := context.WithTimeout(cctx, 2*time.Second)
		b.partitions.waitReconciled(wctx, committed)
		wcancel()
	}
	for i, res := range results {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = r.Topics[i].Topic
		if err := res.Err; err != nil {
			rt.ErrorCode = b.errorCodeLogged(err, "create topics")
			rt.ErrorMessage = errorMessage(err)
			if errors.Is(err, metadata.ErrInvalidConfig) {
				rt.ConfigErrorCode = rt.ErrorCode
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID, rt.NumPartitions, rt.ReplicationFactor = res.Topic.ID, res.Topic.Partitions, res.Topic.ReplicationFactor
		if r.Version >= 5 {
			for name, rc := range config.ResolveTopicConfigs(specs[i].Configs, config.DynamicBrokerConfigsFor(b.Image(), b.cfg.NodeID), b.cfg.Properties) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				value := rc.Value
				c.Name, c.Value, c.Source = name, &value, rc.Source
				rt.Configs = append(rt.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createWaitMaxPartitions is the most partitions one CreateTopics may create and still
// wait (up to 2 s) for the controller's replicas to open before it answers. Kafka does
// not wait at all, and neither does a bulk creation: opening a few hundred replicas
// takes longer than the rest of the request (each is a directory and its files), so
// at 1,000 partitions to a request the wait was most of each request's time, and a
// bulk creation in requests of 1,000 took twice as long as the same partitions in
// requests of 5,000. A small topic, the one a client produces to right away, still
// finds its leaders open.
const createWaitMaxPartitions = 100

// createdPartitions counts the partitions of the topics created.
func createdPartitions(results []controller.TopicResult) int {
	n := 0
	for _, r := range results {
		if r.Topic != nil && r.Err == nil {
			n += int(r.Topic.Partitions)
		}
	}
	return n
}

// authorizeCreateTopics is CreateTopics's authorization rule (checkRequest).
func authorizeCreateTopics(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	z := checksOf(b, req)
	if z.clusterOK(auth.OpCreate) {
		return authzDecision{}
	}
	var denied []kmsg.CreateTopicsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return z.topicOK(auth.OpCreate, t.Topic) })
	return mergeErrors(len(denied) > 0, &kmsg.CreateTopicsRequest{Topics: denied}, codeTopicAuthz, ErrTopicAuthorizationFailed)
}

// fillErrorCreateTopics is CreateTopics's apiOpts.fillError.
func fillErrorCreateTopics(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.CreateTopicsResponse)
	for _, t := range req.(*kmsg.CreateTopicsRequest).Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, errorMessage(cause)
		r.Topics = append(r.Topics, rt)
	}
}
