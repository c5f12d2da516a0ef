package broker

// Heartbeat (key 12), v0-4. INVALID_GROUP_ID for an empty group id; NOT_COORDINATOR
// when this broker does not lead the group's partition; while the partition loads the
// answer is NONE, as Kafka's (the member keeps its session until the group is back).

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
	registerAPI(kmsg.Heartbeat, 0, 4, (*Broker).handleHeartbeat, apiOpts{
		authorize: authorizeHeartbeat,
	})
}

func (b *Broker) handleHeartbeat(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.HeartbeatRequest)
	failed := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		if code == kerr.CoordinatorLoadInProgress.Code {
			code = 0
		}
		resp.ErrorCode = code
		return resp
	}
	if r.Group == "" {
		return rpc.Respond(failed(kerr.InvalidGroupID.Code))
	}
	return rpc.RespondLater(b.groups.Respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.Heartbeat(now, r, send)
	}, failed))
}

// authorizeHeartbeat is Heartbeat's authorization rule (checkRequest).
func authorizeHeartbeat(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.HeartbeatRequest)
	z := checksOf(b, req)
	if !z.groupOK(auth.OpRead, r.Group) {
		return z.whole(func(resp kmsg.Response) { resp.(*kmsg.HeartbeatResponse).ErrorCode = codeGroupAuthz })
	}
	return authzDecision{} // nothing refused
}
