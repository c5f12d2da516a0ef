package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterReq is an AlterShareGroupOffsets of group: topic → partition → start offset.
func alterReq(group string, offsets map[string]map[int32]int64) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for topic, ps := range offsets {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		for p, o := range ps {
			rt.Partitions = append(rt.Partitions, kmsg.AlterShareGroupOffsetsRequestTopicPartition{Partition: p, StartOffset: o})
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// alter runs the group step of an AlterShareGroupOffsets and returns what it hands on.
func (h *sgHarness) alter(req *kmsg.AlterShareGroupOffsetsRequest) (*kmsg.AlterShareGroupOffsetsResponse, *ShareStartOffsets, int16) {
	h.t.Helper()
	called := 0
	var resp *kmsg.AlterShareGroupOffsetsResponse
	var plan *ShareStartOffsets
	var code int16
	h.run(h.s.AlterShareGroupOffsets(h.now, req, h.topics, func(r *kmsg.AlterShareGroupOffsetsResponse, p *ShareStartOffsets, c int16) {
		called++
		resp, plan, code = r, p, c
	}))
	if called != 1 {
		h.t.Fatalf("alter answered %d times", called)
	}
	return resp, plan, code
}

// deleteOffsets runs both group steps of a DeleteShareGroupOffsets of topics, the
// share coordinator deleting every partition asked for.
func (h *sgHarness) deleteOffsets(group string, topics ...string) (*kmsg.DeleteShareGroupOffsetsResponse, []ShareTopicPartitions) {
	h.t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, t := range topics {
		req.Topics = append(req.Topics, kmsg.DeleteShareGroupOffsetsRequestTopic{Topic: t})
	}
	var resp *kmsg.DeleteShareGroupOffsetsResponse
	var del []ShareTopicPartitions
	h.run(h.s.InitiateDeleteShareGroupOffsets(h.now, req, h.topics, func(r *kmsg.DeleteShareGroupOffsetsResponse, d []ShareTopicPartitions, code int16) {
		if code != 0 {
			h.t.Fatalf("initiate delete: write failed %d", code)
		}
		resp, del = r, d
	}))
	if resp.ErrorCode != 0 || len(del) == 0 {
		return resp, del
	}
	var deleted []ShareTopicInfo
	for _, t := range del {
		deleted = append(deleted, ShareTopicInfo{TopicID: t.TopicID, TopicName: t.TopicName})
	}
	written := int16(-1)
	h.run(h.s.CompleteDeleteShareGroupOffsets(h.now, group, deleted, func(code int16) { written = code }))
	if written != 0 {
		h.t.Fatalf("complete delete: %d", written)
	}
	return resp, del
}

func sharePartitionsString(g *ShareGroup) string {
	in, ing, del := g.SharePartitions()
	show := func(ts []ShareTopicPartitions) string {
		out := ""
		for _, t := range ts {
			out += fmt.Sprintf("%s%v", t.TopicName, t.Partitions)
		}
		return out
	}
	names := ""
	for _, d := range del {
		names += d.TopicName
	}
	return fmt.Sprintf("initialized %s initializing %s deleting %s", show(in), show(ing), names)
}

// AlterShareGroupOffsets' group step, as Kafka's GroupMetadataManager: a group with
// members is refused (NON_EMPTY_GROUP), a classic group is not a share group, an
// unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION; an empty group (or a new
// one) has the others marked initializing under a bumped group epoch, which is the
// state epoch handed on; once initialized they are the group's again, and the log
// loads to the live group.
func TestShareAlterOffsets(t *testing.T) {
	h := newSG(t, cgTopics(2, 1))
	h.joinInitialized([]string{"m1"}, "a")
	if resp, plan, _ := h.alter(alterReq("s", map[string]map[int32]int64{"a": {0: 5}})); resp.ErrorCode != errNonEmptyGroup || plan != nil ||
		deref(resp.ErrorMessage) != "The group is not empty." {
		t.Fatalf("alter with a member: %+v %v", resp, plan)
	}
	h.ok(sgReq("s", "m1", LeaveMemberEpoch))
	epoch := h.s.ShareGroup("s").GroupEpoch()

	resp, plan, code := h.alter(alterReq("s", map[string]map[int32]int64{"a": {0: 5, 9: 1}, "nope": {0: 1}}))
	if code != 0 || resp.ErrorCode != 0 || plan == nil || plan.StateEpoch != epoch+1 || len(plan.Topics) != 1 ||
		fmt.Sprint(plan.Topics[0].StartOffsets) != "map[0:5]" {
		t.Fatalf("alter: %+v %+v %d", resp, plan, code)
	}
	errs := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			errs[fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)] = rp.ErrorCode
		}
	}
	if fmt.Sprint(errs) != "map[a-0:0 a-9:3 nope-0:3]" {
		t.Fatalf("partition codes %v", errs)
	}
	g := h.s.ShareGroup("s")
	if got := sharePartitionsString(g); got != "initialized a[1] initializing a[0] deleting " || g.GroupEpoch() != epoch+1 {
		t.Fatalf("after alter: %s epoch %d", got, g.GroupEpoch())
	}
	h.run(h.s.ShareGroupStateInitialized(h.now, "s", []ShareTopicPartitions{plan.Topics[0].Partitions()}, 0, h.topics))
	if got := sharePartitionsString(g); got != "initialized a[0 1] initializing  deleting " {
		t.Fatalf("after initialization: %s", got)
	}
	checkShareReplay(t, h.s, replayLog(t, h.batches))

	// A group id nobody used is created by the alteration; a classic group is refused.
	if _, plan, _ := h.alter(alterReq("fresh", map[string]map[int32]int64{"b": {0: 0}})); plan == nil || plan.StateEpoch != 1 || h.s.ShareGroup("fresh") == nil {
		t.Fatalf("new group: %+v", plan)
	}
	twice := alterReq("fresh", map[string]map[int32]int64{"b": {0: 1}})
	twice.Topics = append(twice.Topics, twice.Topics[0])
	if _, plan, _ := h.alter(twice); plan == nil || len(plan.Topics) != 1 {
		t.Fatalf("a topic named twice: %+v", plan)
	}
	h.commit(2, "classic", "", -1, map[int32]int64{0: 1})
	if resp, _, _ := h.alter(alterReq("classic", map[string]map[int32]int64{"a": {0: 0}})); resp.ErrorCode != errGroupIDNotFound ||
		deref(resp.ErrorMessage) != "Group classic is not a share group." {
		t.Fatalf("classic group: %+v", resp)
	}
	checkShareReplay(t, h.s, replayLog(t, h.batches))
}

