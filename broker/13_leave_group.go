package broker

// LeaveGroup (key 13), v0-5; v3+ names several members (static ones by instance id).
// INVALID_GROUP_ID for an empty group id; NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS when the group's partition is not served here.

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
	registerAPI(kmsg.LeaveGroup, 0, 5, (*Broker).handleLeaveGroup, apiOpts{
		authorize: authorizeLeaveGroup,
	})
}

func (b *Broker) handleLeaveGroup(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	failed := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = code
		return resp
	}
	if r.Group == "" {
		return rpc.Respond(failed(kerr.InvalidGroupID.Code))
	}
	return rpc.RespondLater(b.groups.Respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.LeaveGroup(now, r, send)
	}, failed))
}

// authorizeLeaveGroup is LeaveGroup's authorization rule (checkRequest).
func authorizeLeaveGroup(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	z := checksOf(b, req)
	if !z.groupOK(auth.OpRead, r.Group) {
		return z.whole(func(resp kmsg.Response) { resp.(*kmsg.LeaveGroupResponse).ErrorCode = codeGroupAuthz })
	}
	return authzDecision{} // nothing refused
}
