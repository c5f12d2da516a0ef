package broker

// DescribeGroups (key 15), v0-5: each group is described by its shard (an unknown group
// as Dead with no members, as Kafka does); a group whose partition is not served here
// gets NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS.

import (
	"context"
	"github.com/petrel-broker/petrel/coordinator"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeGroups, 0, 5, (*Broker).handleDescribeGroups, apiOpts{
		authorize: authorizeDescribeGroups,
	})
}

func (b *Broker) handleDescribeGroups(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	return rpc.RespondLater(coordinator.Gather(len(r.Groups), func(i int, done func(kmsg.DescribeGroupsResponseGroup)) {
		id := r.Groups[i]
		b.groups.Submit(id, func(_ time.Time, s *group.Shard) group.Effects {
			g := s.DescribeGroup(id, r.IncludeAuthorizedOperations)
			if r.Version >= 3 && r.IncludeAuthorizedOperations && b.authzEnabled() {
				g.AuthorizedOperations = b.authorizedOperations(req, auth.ResourceGroup, id)
			}
			done(g)
			return group.Effects{}
		}, func(code int16) {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, code
			done(g)
		})
	}, func(results []kmsg.DescribeGroupsResponseGroup) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		resp.Groups = results
		return resp
	}))
}

// authorizeDescribeGroups is DescribeGroups's authorization rule (checkRequest).
func authorizeDescribeGroups(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	z := checksOf(b, req)
	var denied []string
	r.Groups, denied = split(r.Groups, func(g string) bool { return z.groupOK(auth.OpDescribe, g) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.DescribeGroupsResponse)
		for _, g := range denied {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, codeGroupAuthz
			out.Groups = append(out.Groups, rg)
		}
	})
}
