package coordinator

// The share group offsets admin APIs on the group coordinator (KIP-932, Kafka 4.2's
// GroupCoordinatorService.describeShareGroupOffsets, alterShareGroupOffsets and
// deleteShareGroupOffsets): each is steps on the group's shard (group/share_offsets.go)
// around a call to the share coordinators through a SharePersister. The methods block
// until the answer is complete; the broker runs them on a goroutine of their own.

import (
	"context"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SharePersister is the part of the share-state Persister (shareleader.Persister,
// Kafka's DefaultStatePersister) the share group offsets APIs use. It must be safe for
// concurrent use; a partition it could not reach comes back with its error code, and
// an error means the request could not be tried at all.
type SharePersister interface {
	InitializeState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error)
	DeleteState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error)
	ReadStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error)
}

// ShareOffsetsImage is what the share group offsets APIs read of the metadata image.
type ShareOffsetsImage struct {
	// Topics gives a topic's id and partition count by name.
	Topics group.ConsumerTopics
	// Names gives a topic's name by id.
	Names group.TopicNamer
	// EndOffsets, when not nil, returns the high watermark of the partitions named
	// (topic → partitions) for DescribeShareGroupOffsets v1's lag; those it cannot
	// find are left out. It may do network I/O.
	EndOffsets func(want map[string][]int32) map[string]map[int32]int64
}

// persisterFailedCode is the code a partition gets when the persister could not be
// asked at all.
var persisterFailedCode = kerr.UnknownServerError.Code

// await submits call to key's shard and waits for the value it hands to done, or the
// refusal code; ctx's end gives REQUEST_TIMED_OUT.
func await[T any](ctx context.Context, gc *GroupCoordinator, key string, call func(now time.Time, s *group.Shard, done func(T)) group.Effects) (T, int16) {
	type result struct {
		v    T
		code int16
	}
	ch := make(chan result, 1)
	send := func(r result) {
		select {
		case ch <- r:
		default:
		}
	}
	gc.Submit(key, func(now time.Time, s *group.Shard) group.Effects {
		return call(now, s, func(v T) { send(result{v: v}) })
	}, func(code int16) { send(result{code: code}) })
	select {
	case r := <-ch:
		return r.v, r.code
	case <-ctx.Done():
		var zero T
		return zero, kerr.RequestTimedOut.Code
	}
}

// DescribeShareGroupOffsets answers r (key 90, v0-1): per group, the start offset and
// leader epoch of each partition from the share coordinators' state summaries, with
// v1's lag (high watermark - start offset - records whose delivery is complete) where
// both are known. A group without topics named describes every partition whose share
// state it initialized (GROUP_ID_NOT_FOUND for no share group); named topics are
// asked for as they are, a topic unknown to the image and a partition without state
// answered with start offset -1.
func (gc *GroupCoordinator) DescribeShareGroupOffsets(ctx context.Context, r *kmsg.DescribeShareGroupOffsetsRequest, p SharePersister, im ShareOffsetsImage) *kmsg.DescribeShareGroupOffsetsResponse {
	resp := r.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range r.Groups {
		resp.Groups = append(resp.Groups, gc.describeShareGroupOffsets(ctx, rg, p, im))
	}
	return resp
}

