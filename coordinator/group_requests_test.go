package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func recvResponse(t *testing.T, ch <-chan kmsg.Response) kmsg.Response {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	panic("unreachable")
}

// The lists answer from every serving shard (an empty list, not none), with
// COORDINATOR_LOAD_IN_PROGRESS while a partition still loads.
func TestListsAnswerLoadInProgressWhileLoading(t *testing.T) {
	gc := NewGroupCoordinator(GroupConfig{Group: group.DefaultConfig(), Partitions: func() int32 { return 2 }})
	t.Cleanup(gc.Close)
	tc := NewTxnCoordinator(TxnConfig{Txn: txn.DefaultConfig(), Partitions: func() int32 { return 2 }})
	t.Cleanup(tc.Close)
	loading := newFakeLog(1)
	appendRecords(t, loading, Record{Key: []byte("k"), Value: []byte("v")})
	loading.set(func(f *fakeLog) { f.hw = 0 }) // the high watermark has not reached the log end
	logs := map[int32]*fakeLog{0: newFakeLog(1), 1: loading}
	spec := func(p int32) (LoadSpec, bool) { return LoadSpec{Log: logs[p]}, true }
	gc.Reconcile(map[int32]int32{0: 1, 1: 1}, spec)
	tc.Reconcile(map[int32]int32{0: 1, 1: 1}, spec)
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(gc.Serving()) == 1 && len(tc.Serving()) == 1 })

	lg := recvResponse(t, gc.ListGroups(kmsg.NewPtrListGroupsRequest())).(*kmsg.ListGroupsResponse)
	if lg.ErrorCode != kerr.CoordinatorLoadInProgress.Code || lg.Groups == nil {
		t.Fatalf("ListGroups while loading: code %d groups %v", lg.ErrorCode, lg.Groups)
	}
	lr := kmsg.NewPtrListTransactionsRequest()
	lr.StateFilters = []string{"Ongoing", "Bogus"}
	lt := recvResponse(t, tc.ListTransactions(lr)).(*kmsg.ListTransactionsResponse)
	if lt.ErrorCode != kerr.CoordinatorLoadInProgress.Code || lt.TransactionStates == nil || fmt.Sprint(lt.UnknownStateFilters) != "[Bogus]" {
		t.Fatalf("ListTransactions while loading: %+v", lt)
	}

	loading.set(func(f *fakeLog) { f.hw = f.leo })
	testwait.Until(t, 10*time.Second, "both serving", func() bool { return len(gc.Serving()) == 2 })
	lg = recvResponse(t, gc.ListGroups(kmsg.NewPtrListGroupsRequest())).(*kmsg.ListGroupsResponse)
	if lg.ErrorCode != 0 {
		t.Fatalf("ListGroups once loaded: code %d", lg.ErrorCode)
	}
}

// OffsetFetch answers each group of v8+ on its own; before v8 one group's answer is
// spread over the topics, and v0-1, which have no group error, carry it on every
// requested partition.
func TestOffsetFetchAnswersInTheRequestVersion(t *testing.T) {
	gc := NewGroupCoordinator(GroupConfig{Group: group.DefaultConfig(), Partitions: func() int32 { return 0 }})
	t.Cleanup(gc.Close)

	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	for _, id := range []string{"", "g"} {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = id
		r.Groups = append(r.Groups, g)
	}
	resp := recvResponse(t, gc.OffsetFetch(r)).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 2 || resp.Groups[0].ErrorCode != kerr.InvalidGroupID.Code || resp.Groups[1].ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("v8: %+v", resp.Groups)
	}

	r = kmsg.NewPtrOffsetFetchRequest()
	r.Version, r.Group = 1, "g"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0, 1}
	r.Topics = append(r.Topics, rt)
	resp = recvResponse(t, gc.OffsetFetch(r)).(*kmsg.OffsetFetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("v1: %+v", resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.NotCoordinator.Code || p.Offset != -1 {
			t.Fatalf("v1 partition %+v", p)
		}
	}
	r.Version = 2
	resp = recvResponse(t, gc.OffsetFetch(r)).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != kerr.NotCoordinator.Code || len(resp.Topics) != 0 {
		t.Fatalf("v2: code %d topics %+v", resp.ErrorCode, resp.Topics)
	}
}

