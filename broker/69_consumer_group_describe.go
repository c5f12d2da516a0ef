package broker

// ConsumerGroupDescribe (key 69), v0-1 (KIP-848; v1 adds each member's MemberType,
// KIP-1099): each group is described by its shard with the topics' names from the
// metadata image; an empty id is INVALID_GROUP_ID, an unknown group or a classic one
// GROUP_ID_NOT_FOUND, a group whose partition is not served here NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS. Authorization is Kafka's handleConsumerGroupDescribe:
// DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED, those rows first), and a group
// whose members' assignments or targets name a topic the caller may not DESCRIBE is
// answered TOPIC_AUTHORIZATION_FAILED without its members (KAFKA-18813).

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// undescribableTopicsMessage is Kafka's message for a group hidden because of its
// topics.
const undescribableTopicsMessage = "The group has described topic(s) that the client is not authorized to describe."

func init() {
	registerAPI(kmsg.ConsumerGroupDescribe, 0, 1, (*Broker).handleConsumerGroupDescribe, apiOpts{
		authorize: authorizeConsumerGroupDescribe,
	})
}

func (b *Broker) handleConsumerGroupDescribe(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	var finish func(*kmsg.ConsumerGroupDescribeResponseGroup)
	if r.IncludeAuthorizedOperations {
		checks := b.checks(req)
		finish = func(g *kmsg.ConsumerGroupDescribeResponseGroup) {
			g.AuthorizedOperations = checks.AuthorizedOperations(auth.ResourceGroup, g.Group)
		}
	}
	return rpc.RespondLater(b.groups.ConsumerGroupDescribe(r, imageTopicNames(b.Image()), finish))
}

// imageTopicNames names topic ids from the metadata image im.
func imageTopicNames(im *metadata.Image) group.TopicNamer {
	return func(id [16]byte) (string, bool) {
		name, ok := im.TopicIDs[metadata.Uuid(id)]
		return name, ok
	}
}

// authorizeConsumerGroupDescribe is ConsumerGroupDescribe's authorization rule
// (checkRequest): the denied groups are answered GROUP_AUTHORIZATION_FAILED ahead of
// the described ones, and the described ones are checked for their topics.
func authorizeConsumerGroupDescribe(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	z := checksOf(b, req)
	var denied []string
	r.Groups, denied = split(r.Groups, func(g string) bool { return z.groupOK(auth.OpDescribe, g) })
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.ConsumerGroupDescribeResponse)
		hideUndescribableTopics(z, out.Groups)
		rows := make([]kmsg.ConsumerGroupDescribeResponseGroup, 0, len(denied)+len(out.Groups))
		for _, g := range denied {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, codeGroupAuthz
			rows = append(rows, rg)
		}
		out.Groups = append(rows, out.Groups...)
	}}
}

// hideUndescribableTopics replaces each group one of whose members' assignment or
// target assignment names a topic the caller may not DESCRIBE with a
// TOPIC_AUTHORIZATION_FAILED row without members, as Kafka: clients do not see topics
// they may not describe.
func hideUndescribableTopics(z authzChecks, groups []kmsg.ConsumerGroupDescribeResponseGroup) {
	describable := topicDescribable(z)
	for i, g := range groups {
		if g.ErrorCode != 0 || groupTopicsDescribable(g, describable) {
			continue
		}
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g.Group, codeTopicAuthz
		rg.ErrorMessage = kmsg.StringPtr(undescribableTopicsMessage)
		rg.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
		groups[i] = rg
	}
}

// topicDescribable returns whether z may DESCRIBE a topic, each topic checked once.
func topicDescribable(z authzChecks) func(topic string) bool {
	allowed := map[string]bool{}
	return func(topic string) bool {
		ok, seen := allowed[topic]
		if !seen {
			ok = z.topicOK(auth.OpDescribe, topic)
			allowed[topic] = ok
		}
		return ok
	}
}

// groupTopicsDescribable reports whether describable holds for every topic of g's
// members' assignments and target assignments.
func groupTopicsDescribable(g kmsg.ConsumerGroupDescribeResponseGroup, describable func(topic string) bool) bool {
	for _, m := range g.Members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if !describable(tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}
