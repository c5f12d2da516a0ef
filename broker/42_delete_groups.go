package broker

// DeleteGroups (key 42), v0-2: each group is deleted by its shard (NON_EMPTY_GROUP when
// it has members, GROUP_ID_NOT_FOUND when unknown; tombstones are written for the group
// and its offsets, answered once replicated). A group whose partition is not served
// here gets NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS; an empty group id
// INVALID_GROUP_ID.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DeleteGroups, 0, 2, (*Broker).handleDeleteGroups, apiOpts{
		authorize: authorizeDeleteGroups,
	})
}

func (b *Broker) handleDeleteGroups(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.RespondLater(b.groups.DeleteGroups(req.Body.(*kmsg.DeleteGroupsRequest)))
}

// authorizeDeleteGroups is DeleteGroups's authorization rule (checkRequest).
func authorizeDeleteGroups(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	z := checksOf(b, req)
	var denied []string
	r.Groups, denied = split(r.Groups, func(g string) bool { return z.groupOK(auth.OpDelete, g) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.DeleteGroupsResponse)
		for _, g := range denied {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, codeGroupAuthz
			out.Groups = append(out.Groups, rg)
		}
	})
}
