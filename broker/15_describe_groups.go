package broker

// DescribeGroups (key 15), v0-6: each group is described by its shard (an unknown group,
// or a KIP-848 consumer group, as Dead with no members, as Kafka does); a group whose
// partition is not served here gets NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS.
//
// Version notes: v6 (KIP-1043) adds ErrorMessage: an unknown group is GROUP_ID_NOT_FOUND
// "Group g not found.", a consumer group GROUP_ID_NOT_FOUND "Group g is not a classic
// group." (Kafka 4.2's answers); other errors carry no message, as Kafka's.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeGroups, 0, 6, (*Broker).handleDescribeGroups, apiOpts{
		authorize: authorizeDescribeGroups,
	})
}

func (b *Broker) handleDescribeGroups(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	var ops func(group string) int32
	if r.Version >= 3 && r.IncludeAuthorizedOperations && b.authzEnabled() {
		ops = func(id string) int32 { return b.checks(req).AuthorizedOperations(auth.ResourceGroup, id) }
	}
	return rpc.RespondLater(b.groups.DescribeGroups(r, ops))
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
