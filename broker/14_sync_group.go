package broker

// SyncGroup (key 14), v0-5. INVALID_GROUP_ID for an empty group id; NOT_COORDINATOR
// when the group's partition is not served here; while it loads the answer is
// REBALANCE_IN_PROGRESS, as Kafka's (the member rejoins). Followers' answers wait for
// the leader's assignment.

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
	registerAPI(kmsg.SyncGroup, 0, 5, (*Broker).handleSyncGroup, apiOpts{
		authorize: authorizeSyncGroup,
	})
}

func (b *Broker) handleSyncGroup(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.SyncGroupRequest)
	failed := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		if code == kerr.CoordinatorLoadInProgress.Code {
			code = kerr.RebalanceInProgress.Code
		}
		resp.ErrorCode = code
		return resp
	}
	if r.Group == "" {
		return rpc.Respond(failed(kerr.InvalidGroupID.Code))
	}
	return rpc.RespondLater(b.groups.Respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.SyncGroup(now, r, send)
	}, failed))
}

// authorizeSyncGroup is SyncGroup's authorization rule (checkRequest).
func authorizeSyncGroup(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.SyncGroupRequest)
	z := checksOf(b, req)
	if !z.groupOK(auth.OpRead, r.Group) {
		return z.whole(func(resp kmsg.Response) { resp.(*kmsg.SyncGroupResponse).ErrorCode = codeGroupAuthz })
	}
	return authzDecision{} // nothing refused
}
