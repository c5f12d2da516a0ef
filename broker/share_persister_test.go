package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The persister creates __share_group_state on first need and waits out the load of
// the coordinator's partition itself: its first call succeeds. Its answer keeps the
// request's order over topics and partitions; an empty group is INVALID_GROUP_ID; a
// context already done is an error.
func TestSharePersister_FirstCallAndOrder(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"share.coordinator.state.topic.num.partitions": "4"})
	adm := newAdmin(t, b)
	mustCreateTopic(t, adm, "a", 3, nil)
	mustCreateTopic(t, adm, "b", 2, nil)
	ids := [][16]byte{[16]byte(b.Image().Topic("a").ID), [16]byte(b.Image().Topic("b").ID)}
	if b.Image().Topic(shareStateTopic) != nil {
		t.Fatal("__share_group_state exists before any share state")
	}
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = "g"
	for i, id := range ids {
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = id
		for p := int32(2 - i); p >= 0; p-- {
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset = p, 1, 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	resp, err := b.SharePersister().InitializeState(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics", len(resp.Topics))
	}
	for i, rt := range resp.Topics {
		if rt.TopicID != ids[i] || len(rt.Partitions) != len(req.Topics[i].Partitions) {
			t.Fatalf("topic %d: %+v", i, rt)
		}
		for j, rp := range rt.Partitions {
			if rp.Partition != req.Topics[i].Partitions[j].Partition || rp.ErrorCode != 0 {
				t.Fatalf("topic %d answer %d: partition %d, %v", i, j, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	if b.Image().Topic(shareStateTopic) == nil {
		t.Fatal("__share_group_state was not created")
	}

	read := kmsg.NewPtrReadShareGroupStateRequest()
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = ids[0]
	rt.Partitions = append(rt.Partitions, kmsg.NewReadShareGroupStateRequestTopicPartition())
	read.Topics = append(read.Topics, rt)
	r, err := b.SharePersister().ReadState(ctx, read) // no group id
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group: %v", kerr.ErrorForCode(c))
	}
	read.GroupID = "g"
	r, err = b.SharePersister().ReadState(ctx, read)
	if err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 || r.Topics[0].Partitions[0].StateEpoch != 1 {
		t.Fatalf("read: %v %+v", err, r)
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := b.SharePersister().ReadState(done, read); !errors.Is(err, context.Canceled) {
		t.Fatalf("a done context: %v", err)
	}
}

// BenchmarkSharePersisterWrite measures WriteShareGroupState through the persister on
// one node (in-process coordinator, acks=all on a one-replica __share_group_state):
// each op is one write of one share partition, answered once committed.
//
//	go test ./broker -run '^$' -bench BenchmarkSharePersisterWrite -benchtime 2s
func BenchmarkSharePersisterWrite(b *testing.B) {
	br := startTestBroker(b, "", map[string]string{"share.coordinator.state.topic.num.partitions": "1"})
	mustCreateTopic(b, newAdmin(b, br), "t", 1, nil)
	id := [16]byte(br.Image().Topic("t").ID)
	ctx := testContext(b)
	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = "g"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = id
	it.Partitions = append(it.Partitions, kmsg.NewInitializeShareGroupStateRequestTopicPartition())
	init.Topics = append(init.Topics, it)
	if r, err := br.SharePersister().InitializeState(ctx, init); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		b.Fatalf("initialize: %v %+v", err, r)
	}
	w := kmsg.NewPtrWriteShareGroupStateRequest()
	w.GroupID = "g"
	wt := kmsg.NewWriteShareGroupStateRequestTopic()
	wt.TopicID = id
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.LeaderEpoch = 0
	sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
	sb.DeliveryState, sb.DeliveryCount = 2, 1
	wp.StateBatches = append(wp.StateBatches, sb)
	wt.Partitions = append(wt.Partitions, wp)
	w.Topics = append(w.Topics, wt)
	b.ResetTimer()
	for i := range b.N {
		off := int64(i)
		w.Topics[0].Partitions[0].StartOffset = off
		w.Topics[0].Partitions[0].StateBatches[0].FirstOffset = off
		w.Topics[0].Partitions[0].StateBatches[0].LastOffset = off
		r, err := br.SharePersister().WriteState(ctx, w)
		if err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
			b.Fatalf("write %d: %v %+v", i, err, r)
		}
	}
}