// A failed write of the alteration answers its code and hands nothing on; the group's
// next write restates it.
func TestShareAlterOffsetsWriteFails(t *testing.T) {
	h := newSG(t, cgTopics(1))
	h.writeCode = errNotCoordinator
	if _, plan, code := h.alter(alterReq("s", map[string]map[int32]int64{"a": {0: 3}})); code != errNotCoordinator || plan != nil {
		t.Fatalf("failed write: %v %d", plan, code)
	}
	h.writeCode = 0
	if _, plan, code := h.alter(alterReq("s", map[string]map[int32]int64{"a": {0: 3}})); code != 0 || plan == nil {
		t.Fatalf("retry: %v %d", plan, code)
	}
	checkShareReplay(t, h.s, replayLog(t, h.batches))
}

// DeleteShareGroupOffsets' group steps, as Kafka's: no share group is
// GROUP_ID_NOT_FOUND, a group with members NON_EMPTY_GROUP; a topic without share
// state (or unknown) is UNKNOWN_TOPIC_OR_PARTITION; an initialized topic moves to
// deleting (its partitions handed on) and is forgotten once deleted; a topic left
// deleting by an earlier attempt is deleted again with every partition of the image.
func TestShareDeleteOffsets(t *testing.T) {
	h := newSG(t, cgTopics(2, 1))
	if resp, _ := h.deleteOffsets("s", "a"); resp.ErrorCode != errGroupIDNotFound || deref(resp.ErrorMessage) != "Group s not found." {
		t.Fatalf("no group: %+v", resp)
	}
	h.joinInitialized([]string{"m1"}, "a")
	if resp, _ := h.deleteOffsets("s", "a"); resp.ErrorCode != errNonEmptyGroup {
		t.Fatalf("with a member: %+v", resp)
	}
	h.ok(sgReq("s", "m1", LeaveMemberEpoch))
	resp, del := h.deleteOffsets("s", "a", "b", "nope", "a")
	if resp.ErrorCode != 0 || len(del) != 1 || del[0].TopicName != "a" || fmt.Sprint(del[0].Partitions) != "[0 1]" {
		t.Fatalf("delete: %+v %+v", resp, del)
	}
	if len(resp.Topics) != 2 || resp.Topics[0].Topic != "b" || resp.Topics[0].ErrorCode != 3 || resp.Topics[1].Topic != "nope" || resp.Topics[1].ErrorCode != 3 {
		t.Fatalf("refused topics %+v", resp.Topics)
	}
	if got := sharePartitionsString(h.s.ShareGroup("s")); got != "initialized  initializing  deleting " {
		t.Fatalf("after delete: %s", got)
	}
	checkShareReplay(t, h.s, replayLog(t, h.batches))

	// A topic left deleting (the share coordinator failed) is retried.
	g := h.s.ShareGroup("s")
	g.apply(ShareStatePartitionsChanged{Deleting: []ShareTopicInfo{{TopicID: h.topics["b"].ID, TopicName: "b"}}})
	if _, del := h.deleteOffsets("s", "b"); len(del) != 1 || fmt.Sprint(del[0].Partitions) != "[0]" {
		t.Fatalf("deleting again: %+v", del)
	}
	if got := sharePartitionsString(g); got != "initialized  initializing  deleting " {
		t.Fatalf("after the retry: %s", got)
	}
}

// InitializedSharePartitions: a share group's initialized partitions; an unknown id or
// one of another group type is GROUP_ID_NOT_FOUND with Kafka's messages.
func TestShareInitializedPartitions(t *testing.T) {
	h := newSG(t, cgTopics(2))
	if _, code, msg := h.s.InitializedSharePartitions("s"); code != errGroupIDNotFound || msg != "Group s not found." {
		t.Fatalf("unknown: %d %q", code, msg)
	}
	h.joinInitialized([]string{"m1"}, "a")
	parts, code, _ := h.s.InitializedSharePartitions("s")
	if code != 0 || len(parts) != 1 || fmt.Sprint(parts[0].Partitions) != "[0 1]" {
		t.Fatalf("initialized %+v %d", parts, code)
	}
	h.commit(2, "classic", "", -1, map[int32]int64{0: 1})
	if _, code, msg := h.s.InitializedSharePartitions("classic"); code != errGroupIDNotFound || msg != "Group classic is not a share group." {
		t.Fatalf("classic: %d %q", code, msg)
	}
}
