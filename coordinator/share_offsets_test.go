package coordinator

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// refusingPersister answers InitializeShareGroupState with initCode for the partitions
// in refuse (0 for the others), and fails every other call as a share coordinator that
// cannot be reached.
type refusingPersister struct {
	refuse   map[int32]bool
	initCode int16
}

var errUnreachable = errors.New("share coordinator unreachable")

func (p refusingPersister) InitializeState(_ context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, part := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = part.Partition
			if p.refuse[part.Partition] {
				rp.ErrorCode = p.initCode
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (refusingPersister) DeleteState(context.Context, *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	return nil, errUnreachable
}

func (refusingPersister) ReadStateSummary(context.Context, *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	return nil, errUnreachable
}

// sharePartitionsOn reads group id's share state partitions on its shard.
func sharePartitionsOn(t *testing.T, gc *GroupCoordinator, id string) string {
	t.Helper()
	got, code := await(context.Background(), gc, id, func(_ time.Time, s *group.Shard, done func(string)) group.Effects {
		g := s.ShareGroup(id)
		if g == nil {
			done("no group")
			return group.Effects{}
		}
		in, ing, del := g.SharePartitions()
		done(fmt.Sprintf("%d %v %d", len(in), ing, len(del)))
		return group.Effects{}
	})
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	return got
}

// When the share coordinators refuse or cannot be reached: an altered partition the
// share coordinator refused is answered with its code and leaves initializing, the
// others are initialized; a describe reads start offset -1; a delete answers the topic
// UNKNOWN_SERVER_ERROR and keeps it deleting, for a later attempt. A group whose
// partition is not served here is NOT_COORDINATOR; an empty group id INVALID_GROUP_ID.
func TestShareOffsetsWhenThePersisterFails(t *testing.T) {
	gc, away := servingGroupCoordinator(t, "g")
	topicID := [16]byte{15: 9}
	im := ShareOffsetsImage{
		Topics: group.ConsumerTopicMap{"t": {ID: topicID, Name: "t", Partitions: 2}},
		Names:  func(id [16]byte) (string, bool) { return "t", id == topicID },
	}
	p := refusingPersister{refuse: map[int32]bool{1: true}, initCode: kerr.FencedStateEpoch.Code}
	ctx := context.Background()

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "g"
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 3}, {Partition: 1, StartOffset: 4}}}}
	resp := gc.AlterShareGroupOffsets(ctx, alter, p, im)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 ||
		resp.Topics[0].Partitions[1].ErrorCode != kerr.FencedStateEpoch.Code || resp.Topics[0].TopicID != topicID {
		t.Fatalf("alter %+v", resp)
	}
	if got := sharePartitionsOn(t, gc, "g"); got != "1 [] 0" {
		t.Fatalf("after a partly refused alter (initialized, initializing, deleting): %s", got)
	}

	describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	describe.Version = 1
	describe.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g"}, {GroupID: ""}, {GroupID: away}}
	d := gc.DescribeShareGroupOffsets(ctx, describe, p, im)
	if len(d.Groups) != 3 || d.Groups[0].ErrorCode != 0 || len(d.Groups[0].Topics) != 1 || d.Groups[0].Topics[0].Partitions[0].StartOffset != -1 ||
		d.Groups[0].Topics[0].Partitions[0].Lag != -1 || d.Groups[1].ErrorCode != kerr.InvalidGroupID.Code || d.Groups[2].ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("describe %+v", d.Groups)
	}

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "g"
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}
	dr := gc.DeleteShareGroupOffsets(ctx, del, p, im)
	if dr.ErrorCode != 0 || len(dr.Topics) != 1 || dr.Topics[0].ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("delete %+v", dr)
	}
	if got := sharePartitionsOn(t, gc, "g"); got != "0 [] 1" {
		t.Fatalf("after a failed delete: %s", got)
	}
	alter.GroupID = away
	if resp := gc.AlterShareGroupOffsets(ctx, alter, p, im); resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("alter away: %+v", resp)
	}
}