func (gc *GroupCoordinator) describeShareGroupOffsets(ctx context.Context, rg kmsg.DescribeShareGroupOffsetsRequestGroup, p SharePersister, im ShareOffsetsImage) kmsg.DescribeShareGroupOffsetsResponseGroup {
	out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	out.GroupID = rg.GroupID
	if rg.GroupID == "" {
		out.ErrorCode = kerr.InvalidGroupID.Code
		return out
	}
	summary := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	summary.GroupID = rg.GroupID
	var missing []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	if rg.Topics == nil {
		type initialized struct {
			parts []group.ShareTopicPartitions
			code  int16
			msg   string
		}
		got, code := await(ctx, gc, rg.GroupID, func(_ time.Time, s *group.Shard, done func(initialized)) group.Effects {
			parts, code, msg := s.InitializedSharePartitions(rg.GroupID)
			done(initialized{parts, code, msg})
			return group.Effects{}
		})
		if code == 0 {
			code = got.code
		}
		if code != 0 {
			out.ErrorCode, out.ErrorMessage = code, optionalMessage(got.msg)
			return out
		}
		for _, t := range got.parts {
			if _, ok := im.Names(t.TopicID); ok {
				summary.Topics = append(summary.Topics, summaryTopic(t.TopicID, t.Partitions))
			}
		}
	} else {
		for _, rt := range rg.Topics {
			t, ok := im.Topics.ConsumerTopic(rt.Topic)
			if !ok {
				dt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				dt.Topic = rt.Topic
				for _, id := range rt.Partitions {
					dp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					dp.Partition, dp.StartOffset = id, -1
					dt.Partitions = append(dt.Partitions, dp)
				}
				missing = append(missing, dt)
				continue
			}
			summary.Topics = append(summary.Topics, summaryTopic(t.ID, rt.Partitions))
		}
	}
	if len(summary.Topics) > 0 {
		out.Topics = describeFromSummary(ctx, summary, p, im)
	}
	out.Topics = append(out.Topics, missing...)
	if out.Topics == nil {
		out.Topics = []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
	}
	return out
}

func summaryTopic(id [16]byte, partitions []int32) kmsg.ReadShareGroupStateSummaryRequestTopic {
	st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st.TopicID = id
	for _, p := range partitions {
		sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		sp.Partition = p
		st.Partitions = append(st.Partitions, sp)
	}
	return st
}

// describeFromSummary asks the persister for summary and turns its answer into the
// described topics, with the lag where the summary and the high watermark allow it.
func describeFromSummary(ctx context.Context, summary *kmsg.ReadShareGroupStateSummaryRequest, p SharePersister, im ShareOffsetsImage) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	res, err := p.ReadStateSummary(ctx, summary)
	if err != nil {
		res = summaryFailed(summary)
	}
	want := map[string][]int32{}
	for _, t := range res.Topics {
		name, _ := im.Names(t.TopicID)
		for _, sp := range t.Partitions {
			if lagKnowable(sp) {
				want[name] = append(want[name], sp.Partition)
			}
		}
	}
	var ends map[string]map[int32]int64
	if len(want) > 0 && im.EndOffsets != nil {
		ends = im.EndOffsets(want)
	}
	var topics []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, t := range res.Topics {
		dt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		dt.TopicID = t.TopicID
		dt.Topic, _ = im.Names(t.TopicID)
		for _, sp := range t.Partitions {
			dp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			dp.Partition, dp.StartOffset = sp.Partition, -1
			if sp.ErrorCode == 0 {
				dp.StartOffset, dp.LeaderEpoch = sp.StartOffset, sp.LeaderEpoch
			}
			if end, ok := ends[dt.Topic][sp.Partition]; ok && lagKnowable(sp) {
				dp.Lag = end - sp.StartOffset - int64(sp.DeliveryCompleteCount)
			}
			dt.Partitions = append(dt.Partitions, dp)
		}
		topics = append(topics, dt)
	}
	return topics
}

// lagKnowable reports whether a summary has what the lag needs (Kafka's
// shouldComputeSharePartitionLag).
func lagKnowable(sp kmsg.ReadShareGroupStateSummaryResponseTopicPartition) bool {
	return sp.ErrorCode == 0 && sp.StartOffset != -1 && sp.DeliveryCompleteCount != -1
}

// summaryFailed is the answer to summary when the persister could not be asked: every
// partition with persisterFailedCode (described as start offset -1).
func summaryFailed(summary *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse {
	res := summary.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range summary.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, persisterFailedCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		res.Topics = append(res.Topics, rt)
	}
	return res
}

