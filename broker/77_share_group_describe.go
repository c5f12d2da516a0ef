package broker

// ShareGroupDescribe (key 77), v1 (KIP-932): each share group is described by its
// shard with the topics' names from the metadata image: state (Empty or Stable),
// group and assignment epochs, the assignor ("simple") and each member with its
// subscription and current assignment. An empty id is INVALID_GROUP_ID, an unknown
// group GROUP_ID_NOT_FOUND ("Group g not found.", or "Group g is not a share group."
// for a classic or consumer group), a group whose partition is not served here
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS. Authorization is Kafka 4.2's
// handleShareGroupDescribe: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED, those
// rows first), and a group whose members' assignments name a topic the caller may not
// DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED without its members.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ShareGroupDescribe, 1, 1, (*Broker).handleShareGroupDescribe, apiOpts{
		authorize: authorizeShareGroupDescribe,
	})
}

func (b *Broker) handleShareGroupDescribe(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ShareGroupDescribeRequest)
	var finish func(*kmsg.ShareGroupDescribeResponseGroup)
	if r.IncludeAuthorizedOperations {
		checks := b.checks(req)
		finish = func(g *kmsg.ShareGroupDescribeResponseGroup) {
			g.AuthorizedOperations = checks.AuthorizedOperations(auth.ResourceGroup, g.GroupID)
		}
	}
	return rpc.RespondLater(b.groups.ShareGroupDescribe(r, imageTopicNames(b.Image()), finish))
}

// authorizeShareGroupDescribe is ShareGroupDescribe's authorization rule
// (checkRequest): the denied groups are answered GROUP_AUTHORIZATION_FAILED ahead of
// the described ones, and the described ones are checked for their topics.
func authorizeShareGroupDescribe(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.ShareGroupDescribeRequest)
	z := checksOf(b, req)
	var denied []string
	r.GroupIDs, denied = split(r.GroupIDs, func(g string) bool { return z.groupOK(auth.OpDescribe, g) })
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.ShareGroupDescribeResponse)
		describable := topicDescribable(z) // 69_consumer_group_describe.go
		rows := make([]kmsg.ShareGroupDescribeResponseGroup, 0, len(denied)+len(out.Groups))
		for _, g := range denied {
			rg := kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID, rg.ErrorCode = g, codeGroupAuthz
			rows = append(rows, rg)
		}
		for _, g := range out.Groups {
			if g.ErrorCode == 0 && !shareGroupTopicsDescribable(g, describable) {
				rg := kmsg.NewShareGroupDescribeResponseGroup()
				rg.GroupID, rg.ErrorCode = g.GroupID, codeTopicAuthz
				rg.ErrorMessage = kmsg.StringPtr(undescribableTopicsMessage)
				rg.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
				g = rg
			}
			rows = append(rows, g)
		}
		out.Groups = rows
	}}
}

// shareGroupTopicsDescribable reports whether describable holds for every topic of
// g's members' assignments.
func shareGroupTopicsDescribable(g kmsg.ShareGroupDescribeResponseGroup, describable func(topic string) bool) bool {
	for _, m := range g.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			if !describable(tp.Topic) {
				return false
			}
		}
	}
	return true
}
