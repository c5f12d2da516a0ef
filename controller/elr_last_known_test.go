package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
)

// startLastKnownTest runs an active controller with eligible leader replicas on and
// Kafka's default min.insync.replicas (1): broker 1 unfenced, broker 2 fenced (down),
// topic t with partition 0 on [2,1], ISR [1] (2 fell out), led by 1, the only in-sync
// replica.
func startLastKnownTest(t *testing.T, sessionTimeout time.Duration, unclean bool) (*memQuorum, *Controller, context.Context) {
	t.Helper()
	q := newMemQuorum(t,
		metadata.ClusterRecord{ClusterID: "elr"},
		metadata.RegisterBrokerRecord{BrokerID: 1, IncarnationID: metadata.UuidFromBytes([16]byte{1})},
		metadata.RegisterBrokerRecord{BrokerID: 2, IncarnationID: metadata.UuidFromBytes([16]byte{2}), Fenced: true},
		metadata.TopicRecord{Name: "t", TopicID: elrTestTopic},
		metadata.PartitionRecord{TopicID: elrTestTopic, PartitionID: 0, Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1},
	)
	q.leader.Store(true)
	c := startController(t, q, sessionTimeout, func(cfg *Config) {
		cfg.ELREnabled = func(*metadata.Image) bool { return true }
		cfg.UncleanAllowed = func(*metadata.Image) func(string) bool { return func(string) bool { return unclean } }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return q, c, ctx
}

// restartUnclean registers a new process of broker 1 on its data directory (naming the
// incarnation it replaces) without a clean-shutdown epoch: after a kill -9.
func restartUnclean(ctx context.Context, c *Controller) (int64, error) {
	return c.Register(ctx, Registration{BrokerID: 1, Incarnation: metadata.UuidFromBytes([16]byte{9}),
		Previous: metadata.UuidFromBytes([16]byte{1}), PreviousBrokerEpoch: -1})
}

// wantLeader checks partition t-0 of im, described as "leader L isr [..] elr [..] last
// known [..]".
func wantLeader(t *testing.T, im *metadata.Image, want string) {
	t.Helper()
	p := im.Topic("t").Partitions[0]
	if got := fmt.Sprintf("leader %d isr %v elr %v last known %v", p.Leader, p.ISR, p.ELR, p.LastKnownELR); got != want {
		t.Fatalf("partition: %s; want %s", got, want)
	}
}

// A kill -9 of the only in-sync replica, noticed by its session expiring: the fence
// leaves the partition leaderless with the replica in the ELR and as the last known
// leader; the restarted process registers after an unclean shutdown (no clean-shutdown
// epoch), which takes it out of the ELR; once unfenced it leads again.
func TestELR_KilledOnlyInSyncReplicaLeadsAgain(t *testing.T) {
	q, c, ctx := startLastKnownTest(t, 300*time.Millisecond, false)
	testwait.For(t, 10*time.Second, func() error {
		if p := q.Image().Topic("t").Partitions[0]; p.Leader != -1 {
			return fmt.Errorf("leader %d: broker 1's session has not expired yet", p.Leader)
		}
		return nil
	})
	wantLeader(t, q.Image(), "leader -1 isr [] elr [1] last known [1]")

	epoch, err := restartUnclean(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	wantLeader(t, q.Image(), "leader -1 isr [] elr [] last known [1]")

	im, err := c.Unfence(ctx, 1, epoch)
	if err != nil {
		t.Fatal(err)
	}
	wantLeader(t, im, "leader 1 isr [1] elr [] last known []")
}

// The killed replica restarts before its session expires: the registration fences the
// old incarnation and records the unclean shutdown in one entry (ISR and ELR empty, the
// replica the last known leader). Replica 2, neither in the ISR nor the ELR, returns
// first: it is not elected, and the last known leader is, on its unfence. With
// unclean.leader.election.enable replica 2 is elected uncleanly instead (Kafka: the last
// known leader must be acceptable, and it is still down), and the last known leader is
// forgotten.
func TestELR_RestartedBeforeSessionExpiry(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		t.Run(fmt.Sprintf("unclean=%v", unclean), func(t *testing.T) {
			q, c, ctx := startLastKnownTest(t, time.Minute, unclean)
			epoch, err := restartUnclean(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			wantLeader(t, q.Image(), "leader -1 isr [] elr [] last known [1]")

			im, err := c.Unfence(ctx, 2, q.Image().Brokers[2].Epoch)
			if err != nil {
				t.Fatal(err)
			}
			if unclean {
				wantLeader(t, im, "leader 2 isr [2] elr [] last known []")
				return
			}
			wantLeader(t, im, "leader -1 isr [] elr [] last known [1]")
			if im, err = c.Unfence(ctx, 1, epoch); err != nil {
				t.Fatal(err)
			}
			wantLeader(t, im, "leader 1 isr [1] elr [] last known []")
		})
	}
}