// AlterShareGroupOffsets answers r (key 91, v0): the group step
// (group.Shard.AlterShareGroupOffsets: empty group, known partitions marked
// initializing under a bumped group epoch), then InitializeShareGroupState with the new
// start offsets under that epoch as the state epoch, then the outcome back to the
// group: initialized partitions are assigned again at the members' next heartbeats;
// a partition the share coordinator refused gets its error and leaves initializing.
func (gc *GroupCoordinator) AlterShareGroupOffsets(ctx context.Context, r *kmsg.AlterShareGroupOffsetsRequest, p SharePersister, im ShareOffsetsImage) *kmsg.AlterShareGroupOffsetsResponse {
	if r.GroupID == "" {
		resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	type step struct {
		resp *kmsg.AlterShareGroupOffsetsResponse
		plan *group.ShareStartOffsets
	}
	got, code := await(ctx, gc, r.GroupID, func(now time.Time, s *group.Shard, done func(step)) group.Effects {
		return s.AlterShareGroupOffsets(now, r, im.Topics, func(resp *kmsg.AlterShareGroupOffsetsResponse, plan *group.ShareStartOffsets, code int16) {
			if code != 0 {
				resp = r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
				resp.ErrorCode = code
			}
			done(step{resp, plan})
		})
	})
	if code != 0 {
		resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode = code
		return resp
	}
	if got.plan == nil {
		return got.resp
	}
	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = r.GroupID
	for _, t := range got.plan.Topics {
		it := kmsg.NewInitializeShareGroupStateRequestTopic()
		it.TopicID = t.TopicID
		for _, part := range t.Partitions().Partitions {
			ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			ip.Partition, ip.StateEpoch, ip.StartOffset = part, got.plan.StateEpoch, t.StartOffsets[part]
			it.Partitions = append(it.Partitions, ip)
		}
		init.Topics = append(init.Topics, it)
	}
	codes := initializeCodes(ctx, init, p)
	gc.settleAlteredPartitions(ctx, got.plan, codes, im.Topics)
	for i, rt := range got.resp.Topics {
		for j, rp := range rt.Partitions {
			if c := codes[rt.TopicID][rp.Partition]; rp.ErrorCode == 0 && c != 0 {
				got.resp.Topics[i].Partitions[j].ErrorCode = c
				got.resp.Topics[i].Partitions[j].ErrorMessage = kmsg.StringPtr(errorDescription(c))
			}
		}
	}
	return got.resp
}

// initializeCodes asks the persister for init and returns each partition's code
// (topic id → partition → code).
func initializeCodes(ctx context.Context, init *kmsg.InitializeShareGroupStateRequest, p SharePersister) map[[16]byte]map[int32]int16 {
	codes := map[[16]byte]map[int32]int16{}
	for _, t := range init.Topics {
		codes[t.TopicID] = map[int32]int16{}
		for _, part := range t.Partitions {
			codes[t.TopicID][part.Partition] = persisterFailedCode
		}
	}
	res, err := p.InitializeState(ctx, init)
	if err != nil {
		return codes
	}
	for _, t := range res.Topics {
		for _, part := range t.Partitions {
			if _, asked := codes[t.TopicID][part.Partition]; asked {
				codes[t.TopicID][part.Partition] = part.ErrorCode
			}
		}
	}
	return codes
}

// settleAlteredPartitions tells the group which altered partitions the share
// coordinator initialized (group.Shard.ShareGroupStateInitialized, once for those, once
// per error code for the others).
func (gc *GroupCoordinator) settleAlteredPartitions(ctx context.Context, plan *group.ShareStartOffsets, codes map[[16]byte]map[int32]int16, topics group.ConsumerTopics) {
	byCode := map[int16][]group.ShareTopicPartitions{}
	for _, t := range plan.Topics {
		split := map[int16][]int32{}
		for _, part := range t.Partitions().Partitions {
			c := codes[t.TopicID][part]
			split[c] = append(split[c], part)
		}
		for c, parts := range split {
			byCode[c] = append(byCode[c], group.ShareTopicPartitions{TopicID: t.TopicID, TopicName: t.TopicName, Partitions: parts})
		}
	}
	for _, c := range sortedCodes(byCode) {
		await(ctx, gc, plan.GroupID, func(now time.Time, s *group.Shard, done func(struct{})) group.Effects {
			eff := s.ShareGroupStateInitialized(now, plan.GroupID, byCode[c], c, topics)
			done(struct{}{})
			return eff
		})
	}
}

func sortedCodes[V any](m map[int16]V) []int16 {
	out := make([]int16, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// DeleteShareGroupOffsets answers r (key 92, v0): the group step
// (group.Shard.InitiateDeleteShareGroupOffsets: empty group, topics with share state
// moved to deleting), then DeleteShareGroupState for their partitions, then the topics
// the share coordinator deleted leave the group (CompleteDeleteShareGroupOffsets); a
// topic one of whose partitions failed is answered with that partition's code and
// stays deleting, for a later deletion to finish.
func (gc *GroupCoordinator) DeleteShareGroupOffsets(ctx context.Context, r *kmsg.DeleteShareGroupOffsetsRequest, p SharePersister, im ShareOffsetsImage) *kmsg.DeleteShareGroupOffsetsResponse {
	failed := func(code int16) *kmsg.DeleteShareGroupOffsetsResponse {
		resp := r.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode = code
		return resp
	}
	if r.GroupID == "" {
		return failed(kerr.InvalidGroupID.Code)
	}
	if len(r.Topics) == 0 {
		return failed(0)
	}
	type step struct {
		resp *kmsg.DeleteShareGroupOffsetsResponse
		del  []group.ShareTopicPartitions
		code int16
	}
	got, code := await(ctx, gc, r.GroupID, func(now time.Time, s *group.Shard, done func(step)) group.Effects {
		return s.InitiateDeleteShareGroupOffsets(now, r, im.Topics, func(resp *kmsg.DeleteShareGroupOffsetsResponse, del []group.ShareTopicPartitions, code int16) {
			done(step{resp, del, code})
		})
	})
	if code == 0 {
		code = got.code
	}
	if code != 0 {
		return failed(code)
	}
	if len(got.del) == 0 {
		return got.resp
	}
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = r.GroupID
	topicCodes := map[[16]byte]int16{}
	for _, t := range got.del {
		dt := kmsg.NewDeleteShareGroupStateRequestTopic()
		dt.TopicID = t.TopicID
		for _, part := range t.Partitions {
			dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			dp.Partition = part
			dt.Partitions = append(dt.Partitions, dp)
		}
		req.Topics = append(req.Topics, dt)
		topicCodes[t.TopicID] = persisterFailedCode
	}
	if res, err := p.DeleteState(ctx, req); err == nil {
		for _, t := range res.Topics {
			if _, asked := topicCodes[t.TopicID]; !asked {
				continue
			}
			topicCodes[t.TopicID] = 0
			for _, part := range t.Partitions {
				if part.ErrorCode != 0 {
					topicCodes[t.TopicID] = part.ErrorCode
					break
				}
			}
		}
	}
	var deleted []group.ShareTopicInfo
	var ok, bad []kmsg.DeleteShareGroupOffsetsResponseTopic
	for _, t := range got.del {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.TopicID = t.TopicName, t.TopicID
		if c := topicCodes[t.TopicID]; c != 0 {
			rt.ErrorCode, rt.ErrorMessage = c, kmsg.StringPtr(errorDescription(c))
			bad = append(bad, rt)
			continue
		}
		deleted = append(deleted, group.ShareTopicInfo{TopicID: t.TopicID, TopicName: t.TopicName})
		ok = append(ok, rt)
	}
	if len(deleted) > 0 {
		written, code := await(ctx, gc, r.GroupID, func(now time.Time, s *group.Shard, done func(int16)) group.Effects {
			return s.CompleteDeleteShareGroupOffsets(now, r.GroupID, deleted, done)
		})
		if code == 0 {
			code = written
		}
		if code != 0 {
			return failed(code)
		}
	}
	got.resp.Topics = append(append(ok, bad...), got.resp.Topics...)
	return got.resp
}

// errorDescription is Kafka's message for code.
func errorDescription(code int16) string {
	if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return err.Description
	}
	return ""
}

// optionalMessage is msg, nil when empty.
func optionalMessage(msg string) *string {
	if msg == "" {
		return nil
	}
	return &msg
}
