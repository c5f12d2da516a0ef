package broker

// CreateTopics (key 19), v2-7. -1 partitions or replication factor (v4+) mean the broker
// defaults; explicit assignments override placement; validate_only checks without
// creating. A request naming more than 10,000 topics or creating more than 10,000
// partitions in all, or a topic needing more than 10,000 metadata records, is refused
// with POLICY_VIOLATION before anything is planned (limits.go). Each topic is validated
// and committed on its own (a bad one does not stop the others). v5+ echoes the effective partitions, replication factor and configs; v7
// returns the topic id. The answer waits until the topic is committed to the metadata
// log and this broker's replicas are open.

import (
	"context"
	"errors"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
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
			rt.ErrorMessage = errorMessage(internalTopicError("create", t.Topic))
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

// checkCreateTopicsBounds applies limits.go's bounds to a whole request: the topics it
// names and the partitions it would create (an explicit assignment counts its entries,
// -1 counts num.partitions).
func (b *Broker) checkCreateTopicsBounds(r *kmsg.CreateTopicsRequest) error {
	if len(r.Topics) > maxResourcesPerRequest {
		return tooManyResources(len(r.Topics))
	}
	var total int64
	for _, t := range r.Topics {
		switch {
		case len(t.ReplicaAssignment) > 0:
			total += int64(len(t.ReplicaAssignment))
		case t.NumPartitions == -1:
			total += b.cfg.int64Value("num.partitions")
		case t.NumPartitions > 0:
			total += int64(t.NumPartitions)
		}
	}
	if total > maxPartitionsPerRequest {
		return tooManyPartitions(total)
	}
	return nil
}

// createTopics runs on the controller.
func (b *Broker) createTopics(ctx context.Context, r *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	if err := b.checkCreateTopicsBounds(r); err != nil {
		// Refused whole before anything is planned, as Kafka refuses it.
		fillErrorCreateTopics(r, resp, kerr.PolicyViolation.Code, err)
		return resp
	}
	seen := map[string]int{}
	for _, t := range r.Topics {
		seen[t.Topic]++
	}
	topics := make([]kmsg.CreateTopicsResponseTopic, len(r.Topics))
	specs := make([]topicSpec, 0, len(r.Topics))
	index := make([]int, 0, len(r.Topics)) // r.Topics index of each spec
	for i, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		topics[i] = rt
		if seen[t.Topic] > 1 {
			topics[i].ErrorCode = kerr.InvalidRequest.Code
			topics[i].ErrorMessage = errorMessage(errors.New("the topic is listed more than once"))
			continue
		}
		spec := topicSpec{name: t.Topic, partitions: t.NumPartitions, replicationFactor: t.ReplicationFactor, configs: map[string]string{},
			internal: internalCreateAllowed(ctx) && isInternalTopic(t.Topic)}
		for _, a := range t.ReplicaAssignment {
			for int(a.Partition) >= len(spec.assignment) && a.Partition < 1<<20 {
				spec.assignment = append(spec.assignment, nil)
			}
			if a.Partition >= 0 && a.Partition < 1<<20 {
				spec.assignment[a.Partition] = a.Replicas
			}
		}
		for _, c := range t.Configs {
			if c.Value != nil {
				spec.configs[c.Name] = *c.Value
			}
		}
		if spec.internal {
			b.canonicalInternalTopic(&spec) // Kafka's layout, whoever asked
		}
		specs = append(specs, spec)
		index = append(index, i)
	}
	plans := make([]*plannedTopic, len(specs))
	errs := make([]error, len(specs))
	if r.ValidateOnly {
		for j, spec := range specs {
			plans[j], errs[j] = b.planTopic(b.Image(), spec)
		}
	} else if len(specs) > 0 {
		cctx, cancel := b.waitTimeout(ctx, timeout)
		var committed uint64
		plans, errs, committed = b.createTopicsBatched(cctx, specs)
		if committed > 0 && createdPartitions(plans, errs) <= createWaitMaxPartitions {
			// Give this broker's replicas a moment to open, so that a client that
			// produces right away finds a leader; committed is success either way.
			wctx, wcancel := context.WithTimeout(cctx, 2*time.Second)
			b.partitions.waitReconciled(wctx, committed)
			wcancel()
		}
		cancel()
	}
	for j, spec := range specs {
		rt := &topics[index[j]]
		plan, err := plans[j], errs[j]
		if err != nil {
			rt.ErrorCode = b.errorCodeLogged(err, "create topics")
			rt.ErrorMessage = errorMessage(err)
			if errors.Is(err, metadata.ErrInvalidConfig) {
				rt.ConfigErrorCode = rt.ErrorCode
			}
			continue
		}
		rt.TopicID, rt.NumPartitions, rt.ReplicationFactor = plan.id, plan.partitions, plan.replicationFactor
		if r.Version >= 5 {
			for name, rc := range config.ResolveTopicConfigs(spec.configs, config.DynamicBrokerConfigsFor(b.Image(), b.cfg.NodeID), b.cfg.Properties) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				value := rc.Value
				c.Name, c.Value, c.Source = name, &value, rc.Source
				rt.Configs = append(rt.Configs, c)
			}
		}
	}
	resp.Topics = topics
	return resp
}

// createWaitMaxPartitions is the most partitions one CreateTopics may create and still
// wait (up to 2 s) for this broker's replicas before it answers. Kafka does not wait at
// all; a bulk creation does not either: its replicas take longer than the wait to open,
// so waiting would only add 2 s to every request of a big creation.
const createWaitMaxPartitions = 1000

// createdPartitions counts the partitions of the topics planned without error.
func createdPartitions(plans []*plannedTopic, errs []error) int {
	n := 0
	for j, p := range plans {
		if p != nil && errs[j] == nil {
			n += int(p.partitions)
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
