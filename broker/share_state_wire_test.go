package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// pollShare sends req until check accepts the response (a coordinator loading or
// __share_group_state being created answers a retriable code first), or fails at the
// deadline.
func pollShare[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request, check func(R) error) R {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cl.Request(ctx, req)
		cancel()
		if err == nil {
			if err = check(resp.(R)); err == nil {
				return resp.(R)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %d: %v", req.Key(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func shareInit(group string, id [16]byte, partition, stateEpoch int32, start int64) *kmsg.InitializeShareGroupStateRequest {
	r := kmsg.NewPtrInitializeShareGroupStateRequest()
	r.GroupID = group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = id
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = partition, stateEpoch, start
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func shareWrite(group string, id [16]byte, partition, stateEpoch, leaderEpoch int32, start int64, first, last int64) *kmsg.WriteShareGroupStateRequest {
	r := kmsg.NewPtrWriteShareGroupStateRequest()
	r.Version, r.GroupID = 1, group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = id
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount = partition, stateEpoch, leaderEpoch, start, 3
	b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
	b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = first, last, 2, 1
	p.StateBatches = append(p.StateBatches, b)
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func shareRead(group string, id [16]byte, partition, leaderEpoch int32) *kmsg.ReadShareGroupStateRequest {
	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = id
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = partition, leaderEpoch
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func codeIs(want int16, got int16) error {
	if got != want {
		return fmt.Errorf("error %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(want))
	}
	return nil
}

// The share coordinator's APIs 83–87 and FindCoordinator v6 key type 2 on the wire:
// state initialized, written, read back, fenced by older epochs, summarised,
// deleted, and still there after a restart (replayed from __share_group_state).
func TestShareCoordinator_Wire(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"share.coordinator.state.topic.num.partitions": "3"}
	b := startTestBroker(t, dir, props)
	cl := newClient(t, b)
	mustCreateTopic(t, newAdmin(t, b), "t", 2, nil)
	id := [16]byte(b.Image().Topic("t").ID)

	// FindCoordinator v6, key type 2: created on first need, answered with this node.
	key := coordinator.ShareCoordinatorKey("g", id, 0)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorType, find.CoordinatorKeys = 6, 2, []string{key, "g:not-a-uuid:0", "nocolons"}
	fr := pollShare(t, cl, find, func(r *kmsg.FindCoordinatorResponse) error {
		if len(r.Coordinators) != 3 {
			return fmt.Errorf("%d coordinators", len(r.Coordinators))
		}
		return codeIs(0, r.Coordinators[0].ErrorCode)
	})
	if c := fr.Coordinators[0]; c.NodeID != 0 || c.Key != key {
		t.Fatalf("coordinator %+v", c)
	}
	for _, c := range fr.Coordinators[1:] {
		if c.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("key %q: %v, want INVALID_REQUEST", c.Key, kerr.ErrorForCode(c.ErrorCode))
		}
	}
	st := b.Image().Topic(shareStateTopic)
	if st == nil || len(st.Partitions) != 3 {
		t.Fatalf("__share_group_state: %+v", st)
	}
	if cfg := b.Image().ResourceConfigs(metadata.ConfigResource{Type: metadata.TopicResource, Name: shareStateTopic}); cfg["cleanup.policy"] != "delete" || cfg["min.insync.replicas"] != "2" {
		t.Fatalf("__share_group_state configs %v", cfg)
	}
	old := kmsg.NewPtrFindCoordinatorRequest()
	old.Version, old.CoordinatorType, old.CoordinatorKeys = 5, 2, []string{key}
	v5 := kversion.Stable()
	v5.SetMaxKeyVersion(kmsg.FindCoordinator.Int16(), 5)
	if r := pollShare(t, newClient(t, b, kgo.MaxVersions(v5)), old, func(*kmsg.FindCoordinatorResponse) error { return nil }); len(r.Coordinators) != 1 ||
		r.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("key type 2 at v5: %+v", r.Coordinators)
	}

	pollShare(t, cl, shareInit("g", id, 0, 1, 5), func(r *kmsg.InitializeShareGroupStateResponse) error {
		return codeIs(0, r.Topics[0].Partitions[0].ErrorCode)
	})
	pollShare(t, cl, shareInit("g", id, 1, 1, 0), func(r *kmsg.InitializeShareGroupStateResponse) error {
		return codeIs(0, r.Topics[0].Partitions[0].ErrorCode)
	})
	pollShare(t, cl, shareWrite("g", id, 0, 1, 2, 5, 5, 9), func(r *kmsg.WriteShareGroupStateResponse) error {
		return codeIs(0, r.Topics[0].Partitions[0].ErrorCode)
	})
	checkState := func(cl *kgo.Client) {
		t.Helper()
		r := pollShare(t, cl, shareRead("g", id, 0, 2), func(r *kmsg.ReadShareGroupStateResponse) error {
			return codeIs(0, r.Topics[0].Partitions[0].ErrorCode)
		})
		p := r.Topics[0].Partitions[0]
		if p.StateEpoch != 1 || p.StartOffset != 5 || len(p.StateBatches) != 1 || p.StateBatches[0].FirstOffset != 5 ||
			p.StateBatches[0].LastOffset != 9 || p.StateBatches[0].DeliveryState != 2 {
			t.Fatalf("read %+v", p)
		}
	}
	checkState(cl)
	for _, tc := range []struct {
		name string
		req  kmsg.Request
		want int16
	}{
		{"read from an older leader epoch", shareRead("g", id, 0, 1), kerr.FencedLeaderEpoch.Code},
		{"write from an older leader epoch", shareWrite("g", id, 0, 1, 1, 5, 10, 10), kerr.FencedLeaderEpoch.Code},
		{"write of an older state epoch", shareWrite("g", id, 0, 0, 2, 5, 10, 10), kerr.FencedStateEpoch.Code},
		{"initialize with an older state epoch", shareInit("g", id, 0, 0, 0), kerr.FencedStateEpoch.Code},
		{"unknown topic", shareRead("g", [16]byte{9}, 0, 0), kerr.UnknownTopicOrPartition.Code},
		{"no such partition", shareInit("g", id, 7, 0, 0), kerr.UnknownTopicOrPartition.Code},
		{"empty group", shareRead("", id, 0, 0), kerr.InvalidGroupID.Code},
	} {
		ctx := testContext(t)
		resp, err := cl.Request(ctx, tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got int16
		switch r := resp.(type) {
		case *kmsg.ReadShareGroupStateResponse:
			got = r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.WriteShareGroupStateResponse:
			got = r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.InitializeShareGroupStateResponse:
			got = r.Topics[0].Partitions[0].ErrorCode
		}
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
	sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sum.Version, sum.GroupID = 1, "g"
	stp := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	stp.TopicID = id
	sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	stp.Partitions = append(stp.Partitions, sp)
	sum.Topics = append(sum.Topics, stp)
	sr := pollShare(t, cl, sum, func(r *kmsg.ReadShareGroupStateSummaryResponse) error {
		return codeIs(0, r.Topics[0].Partitions[0].ErrorCode)
	})
	if p := sr.Topics[0].Partitions[0]; p.StateEpoch != 1 || p.LeaderEpoch != 2 || p.StartOffset != 5 || p.DeliveryCompleteCount != 3 {
		t.Fatalf("summary %+v", p)
	}

	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = "g"
	dt := kmsg.NewDeleteShareGroupStateRequestTopic()
	dt.TopicID = id
	dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	dp.Partition = 1
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	pollShare(t, cl, del, func(r *kmsg.DeleteShareGroupStateResponse) error {
		return codeIs(0, r.Topics[0].Partitions[0].ErrorCode)
	})

	// A restart replays __share_group_state: partition 0's state is back, partition
	// 1's deleted.
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, props)
	cl = newClient(t, b)
	checkState(cl)
	r := pollShare(t, cl, shareRead("g", id, 1, 0), func(r *kmsg.ReadShareGroupStateResponse) error {
		return codeIs(0, r.Topics[0].Partitions[0].ErrorCode)
	})
	if p := r.Topics[0].Partitions[0]; p.StartOffset != -1 || p.StateEpoch != 0 {
		t.Fatalf("deleted state read back after a restart: %+v", p)
	}
}

// The share coordinator's APIs and FindCoordinator key type 2 need CLUSTER_ACTION
// on the cluster, as in Kafka.
func TestAuthorize_ShareCoordinatorAPIs(t *testing.T) {
	b := authzBroker(t)
	d := b.checkRequest(as("User:alice", shareRead("g", [16]byte{1}, 0, 0)))
	if d.answer == nil {
		t.Fatal("alice's ReadShareGroupState was let through")
	}
	if c := d.answer.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's ReadShareGroupState: %v", kerr.ErrorForCode(c))
	}
	w := b.checkRequest(as("User:alice", shareWrite("g", [16]byte{1}, 0, 0, 0, 0, 0, 0)))
	if w.answer == nil || w.answer.(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's WriteShareGroupState: %+v", w.answer)
	}
	if d := b.checkRequest(as("User:admin", shareRead("g", [16]byte{1}, 0, 0))); d.answer != nil {
		t.Fatal("a super user was refused")
	}
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorType, find.CoordinatorKeys = 6, 2, []string{"g:AAAAAAAAAAAAAAAAAAAAAA:0"}
	f := b.checkRequest(as("User:alice", find))
	if f.answer == nil || f.answer.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's FindCoordinator for a share key: %+v", f.answer)
	}
}
