package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/internal/testwait"
)

// TestControllerWriteReachesEveryBrokerAtOnce: the followers learn the commit of the
// controller's last write from the barrier after it (raft_commit_nudge.go), not from
// hashicorp/raft's CommitTimeout round: with that round an hour long, a topic created
// through a broker that is not the controller, when nothing else is written, is in
// every broker's Metadata answer. And the barrier, which a follower sees committed only
// at the next round, does not hold their readers: no broker counts itself behind
// (metadataBehind holds Metadata and Produce requests), though its log ends in an entry
// it has not applied.
//
// Only the follower whose acknowledgement commits the last barrier is sure to hold it
// uncommitted: the leader replicates to each follower one AppendEntries at a time, so
// on a loaded machine the other follower's copy of the barrier may leave only after
// that acknowledgement, carrying its commit. The test asks for one such follower, not
// for both.
func TestControllerWriteReachesEveryBrokerAtOnce(t *testing.T) {
	saved := raftCommitTimeout
	raftCommitTimeout = time.Hour
	t.Cleanup(func() { raftCommitTimeout = saved })
	c := startTestCluster(t, 3, 3, nil)
	via := c.notController()
	adm := newAdmin(t, via)
	for _, topic := range []string{"first", "second"} {
		resp, err := adm.CreateTopic(testContext(t), 1, 3, nil, topic)
		if err != nil || resp.Err != nil {
			t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
		}
		for i, b := range c.brokers {
			other := newAdmin(t, b)
			testwait.ForWhat(t, 20*time.Second, fmt.Sprintf("topic %s in broker %d's Metadata", topic, i), func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				md, err := other.Metadata(ctx, topic)
				if err != nil {
					return err
				}
				if td, ok := md.Topics[topic]; !ok || td.Err != nil || len(td.Partitions) != 1 {
					return fmt.Errorf("not there yet: %+v", md.Topics[topic])
				}
				return nil
			})
		}
	}
	waiting := 0
	for i, b := range c.brokers {
		if b.IsController() {
			continue
		}
		testwait.Until(t, 20*time.Second, fmt.Sprintf("broker %d not behind", i), func() bool { return !b.metadataBehind() })
		last, applied := b.raft.raft.LastIndex(), b.raft.raft.AppliedIndex()
		if last > applied {
			waiting++
		} else {
			t.Logf("broker %d: log ends at %d, applied %d: the barrier reached it committed", i, last, applied)
		}
	}
	if waiting == 0 {
		t.Errorf("no follower's log ends in a barrier waiting for its commit: the test shows nothing")
	}
}

// TestReadableIndexSkipsBarriers: the index readers wait for skips barriers and
// no-ops, and falls back within a deleted range.
func TestReadableIndexSkipsBarriers(t *testing.T) {
	var r readableIndex
	r.stored([]*raft.Log{{Index: 1, Type: raft.LogNoop}, {Index: 2, Type: raft.LogCommand}, {Index: 3, Type: raft.LogBarrier}})
	if got := r.get(); got != 2 {
		t.Fatalf("after a command and a barrier: %d, want 2", got)
	}
	r.stored([]*raft.Log{{Index: 4, Type: raft.LogConfiguration}, {Index: 5, Type: raft.LogBarrier}})
	if got := r.get(); got != 4 {
		t.Fatalf("after a configuration: %d, want 4", got)
	}
	r.deleted(1, 2) // a compaction below it
	if got := r.get(); got != 4 {
		t.Fatalf("after a compaction below: %d, want 4", got)
	}
	r.deleted(4, 5) // a conflict truncates the tail
	if got := r.get(); got != 3 {
		t.Fatalf("after a truncation: %d, want 3", got)
	}
}
