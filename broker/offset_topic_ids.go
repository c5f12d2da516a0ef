package broker

// Topic ids in OffsetCommit v10 and OffsetFetch v10 (Kafka 4.2, KIP-848): the requests
// name topics by id, the group coordinator keeps offsets by name. A request's ids are
// resolved to names through the metadata image before authorization (which stays per
// topic name) and before the shard; a topic whose id the image does not know is
// answered UNKNOWN_TOPIC_ID on each of its partitions and goes no further; the answer
// names every topic by the id the request gave.

import (
	"time"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitUsesTopicIDs reports whether OffsetCommit version names topics by id.
func commitUsesTopicIDs(version int16) bool { return version >= 10 }

// fetchUsesTopicIDs reports whether OffsetFetch version names topics by id.
func fetchUsesTopicIDs(version int16) bool { return version >= 10 }

// topicName is the name of the topic with id in im, "" when im has none.
func topicName(im *metadata.Image, id [16]byte) string {
	if t := im.TopicByID(metadata.Uuid(id)); t != nil {
		return t.Name
	}
	return ""
}

// resolveCommitTopicIDs names the topics of r (v10+) by their ids in im. A topic
// already named is left alone (the authorization rule and the handler both call it);
// one whose id im does not know keeps the name "".
func resolveCommitTopicIDs(im *metadata.Image, r *kmsg.OffsetCommitRequest) {
	if !commitUsesTopicIDs(r.Version) {
		return
	}
	for i := range r.Topics {
		if t := &r.Topics[i]; t.Topic == "" {
			t.Topic = topicName(im, t.TopicID)
		}
	}
}

// unknownCommitTopicID reports whether t is a v10 topic whose id is not known.
func unknownCommitTopicID(version int16, t kmsg.OffsetCommitRequestTopic) bool {
	return commitUsesTopicIDs(version) && t.Topic == ""
}

// commitWithTopicIDs serves a v10 OffsetCommit through serve with its ids resolved:
// topics of unknown ids are answered UNKNOWN_TOPIC_ID (without asking serve when no
// topic is left), and the answer's topics carry the request's ids.
func commitWithTopicIDs(im *metadata.Image, r *kmsg.OffsetCommitRequest, serve func() rpc.Result) rpc.Result {
	resolveCommitTopicIDs(im, r)
	var unknown []kmsg.OffsetCommitRequestTopic
	r.Topics, unknown = split(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return !unknownCommitTopicID(r.Version, t) })
	ids := make(map[string][16]byte, len(r.Topics))
	for _, t := range r.Topics {
		ids[t.Topic] = t.TopicID
	}
	finish := func(resp kmsg.Response) time.Duration {
		out := resp.(*kmsg.OffsetCommitResponse)
		for i := range out.Topics {
			if id, ok := ids[out.Topics[i].Topic]; ok {
				out.Topics[i].TopicID = id
			}
		}
		offsetCommitErrors(out, unknown, kerr.UnknownTopicID.Code)
		return 0
	}
	if len(r.Topics) == 0 && len(unknown) > 0 {
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		finish(resp)
		return rpc.Respond(resp)
	}
	return serve().OnResponse(finish)
}

// fetchWithTopicIDs serves a v10 OffsetFetch through serve with its ids resolved: in
// each group, topics of unknown ids are answered UNKNOWN_TOPIC_ID (unless the group
// failed as a whole), the topics asked for carry the request's ids, and a group's
// every-offset answer (null topics) carries the image's ids, leaving out the offsets
// of topics the image no longer has.
func fetchWithTopicIDs(im *metadata.Image, r *kmsg.OffsetFetchRequest, serve func() rpc.Result) rpc.Result {
	type asked struct {
		all     bool
		ids     map[string][16]byte
		unknown []kmsg.OffsetFetchRequestGroupTopic
	}
	groups := make([]asked, len(r.Groups))
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Topics == nil {
			groups[i].all = true
			continue
		}
		groups[i].ids = make(map[string][16]byte, len(g.Topics))
		kept := g.Topics[:0:0]
		for _, t := range g.Topics {
			if t.Topic == "" {
				t.Topic = topicName(im, t.TopicID)
			}
			if t.Topic == "" {
				groups[i].unknown = append(groups[i].unknown, t)
				continue
			}
			groups[i].ids[t.Topic] = t.TopicID
			kept = append(kept, t)
		}
		g.Topics = kept
	}
	return serve().OnResponse(func(resp kmsg.Response) time.Duration {
		out := resp.(*kmsg.OffsetFetchResponse)
		for i := range out.Groups {
			if i >= len(groups) {
				break
			}
			rg, a := &out.Groups[i], groups[i]
			topics := rg.Topics[:0]
			for _, t := range rg.Topics {
				if a.all {
					t.TopicID = [16]byte(idOf(im, t.Topic))
				} else {
					t.TopicID = a.ids[t.Topic]
				}
				if t.TopicID != ([16]byte{}) {
					topics = append(topics, t)
				}
			}
			rg.Topics = topics
			if rg.ErrorCode != 0 {
				continue
			}
			for _, t := range a.unknown {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.TopicID = t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.UnknownTopicID.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
		}
		return 0
	})
}

// idOf is the id of the topic named name in im, zero when im has none.
func idOf(im *metadata.Image, name string) metadata.Uuid {
	if t := im.Topic(name); t != nil {
		return t.ID
	}
	return metadata.Uuid{}
}
