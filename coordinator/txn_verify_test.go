package coordinator

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The coordinator's verification answers become Kafka's produce codes.
func TestProduceVerifyCode(t *testing.T) {
	for _, tc := range []struct {
		code, version, want int16
	}{
		{0, 11, 0},
		{kerr.TransactionAbortable.Code, 11, kerr.TransactionAbortable.Code},
		{kerr.TransactionAbortable.Code, 10, kerr.InvalidTxnState.Code},
		{kerr.ProducerFenced.Code, 11, kerr.InvalidProducerEpoch.Code},
		{kerr.InvalidProducerIDMapping.Code, 11, kerr.InvalidProducerIDMapping.Code},
		{kerr.NotCoordinator.Code, 9, kerr.NotEnoughReplicas.Code},
		{kerr.CoordinatorLoadInProgress.Code, 9, kerr.NotEnoughReplicas.Code},
		{kerr.ConcurrentTransactions.Code, 9, kerr.NotEnoughReplicas.Code},
		{kerr.NetworkException.Code, 9, kerr.NotEnoughReplicas.Code},
	} {
		if got := ProduceVerifyCode(tc.code, tc.version); got != tc.want {
			t.Errorf("ProduceVerifyCode(%d, v%d) = %d, want %d", tc.code, tc.version, got, tc.want)
		}
	}
}

// fakeVerifyNet is a remote coordinator (broker 2) answering with answer.
type fakeVerifyNet struct {
	leader int32
	reqs   []*kmsg.AddPartitionsToTxnRequest
	answer func(call int, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error)
}

func (n *fakeVerifyNet) TxnCoordinatorOf(string) int32 { return n.leader }

func (n *fakeVerifyNet) AddPartitionsToTxn(_ context.Context, _ int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	n.reqs = append(n.reqs, req)
	return n.answer(len(n.reqs), req)
}

// answerAll answers every partition of req with code.
func answerAll(req *kmsg.AddPartitionsToTxnRequest, code int16) *kmsg.AddPartitionsToTxnResponse {
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	for _, rt := range req.Transactions {
		tr := kmsg.NewAddPartitionsToTxnResponseTransaction()
		tr.TransactionalID = rt.TransactionalID
		for _, rtt := range rt.Topics {
			st := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			st.Topic = rtt.Topic
			for _, p := range rtt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			tr.Topics = append(tr.Topics, st)
		}
		resp.Transactions = append(resp.Transactions, tr)
	}
	return resp
}

// A remote coordinator is asked with one AddPartitionsToTxn v5 VerifyOnly request
// grouping the partitions by topic; its per-partition codes come back in order.
func TestVerifierAsksRemoteCoordinator(t *testing.T) {
	net := &fakeVerifyNet{leader: 2, answer: func(_ int, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
		resp := answerAll(req, 0)
		resp.Transactions[0].Topics[1].Partitions[0].ErrorCode = kerr.InvalidTxnState.Code
		return resp, nil
	}}
	v := NewVerifier(VerifierConfig{Self: 1, Net: net})
	tps := []txn.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 3}, {Topic: "b", Partition: 1}}
	got := v.Verify(context.Background(), "tx", 7, 2, tps)
	if want := []int16{0, 0, kerr.InvalidTxnState.Code}; !slices.Equal(got, want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	if len(net.reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(net.reqs))
	}
	req := net.reqs[0]
	rt := req.Transactions[0]
	if req.Version != 5 || !rt.VerifyOnly || rt.TransactionalID != "tx" || rt.ProducerID != 7 || rt.ProducerEpoch != 2 {
		t.Fatalf("request v%d %+v", req.Version, rt)
	}
	if len(rt.Topics) != 2 || rt.Topics[0].Topic != "a" || !slices.Equal(rt.Topics[0].Partitions, []int32{0, 3}) ||
		rt.Topics[1].Topic != "b" || !slices.Equal(rt.Topics[1].Partitions, []int32{1}) {
		t.Fatalf("topics %+v", rt.Topics)
	}
}

// No coordinator, a network error, a top-level error and partitions missing from the
// answer each give every (or the missing) partition a code.
func TestVerifierFailures(t *testing.T) {
	tps := []txn.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}}
	for _, tc := range []struct {
		name   string
		leader int32
		answer func(int, *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error)
		want   []int16
	}{
		{"no coordinator", -1, nil, []int16{kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorNotAvailable.Code}},
		{"network", 2, func(int, *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
			return nil, errors.New("refused")
		}, []int16{kerr.NetworkException.Code, kerr.NetworkException.Code}},
		{"top level", 2, func(int, *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
			resp := kmsg.NewPtrAddPartitionsToTxnResponse()
			resp.ErrorCode = kerr.NotCoordinator.Code
			return resp, nil
		}, []int16{kerr.NotCoordinator.Code, kerr.NotCoordinator.Code}},
		{"missing", 2, func(_ int, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
			resp := answerAll(req, 0)
			resp.Transactions[0].Topics[0].Partitions = resp.Transactions[0].Topics[0].Partitions[:1]
			return resp, nil
		}, []int16{0, kerr.InvalidTxnState.Code}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVerifier(VerifierConfig{Self: 1, Net: &fakeVerifyNet{leader: tc.leader, answer: tc.answer}})
			if got := v.Verify(context.Background(), "tx", 7, 2, tps); !slices.Equal(got, tc.want) {
				t.Fatalf("codes %v, want %v", got, tc.want)
			}
		})
	}
}

// CONCURRENT_TRANSACTIONS is retried a few times (KAFKA-18654) before it is answered.
func TestVerifierRetriesConcurrentTransactions(t *testing.T) {
	tps := []txn.TopicPartition{{Topic: "a", Partition: 0}}
	net := &fakeVerifyNet{leader: 2, answer: func(call int, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
		if call < 3 {
			return answerAll(req, kerr.ConcurrentTransactions.Code), nil
		}
		return answerAll(req, 0), nil
	}}
	v := NewVerifier(VerifierConfig{Self: 1, Net: net})
	if got := v.Verify(context.Background(), "tx", 7, 2, tps); !slices.Equal(got, []int16{0}) || len(net.reqs) != 3 {
		t.Fatalf("codes %v after %d requests, want [0] after 3", got, len(net.reqs))
	}
	always := &fakeVerifyNet{leader: 2, answer: func(_ int, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
		return answerAll(req, kerr.ConcurrentTransactions.Code), nil
	}}
	v = NewVerifier(VerifierConfig{Self: 1, Net: always})
	if got := v.Verify(context.Background(), "tx", 7, 2, tps); got[0] != kerr.ConcurrentTransactions.Code || len(always.reqs) != 6 {
		t.Fatalf("codes %v after %d requests, want CONCURRENT_TRANSACTIONS after 6 (5 retries)", got, len(always.reqs))
	}
}
