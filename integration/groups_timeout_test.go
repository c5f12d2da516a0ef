package integration

// A coordinator write that times out and lands afterwards (offsets.commit.timeout.ms
// passes while a follower of the __consumer_offsets partition is cut off, so the high
// watermark stands still): the client is answered COORDINATOR_NOT_AVAILABLE, and once
// the follower is back the commit is what OffsetFetch shows, on the live coordinator
// and on the next one after a failover.

import (
	"context"
	"fmt"
	"testing"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOffsetAt fetches group's committed offset of topic's partition 0 at r's node alone.
func groupOffsetAt(ctx context.Context, r *rawTo, group, topic string) (int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = topic, []int32{0}
	g.Topics = append(g.Topics, gt)
	req.Groups = append(req.Groups, g)
	resp := r.do(ctx, req).(*kmsg.OffsetFetchResponse)
	code, topics := resp.ErrorCode, resp.Topics
	if len(resp.Groups) > 0 {
		code = resp.Groups[0].ErrorCode
		for _, t := range resp.Groups[0].Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return 0, kerr.ErrorForCode(p.ErrorCode)
				}
				return p.Offset, nil
			}
		}
	}
	if code != 0 {
		return 0, kerr.ErrorForCode(code)
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return 0, kerr.ErrorForCode(p.ErrorCode)
			}
			return p.Offset, nil
		}
	}
	return 0, fmt.Errorf("OffsetFetch answered no partition")
}

// waitFetched waits until r's node shows want as group's committed offset.
func waitFetched(t *testing.T, r *rawTo, group, topic string, want int64) {
	t.Helper()
	testwait.For(t, groupWait, func() error {
		got, err := groupOffsetAt(testContext(t), r, group, topic)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("committed offset %d, want %d", got, want)
		}
		return nil
	})
}

func TestGroupCoordinator_TimedOutCommitLandsLiveAndAfterFailover(t *testing.T) {
	t.Parallel()
	opts := append(groupOptions(), WithProperty("offsets.topic.num.partitions", "1"),
		WithProperty("offsets.commit.timeout.ms", "1000"))
	c := StartCluster(t, 3, opts...)
	ctx := testContext(t)
	const topic, group = "late-commit", "g-late-commit"
	c.CreateTopicRF(t, topic, 1, 3, nil)
	coord := coordinatorOf(t, c, 0, group)
	waitFullISR(t, c, "__consumer_offsets")
	// Cut off a follower of the coordinator's partition (not the controller, to keep
	// the metadata quiet): the high watermark stops until it is back.
	ctrl := c.Controller()
	follower := -1
	for i := range 3 {
		if i != coord && (follower < 0 || follower == ctrl) {
			follower = i
		}
	}
	raw := c.rawTo(t, coord)
	if code := commitRaw(ctx, raw, group, "", -1, topic, 3, "before"); code != 0 {
		t.Fatalf("first commit: %v", kerr.ErrorForCode(code))
	}
	c.Partition(follower)
	if code := commitRaw(ctx, raw, group, "", -1, topic, 5, "late"); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit while the HW stands still: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	if got, err := groupOffsetAt(ctx, raw, group, topic); err != nil || got != 3 {
		t.Fatalf("before the timed-out commit landed: %d, %v (want 3)", got, err)
	}
	c.Heal()
	waitFetched(t, raw, group, topic, 5) // landed: the live coordinator applies it

	c.Stop(coord)
	next := coordinatorOf(t, c, follower, group)
	if next == coord {
		t.Fatalf("the coordinator is still the stopped node %d", coord)
	}
	nraw := c.rawTo(t, next)
	waitFetched(t, nraw, group, topic, 5) // a load replays it too
	if code := commitRaw(ctx, nraw, group, "", -1, topic, 7, "after"); code != 0 {
		t.Fatalf("commit at the new coordinator: %v", kerr.ErrorForCode(code))
	}
	waitFetched(t, nraw, group, topic, 7)
}
