package broker

// ListGroups (key 16), v0-5: the groups of every __consumer_offsets partition this
// broker serves, filtered by state (v4+) and type (v5+). While one of its partitions
// loads, the answer carries COORDINATOR_LOAD_IN_PROGRESS with what the others hold, as
// in Kafka.

import (
	"context"
	"slices"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ListGroups, 0, 5, (*Broker).handleListGroups, apiOpts{
		authorize: authorizeListGroups,
	})
}

func (b *Broker) handleListGroups(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.RespondLater(b.groups.ListGroups(req.Body.(*kmsg.ListGroupsRequest)))
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
