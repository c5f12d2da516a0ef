package broker

// FindCoordinator (key 10), v0-6; v4+ batches keys (KIP-699). Key type 0 (group) is
// answered with the leader of the group's __consumer_offsets partition,
// abs(javaStringHashCode(group)) % partitions. The topic is created on first need;
// while it cannot be (fewer unfenced brokers than offsets.topic.replication.factor) or
// the partition has no leader, the answer is COORDINATOR_NOT_AVAILABLE, as in Kafka.
// Key type 1 (transaction) is answered the same way with the leader of the id's
// __transaction_state partition (created on first need by the same rule). Key type 2
// (share, v6, KIP-932) names a share partition "groupId:topicId:partition" and is
// answered with the leader of its __share_group_state partition (created on first
// need); brokers send it, so it needs CLUSTER_ACTION on the cluster, as Kafka; a key
// not of that form, or key type 2 before v6, is INVALID_REQUEST. Any other key type
// is INVALID_REQUEST.

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.FindCoordinator, 0, 6, (*Broker).handleFindCoordinator, apiOpts{
		authorize: authorizeFindCoordinator,
	})
}

func (b *Broker) handleFindCoordinator(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	answer := func(im *metadata.Image) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for _, key := range keys {
			keyType := r.CoordinatorType
			if keyType == 2 && r.Version < 6 {
				keyType = -1 // unknown before v6: INVALID_REQUEST
			}
			resp.Coordinators = append(resp.Coordinators, b.findCoordinator(im, keyType, key, req.Conn.ListenerName))
		}
		if r.Version < 4 {
			c := resp.Coordinators[0]
			resp.Coordinators = nil
			resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
		}
		return resp
	}
	im := b.Image()
	ensure := b.ensureOffsetsTopic
	topic := offsetsTopic
	switch r.CoordinatorType {
	case 0:
	case 1:
		ensure, topic = b.ensureTransactionStateTopic, transactionStateTopic
	case 2:
		if r.Version < 6 {
			return rpc.Respond(answer(im))
		}
		ensure, topic = b.ensureShareStateTopic, shareStateTopic
	default:
		return rpc.Respond(answer(im))
	}
	if im.Topic(topic) != nil {
		return rpc.Respond(answer(im))
	}
	ch := make(chan kmsg.Response, 1)
	b.goLoop("find coordinator", func() { ch <- answer(ensure(ctx)) })
	return rpc.RespondLater(ch)
}

func (b *Broker) findCoordinator(im *metadata.Image, keyType int8, key, listener string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(code int16, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = code, kmsg.StringPtr(msg)
		return c
	}
	topic, partitionFor, what := offsetsTopic, group.PartitionFor, "group"
	switch keyType {
	case 0:
	case 1:
		topic, partitionFor, what = transactionStateTopic, txn.PartitionFor, "transactional id"
		if key == "" {
			return fail(kerr.InvalidRequest.Code, "empty transactional id")
		}
	case 2:
		topic, partitionFor, what = shareStateTopic, coordinator.ShareStatePartitionFor, "share partition"
		if !validShareCoordinatorKey(key) {
			return fail(kerr.InvalidRequest.Code, "invalid share coordinator key "+key+": want groupId:topicId:partition")
		}
	default:
		return fail(kerr.InvalidRequest.Code, "unknown coordinator key type")
	}
	t := im.Topic(topic)
	if t == nil || len(t.Partitions) == 0 {
		return fail(kerr.CoordinatorNotAvailable.Code, "the "+topic+" topic does not exist yet")
	}
	p := t.Partitions[partitionFor(key, int32(len(t.Partitions)))]
	br := im.Brokers[p.Leader]
	if p.Leader < 0 || br == nil || br.Fenced || len(br.Listeners) == 0 {
		return fail(kerr.CoordinatorNotAvailable.Code, "the "+what+"'s "+topic+" partition has no leader")
	}
	e, _ := endpointFor(br, listener)
	c.NodeID, c.Host, c.Port = p.Leader, e.Host, e.Port
	return c
}

// authorizeFindCoordinator is FindCoordinator's authorization rule (checkRequest).
func authorizeFindCoordinator(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	z := checksOf(b, req)
	ok := func(key string) bool {
		if r.CoordinatorType == 2 {
			return z.clusterOK(auth.OpClusterAction)
		}
		if r.CoordinatorType == 1 {
			return b.authorized(req, auth.OpDescribe, auth.ResourceTransactionalID, key)
		}
		return z.groupOK(auth.OpDescribe, key)
	}
	code := codeGroupAuthz
	switch r.CoordinatorType {
	case 1:
		code = codeTxnAuthz
	case 2:
		code = codeClusterAuthz
	}
	if r.Version < 4 {
		if ok(r.CoordinatorKey) {
			return authzDecision{}
		}
		return z.whole(func(resp kmsg.Response) {
			out := resp.(*kmsg.FindCoordinatorResponse)
			out.ErrorCode, out.NodeID, out.Port = code, -1, -1
		})
	}
	var denied []string
	r.CoordinatorKeys, denied = split(r.CoordinatorKeys, ok)
	add := func(resp kmsg.Response) {
		out := resp.(*kmsg.FindCoordinatorResponse)
		for _, k := range denied {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port, c.ErrorCode = k, -1, -1, code
			out.Coordinators = append(out.Coordinators, c)
		}
	}
	if len(r.CoordinatorKeys) == 0 && len(denied) > 0 {
		return z.whole(add) // every key denied: nothing is looked up, nothing created
	}
	return mergeIf(len(denied) > 0, add)
}

// validShareCoordinatorKey reports whether key is a share partition's coordinator key,
// "groupId:topicId:partition" (Kafka's SharePartitionKey.getInstance): a non-empty
// group id, a topic id as Kafka prints a Uuid, a partition of at least 0.
func validShareCoordinatorKey(key string) bool {
	i := strings.LastIndexByte(key, ':')
	if i < 0 {
		return false
	}
	j := strings.LastIndexByte(key[:i], ':')
	if j <= 0 {
		return false
	}
	partition, err := strconv.ParseInt(key[i+1:], 10, 32)
	if err != nil || partition < 0 {
		return false
	}
	id, err := base64.RawURLEncoding.DecodeString(key[j+1 : i])
	return err == nil && len(id) == 16
}
