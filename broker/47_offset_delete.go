package broker

// OffsetDelete (key 47), v0: deletes committed offsets of partitions the group is not
// subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise, GROUP_ID_NOT_FOUND for an
// unknown group; the rules live in group/). INVALID_GROUP_ID for an empty group id.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(kmsg.OffsetDelete, 0, 0, (*Broker).handleOffsetDelete) }

func (b *Broker) handleOffsetDelete(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	failed := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = code
		return resp
	}
	if r.Group == "" {
		return rpc.Respond(failed(kerr.InvalidGroupID.Code))
	}
	return b.groups.respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.OffsetDelete(now, r, send)
	}, failed)
}