// Each group or transactional id is answered on its own: an empty group id is
// INVALID_GROUP_ID, one whose partition is not served here NOT_COORDINATOR (with -1
// for a transaction's producer id, epoch and start), and a served one by its shard.
func TestPerIDRequestsAnswerEachID(t *testing.T) {
	gc := NewGroupCoordinator(GroupConfig{Group: group.DefaultConfig(), Partitions: func() int32 { return 2 }})
	t.Cleanup(gc.Close)
	tc := NewTxnCoordinator(TxnConfig{Txn: txn.DefaultConfig(), Partitions: func() int32 { return 2 }})
	t.Cleanup(tc.Close)
	served := group.PartitionFor("here", 2)
	spec := func(int32) (LoadSpec, bool) { return LoadSpec{Log: newFakeLog(1)}, true }
	gc.Reconcile(map[int32]int32{served: 1}, spec)
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(gc.Serving()) == 1 })
	away := "g0"
	for i := 0; group.PartitionFor(away, 2) == served; i++ {
		away = fmt.Sprint("g", i)
	}

	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version, dr.IncludeAuthorizedOperations, dr.Groups = 5, true, []string{"here", away}
	desc := recvResponse(t, gc.DescribeGroups(dr, func(string) int32 { return 42 })).(*kmsg.DescribeGroupsResponse)
	if len(desc.Groups) != 2 || desc.Groups[0].ErrorCode != 0 || desc.Groups[0].State != "Dead" ||
		desc.Groups[0].AuthorizedOperations != 42 || desc.Groups[1].ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("DescribeGroups: %+v", desc.Groups)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"", away, "here"}
	dg := recvResponse(t, gc.DeleteGroups(del)).(*kmsg.DeleteGroupsResponse)
	if len(dg.Groups) != 3 || dg.Groups[0].ErrorCode != kerr.InvalidGroupID.Code || dg.Groups[1].ErrorCode != kerr.NotCoordinator.Code ||
		dg.Groups[2].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DeleteGroups: %+v", dg.Groups)
	}

	tr := kmsg.NewPtrDescribeTransactionsRequest()
	tr.TransactionalIDs = []string{"t"}
	dt := recvResponse(t, tc.DescribeTransactions(tr)).(*kmsg.DescribeTransactionsResponse)
	if st := dt.TransactionStates; len(st) != 1 || st[0].ErrorCode != kerr.NotCoordinator.Code || st[0].ProducerID != -1 ||
		st[0].ProducerEpoch != -1 || st[0].StartTimestamp != -1 {
		t.Fatalf("DescribeTransactions: %+v", dt.TransactionStates)
	}
}

// OffsetCommit answers partitions of unknown topics UNKNOWN_TOPIC_OR_PARTITION without
// asking the shard; the others go to the group's shard (here: not served, so the
// request's refusal).
func TestOffsetCommitRefusesUnknownPartitions(t *testing.T) {
	gc := NewGroupCoordinator(GroupConfig{Group: group.DefaultConfig(), Partitions: func() int32 { return 1 }})
	t.Cleanup(gc.Close)
	known := func(topic string, partition int32) bool { return topic == "t" && partition == 0 }
	failed := func(code int16) kmsg.Response {
		r := kmsg.NewPtrOffsetCommitResponse()
		g := kmsg.NewOffsetCommitResponseTopic()
		g.Topic = fmt.Sprint("refused ", code)
		r.Topics = append(r.Topics, g)
		return r
	}
	commit := func(parts map[string][]int32) *kmsg.OffsetCommitResponse {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group = "g"
		for _, topic := range []string{"t", "u"} {
			if ps, ok := parts[topic]; ok {
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic = topic
				for _, p := range ps {
					rp := kmsg.NewOffsetCommitRequestTopicPartition()
					rp.Partition = p
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return recvResponse(t, gc.OffsetCommit(r, known, failed)).(*kmsg.OffsetCommitResponse)
	}
	all := commit(map[string][]int32{"t": {1}, "u": {0}})
	if len(all.Topics) != 2 || all.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
		all.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("every partition unknown: %+v", all.Topics)
	}
	some := commit(map[string][]int32{"t": {0, 1}})
	if len(some.Topics) != 1 || some.Topics[0].Topic != fmt.Sprint("refused ", kerr.NotCoordinator.Code) {
		t.Fatalf("a known partition: %+v", some.Topics)
	}
}

// A TxnOffsetCommit is appended as its producer's transactional batch with the KIP-890
// check the broker asked for.
func TestTxnOffsetCommitCarriesItsVerification(t *testing.T) {
	gc := NewGroupCoordinator(GroupConfig{Group: group.DefaultConfig(), Partitions: func() int32 { return 1 }})
	t.Cleanup(gc.Close)
	log := newFakeLog(1)
	log.set(func(f *fakeLog) { f.autoCommit = true })
	gc.Reconcile(map[int32]int32{0: 1}, func(int32) (LoadSpec, bool) { return LoadSpec{Log: log}, true })
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(gc.Serving()) == 1 })
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "t", "g", 9, 0
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "topic"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 5
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	ch := make(chan kmsg.Response, 1)
	gc.TxnOffsetCommit(0, r, Verification{Verify: true}, func(resp kmsg.Response) { ch <- resp }, func(code int16) { t.Errorf("refused: %d", code) })
	resp := recvResponse(t, ch).(*kmsg.TxnOffsetCommitResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("answer %+v", resp.Topics)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.txnWrites) != 1 || !log.txnWrites[0].verify {
		t.Fatalf("transactional writes %+v", log.txnWrites)
	}
}
