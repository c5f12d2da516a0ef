package group

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rebalanceLog records the steps Config.OnRebalance is told, as "classic done 2s".
type rebalanceLog []string

func (l *rebalanceLog) config() Config {
	cfg := testConfig()
	cfg.OnRebalance = func(r Rebalance) {
		step := "bumped"
		if r.Completed {
			step = "done " + r.Took.String()
		}
		*l = append(*l, r.GroupType+" "+step)
	}
	return cfg
}

// A classic group's rebalance is told once it is Stable again, with the time since it
// went to PreparingRebalance; a rebalance of a Stable group counts from its own
// start, not the group's first (the group is Stable once the leader's assignment is
// written).
func TestRebalancesClassic(t *testing.T) {
	var log rebalanceLog
	h := newHarness(t, log.config())
	ids, gen := h.stableGroup("g", 2)
	if fmt.Sprint(log) != "[classic done 0s]" {
		t.Fatalf("first rebalance: %v", log)
	}
	h.advance(time.Second)
	third := h.join("g", "")
	h.advance(2 * time.Second)
	h.join("g", ids[0])
	h.join("g", ids[1])
	if !third.done() {
		t.Fatal("the join phase did not complete")
	}
	h.advance(time.Second)
	leader := third.resp.LeaderID
	if s := h.sync("g", leader, gen+1, map[string]string{}); !s.done() || h.state("g") != "Stable" {
		t.Fatalf("second rebalance did not complete: %+v", s.resp)
	}
	if fmt.Sprint(log) != "[classic done 0s classic done 3s]" {
		t.Fatalf("rebalances %v", log)
	}
}

// A consumer group's epoch bumps are told as they happen; the rebalance is done once
// the group is Stable, timed from the first bump since it last was; a group that
// empties ends its rebalance untold.
func TestRebalancesConsumer(t *testing.T) {
	var log rebalanceLog
	h := newHarness(t, log.config())
	topics := cgTopics(4)
	cgShardHeartbeat(h, topics, cgJoinRequest("m1", "a"))
	if fmt.Sprint(log) != "[consumer bumped consumer done 0s]" {
		t.Fatalf("first join: %v", log)
	}
	log = nil
	cgShardHeartbeat(h, topics, cgJoinRequest("m2", "a"))
	h.advance(5 * time.Second)
	v1, _ := h.s.ConsumerGroup("g").Member("m1")
	cgShardHeartbeat(h, topics, cgHBRequest("m1", 1, v1.Assigned)) // revokes
	v1, _ = h.s.ConsumerGroup("g").Member("m1")
	cgShardHeartbeat(h, topics, cgHBRequest("m1", 1, v1.Assigned)) // revoked: epoch 2
	v2, _ := h.s.ConsumerGroup("g").Member("m2")
	cgShardHeartbeat(h, topics, cgHBRequest("m2", 2, v2.Assigned))
	if st := h.s.ConsumerGroup("g").State(); st != ConsumerGroupStable {
		t.Fatalf("state %v", st)
	}
	if fmt.Sprint(log) != "[consumer bumped consumer done 5s]" {
		t.Fatalf("second member: %v", log)
	}
	log = nil
	cgShardHeartbeat(h, topics, cgHBRequest("m1", LeaveMemberEpoch, nil))
	cgShardHeartbeat(h, topics, cgHBRequest("m2", LeaveMemberEpoch, nil))
	if fmt.Sprint(log) != "[consumer bumped consumer bumped]" || len(h.s.rebalanceStarts) != 0 {
		t.Fatalf("leaves: %v, clocks %v", log, h.s.rebalanceStarts)
	}
}

// Summaries lists each group once with its type, state and members: a consumer group
// whose id also holds a simple consumer's offsets is a consumer group.
func TestSummaries(t *testing.T) {
	h := newHarness(t, testConfig())
	h.stableGroup("classic", 2)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	h.run(h.s.OffsetCommit(h.now, commit, kmsg.NewPtrOffsetCommitResponse(), func(kmsg.Response) {}))
	commit.Group = "simple"
	h.run(h.s.OffsetCommit(h.now, commit, kmsg.NewPtrOffsetCommitResponse(), func(kmsg.Response) {}))
	cgShardHeartbeat(h, cgTopics(2), cgJoinRequest("m1", "a"))
	var got []string
	for _, s := range h.s.Summaries() {
		got = append(got, fmt.Sprintf("%s/%s/%s/%d", s.Group, s.Type, s.State, s.Members))
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "classic/classic/Stable/2 g/consumer/Stable/1 simple/classic/Empty/0" {
		t.Fatalf("summaries %v", got)
	}
}
