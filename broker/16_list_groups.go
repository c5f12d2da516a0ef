package broker

// ListGroups (key 16), v0-5: the groups of every __consumer_offsets partition this
// broker serves, filtered by state (v4+) and type (v5+). While one of its partitions
// loads, the answer carries COORDINATOR_LOAD_IN_PROGRESS with what the others hold, as
// in Kafka.

import (
	"context"
	"github.com/petrel-broker/petrel/coordinator"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ListGroups, 0, 5, (*Broker).handleListGroups, apiOpts{
		authorize: authorizeListGroups,
	})
}

func (b *Broker) handleListGroups(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ListGroupsRequest)
	serving := b.groups.Serving()
	loading := len(b.groups.Loaded()) > len(serving)
	return rpc.RespondLater(coordinator.Gather(len(serving), func(i int, done func([]kmsg.ListGroupsResponseGroup)) {
		b.groups.SubmitTo(serving[i], func(_ time.Time, s *group.Shard) group.Effects {
			done(s.ListGroups(r.StatesFilter, r.TypesFilter))
			return group.Effects{}
		}, func(int16) { done(nil) })
	}, func(results [][]kmsg.ListGroupsResponseGroup) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.Groups = []kmsg.ListGroupsResponseGroup{}
		for _, gs := range results {
			resp.Groups = append(resp.Groups, gs...)
		}
		if loading {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		}
		return resp
	}))
}

// authorizeListGroups is ListGroups's authorization rule (checkRequest).
func authorizeListGroups(b *Broker, req *rpc.Request) authzDecision {
	z := checksOf(b, req)
	if z.clusterOK(auth.OpDescribe) {
		return authzDecision{}
	}
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.ListGroupsResponse)
		out.Groups = slices.DeleteFunc(out.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return !z.groupOK(auth.OpDescribe, g.Group) })
	}}
}
