package broker

// ShareFetch (key 78), v1-2 (KIP-932; v0 was Kafka 4.0's early access and is not
// advertised): a share group member's fetch, which acquires records under a lock
// instead of reading from an offset of its own. v2 adds ShareAcquireMode
// (record_limit, KIP-1206) and IsRenewAck (RENEW acknowledgements, KIP-1222). The
// share session, the piggybacked acknowledgements (written to the share coordinator
// before the answer), the acquisition and the long poll are shareleader.Manager's;
// this file authorizes (READ on the group, then READ on each topic the session
// fetches, TOPIC_AUTHORIZATION_FAILED per topic, as Kafka 4.2's KafkaApis), ties the
// session to the connection (closing it releases the member's records) and fills the
// leader hints of partitions led elsewhere. A fetch that acquires nothing waits up to
// MaxWaitMillis for records (answered later, on its own goroutine, so the connection's
// next requests are read meanwhile) and is answered as soon as any record is
// acquired: MinBytes is not waited for.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/shareleader"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ShareFetch, 1, 2, (*Broker).handleShareFetch, apiOpts{
		authorize: authorizeShareRequest(func(r kmsg.Request) *string { return r.(*kmsg.ShareFetchRequest).GroupID },
			func(resp kmsg.Response) { resp.(*kmsg.ShareFetchResponse).ErrorCode = codeGroupAuthz }),
	})
}

func (b *Broker) handleShareFetch(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ShareFetchRequest)
	f := b.shares.ShareFetch(ctx, r, b.shareRequestOptions(ctx, req))
	if f.Wait <= 0 {
		return rpc.Respond(b.withShareFetchHints(req, f.Response()))
	}
	ch := make(chan kmsg.Response, 1)
	go func() { ch <- b.withShareFetchHints(req, f.Await(ctx)) }()
	return rpc.RespondLater(ch)
}

// shareRequestOptions are the connection and the topic authorization of a share
// request: with authorization on, the topics the principal may not READ are denied
// (an unknown topic id is the manager's answer, UNKNOWN_TOPIC_ID).
func (b *Broker) shareRequestOptions(ctx context.Context, req *rpc.Request) shareleader.RequestOptions {
	o := shareleader.RequestOptions{ConnCtx: ctx}
	if b.authzEnabled() {
		z := b.checks(req)
		o.Denied = func(id [16]byte) bool {
			t := b.Image().TopicByID(metadata.Uuid(id))
			return t != nil && !z.Topic(auth.OpRead, t.Name)
		}
	}
	return o
}

// authorizeShareRequest is ShareFetch's and ShareAcknowledge's rule: READ on the
// group, else GROUP_AUTHORIZATION_FAILED for the whole request; the topics are checked
// by the handler (shareRequestOptions), since a session's partitions are mostly not
// named in the request.
func authorizeShareRequest(group func(kmsg.Request) *string, deny func(kmsg.Response)) authzRule {
	return func(b *Broker, req *rpc.Request) authzDecision {
		z := checksOf(b, req)
		g := ""
		if p := group(req.Body); p != nil {
			g = *p
		}
		if z.groupOK(auth.OpRead, g) {
			return authzDecision{}
		}
		return z.whole(deny)
	}
}

// withShareFetchHints fills CurrentLeader for the partitions answered
// NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH) and the leaders' NodeEndpoints, as
// Kafka does so that the client moves to the new leader without a metadata refresh.
func (b *Broker) withShareFetchHints(req *rpc.Request, resp *kmsg.ShareFetchResponse) *kmsg.ShareFetchResponse {
	h := b.shareHints(req)
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if movedLeader(p.ErrorCode) || movedLeader(p.AcknowledgeErrorCode) {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = h.hint(t.TopicID, p.Partition)
			}
		}
	}
	h.each(func(id int32, host string, port int32, rack *string) {
		e := kmsg.NewShareFetchResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port, e.Rack = id, host, port, rack
		resp.NodeEndpoints = append(resp.NodeEndpoints, e)
	})
	return resp
}

func (b *Broker) shareHints(req *rpc.Request) *shareLeaderHints {
	listener := ""
	if req.Conn != nil {
		listener = req.Conn.ListenerName
	}
	return &shareLeaderHints{im: b.Image(), listener: listener, endpoints: map[int32]bool{}}
}

// movedLeader reports a code that sends the client to the partition's new leader.
func movedLeader(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}
