package broker

// ShareAcknowledge (key 79), v1-2 (KIP-932; v2 adds IsRenewAck, KIP-1222): a share
// group member's acknowledgements (ACCEPT, RELEASE, REJECT, RENEW) of records it
// acquired, outside a fetch. The share session epoch must be the session's next (0
// is INVALID_SHARE_SESSION_EPOCH, -1 closes the session and releases the member's
// other records); each partition is answered once its change is written to the share
// coordinator (shareleader.Manager.ShareAcknowledge). Authorization as ShareFetch:
// READ on the group, READ on each topic.

import (
	"context"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ShareAcknowledge, 1, 2, (*Broker).handleShareAcknowledge, apiOpts{
		authorize: authorizeShareRequest(func(r kmsg.Request) *string { return r.(*kmsg.ShareAcknowledgeRequest).GroupID },
			func(resp kmsg.Response) { resp.(*kmsg.ShareAcknowledgeResponse).ErrorCode = codeGroupAuthz }),
	})
}

func (b *Broker) handleShareAcknowledge(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := b.shares.ShareAcknowledge(ctx, r, b.shareRequestOptions(ctx, req))
	h := b.shareHints(req)
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for pi := range t.Partitions {
			if p := &t.Partitions[pi]; movedLeader(p.ErrorCode) {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = h.hint(t.TopicID, p.Partition)
			}
		}
	}
	h.each(func(id int32, host string, port int32, rack *string) {
		e := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port, e.Rack = id, host, port, rack
		resp.NodeEndpoints = append(resp.NodeEndpoints, e)
	})
	return rpc.Respond(resp)
}
