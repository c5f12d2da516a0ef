package broker

// JoinGroup (key 11), v0-9: KIP-394 MEMBER_ID_REQUIRED from v4, KIP-345 static
// membership from v5 (the rules live in group/). INVALID_GROUP_ID for an empty group
// id; NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS when the group's partition is not
// served here. The response may wait for the rebalance.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.JoinGroup, 0, 9, (*Broker).handleJoinGroup, apiOpts{
		authorize: authorizeJoinGroup,
	})
}

func (b *Broker) handleJoinGroup(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.JoinGroupRequest)
	failed := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, r.MemberID
		return resp
	}
	if r.Group == "" {
		return rpc.Respond(failed(kerr.InvalidGroupID.Code))
	}
	client := clientOf(req)
	return rpc.RespondLater(b.groups.Respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.JoinGroup(now, client, r, send)
	}, failed))
}

// authorizeJoinGroup is JoinGroup's authorization rule (checkRequest).
func authorizeJoinGroup(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.JoinGroupRequest)
	z := checksOf(b, req)
	if !z.groupOK(auth.OpRead, r.Group) {
		return z.whole(func(resp kmsg.Response) {
			out := resp.(*kmsg.JoinGroupResponse)
			out.ErrorCode, out.Generation, out.MemberID = codeGroupAuthz, -1, r.MemberID
		})
	}
	return authzDecision{} // nothing refused
}
