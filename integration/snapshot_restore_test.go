package integration

// Restarting every node: the metadata image comes back from the Raft snapshot plus the
// log written after it.

import (
	"fmt"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestCluster_SnapshotRestore forces a snapshot on every node, writes more metadata
// after it, and restarts the whole cluster twice.
//
// Graceful (Stop all, Restart all). The restarted nodes are first kept cut off from
// each other: without a leader no commit index is known and nothing is replayed, so
// each node's image must be exactly the snapshotted one, offset included. Healed, they
// replay the log after the snapshot and then write new entries: each broker registers
// a new incarnation (its record's offset is its broker epoch, so every epoch must be
// above the pre-restart offset). Topics, ids, assignments, configs and broker ids must
// be those from before the restart; leaders and ISRs are not compared, as the
// controlled shutdowns moved them and the restarted brokers' registrations and P4's ISR
// changes move them again.
//
// Crash (Kill all, Restart all) from a settled cluster. Nothing is written on the way
// down, and after the restart nothing can be written for a while: every broker is
// unfenced in the image with a session the new controller starts afresh, so the new
// incarnations' registrations are refused (DUPLICATE_BROKER_REGISTRATION) until that
// session expires, and no other controller duty or ISR change is due. Every node must
// therefore reach an image identical to the one before the crash, offset included.
func TestCluster_SnapshotRestore(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	all := []int{0, 1, 2}
	c.CreateTopicRF(t, "snap-rf3", 4, 3, map[string]*string{"retention.ms": ptr("86400000"), "segment.bytes": ptr("1048576")})
	c.CreateTopicRF(t, "snap-rf2", 2, 2, nil)
	c.CreateTopicRF(t, "snap-rf1", 3, 1, map[string]*string{"max.message.bytes": ptr("65536")})
	snapshotted := c.WaitConverged()
	for _, i := range all {
		if err := c.Node(i).Snapshot(); err != nil {
			t.Fatalf("node-%d: snapshot: %v", i, err)
		}
	}
	c.CreateTopicRF(t, "after-snap-rf3", 2, 3, map[string]*string{"retention.bytes": ptr("1000000")})
	c.CreateTopicRF(t, "after-snap-rf1", 1, 1, nil)
	written := c.WaitConverged()
	if written.Offset <= snapshotted.Offset {
		t.Fatalf("no metadata written after the snapshot at %d", snapshotted.Offset)
	}

	// Graceful.
	for _, i := range all {
		c.Stop(i)
	}
	before := c.Image(0)
	for _, i := range all[1:] {
		if im := c.Image(i); im.Offset > before.Offset {
			before = im
		}
	}
	if err := sameTopicsAndConfigs(written, before); err != nil {
		t.Fatalf("the controlled shutdowns changed more than leaders and ISRs: %v", err)
	}
	t.Logf("snapshot at offset %d, last write at %d, stopped at %d", snapshotted.Offset, written.Offset, before.Offset)
	for _, i := range all {
		c.Partition(i)
	}
	c.Start(all...)
	for _, i := range all {
		if im := c.Image(i); !im.equal(snapshotted) {
			t.Fatalf("node-%d restarted alone does not hold the snapshotted image: %s", i, snapshotted.diff(im))
		}
	}
	c.Heal()
	c.WaitReady()
	after := c.WaitConverged()
	if err := sameTopicsAndConfigs(before, after); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	for _, id := range after.brokerIDs() {
		b, old := after.Brokers[id], before.Brokers[id]
		if b.Fenced || b.IncarnationID == old.IncarnationID || uint64(b.Epoch) <= before.Offset || !slices.Equal(b.Listeners, old.Listeners) {
			t.Fatalf("broker %d after the restart: %+v; before: %+v at offset %d", id, b, old, before.Offset)
		}
	}
	if !slices.Equal(after.brokerIDs(), before.brokerIDs()) {
		t.Fatalf("brokers %v after the restart, %v before", after.brokerIDs(), before.brokerIDs())
	}

	// Crash, from a settled cluster: every partition led, every ISR whole again (the
	// data plane re-adds the restarted followers), and nothing left to write.
	var settled imageView
	testwait.For(t, convergeTimeout, func() error {
		settled = c.WaitConverged()
		for _, name := range settled.topicNames() {
			for _, p := range settled.Topics[name].Partitions {
				if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
					return fmt.Errorf("%s %s is not settled", name, p)
				}
			}
		}
		return nil
	})
	for _, i := range all {
		c.Kill(i)
	}
	crashed := c.Image(0)
	for _, i := range all[1:] {
		if im := c.Image(i); !im.equal(crashed) {
			t.Fatalf("node-%d changed while the nodes were killed: %s", i, crashed.diff(im))
		}
	}
	c.Start(all...)
	// Poll tightly: the window ends when the old sessions expire, sessionTimeout after
	// the new controller takes over.
	pending := slices.Clone(all)
	deadline := time.Now().Add(convergeTimeout)
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("nodes %v did not replay up to offset %d", pending, crashed.Offset)
		}
		for _, i := range slices.Clone(pending) {
			im := c.Image(i)
			switch {
			case im.Offset < crashed.Offset:
				continue
			case im.Offset > crashed.Offset:
				t.Fatalf("node-%d is at offset %d before it could be compared at %d: %s", i, im.Offset, crashed.Offset, crashed.diff(im))
			case !im.equal(crashed):
				t.Fatalf("node-%d replayed to offset %d with a different image: %s", i, im.Offset, crashed.diff(im))
			}
			pending = slices.DeleteFunc(pending, func(x int) bool { return x == i })
		}
		runtime.Gosched()
	}
}

// sameTopicsAndConfigs compares what a restart must keep: cluster id, topics with ids
// and replica assignments, configs, and registered broker ids.
func sameTopicsAndConfigs(want, got imageView) error {
	if got.ClusterID != want.ClusterID {
		return fmt.Errorf("cluster id %q, expected %q", got.ClusterID, want.ClusterID)
	}
	if !slices.Equal(got.brokerIDs(), want.brokerIDs()) {
		return fmt.Errorf("brokers %v, expected %v", got.brokerIDs(), want.brokerIDs())
	}
	if !slices.Equal(got.topicNames(), want.topicNames()) {
		return fmt.Errorf("topics %v, expected %v", got.topicNames(), want.topicNames())
	}
	for _, name := range want.topicNames() {
		if err := checkTopicIntact(want, got, name); err != nil {
			return err
		}
	}
	if !slices.EqualFunc(got.Configs, want.Configs, func(a, b metadata.ConfigEntry) bool { return a == b }) {
		return fmt.Errorf("configs %v, expected %v", got.Configs, want.Configs)
	}
	return nil
}

func ptr(s string) *string { return &s }
