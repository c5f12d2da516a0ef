package coordinator

import (
	"context"
	"testing"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce v12 and TxnOffsetCommit v5 add implicitly only at transaction.version 2.
func TestImplicitAddNeedsTV2(t *testing.T) {
	level := int16(0)
	v := NewVerifier(VerifierConfig{TransactionVersion: func() int16 { return level }})
	for _, tc := range []struct {
		level, version, since int16
		want                  bool
	}{
		{2, 12, 12, true}, {2, 13, 12, true}, {2, 11, 12, false}, {1, 12, 12, false}, {0, 12, 12, false},
		{2, 5, 5, true}, {2, 4, 5, false},
	} {
		level = tc.level
		if got := v.ImplicitAdd(tc.version, tc.since); got != tc.want {
			t.Errorf("level %d, v%d (since %d): %v, want %v", tc.level, tc.version, tc.since, got, tc.want)
		}
	}
	if NewVerifier(VerifierConfig{}).ImplicitAdd(12, 12) {
		t.Error("no TransactionVersion: implicit add")
	}
}

// A remote coordinator gets the add as AddPartitionsToTxn v5 without VerifyOnly.
func TestVerifierAddAsksRemoteCoordinatorToAdd(t *testing.T) {
	net := &fakeVerifyNet{leader: 2, answer: func(_ int, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
		return answerAll(req, 0), nil
	}}
	v := NewVerifier(VerifierConfig{Self: 1, Net: net})
	tps := []txn.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "b", Partition: 1}}
	if got := v.Add(context.Background(), "tx", 7, 2, tps); got[0] != 0 || got[1] != 0 {
		t.Fatalf("codes %v", got)
	}
	if len(net.reqs) != 1 {
		t.Fatalf("%d requests", len(net.reqs))
	}
	req := net.reqs[0]
	if req.Version != 5 || len(req.Transactions) != 1 || req.Transactions[0].VerifyOnly ||
		req.Transactions[0].ProducerID != 7 || req.Transactions[0].ProducerEpoch != 2 || len(req.Transactions[0].Topics) != 2 {
		t.Fatalf("request %+v", req)
	}
}

// A guard voided while the add was answered (the previous transaction's marker) is
// renewed and the add asked again; a guard voided every time ends
// CONCURRENT_TRANSACTIONS; a partition whose transaction opened meanwhile needs no guard.
func TestAddUnderGuardsRenewsVoidedGuards(t *testing.T) {
	net := &fakeVerifyNet{leader: 2, answer: func(_ int, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
		return answerAll(req, 0), nil
	}}
	v := NewVerifier(VerifierConfig{Self: 1, Net: net})
	tps := []txn.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "a", Partition: 2}}
	first := []*replication.TxnVerification{{}, {}, {}}
	guards := append([]*replication.TxnVerification(nil), first...)
	renewed := &replication.TxnVerification{}
	restarts := 0
	codes := v.AddUnderGuards(context.Background(), "tx", 7, 2, tps, guards, func(i int) (*replication.TxnVerification, error) {
		switch i {
		case 0: // voided once, then the renewed guard holds
			if guards[0] == first[0] {
				return renewed, nil
			}
			return guards[0], nil
		case 1: // voided every time
			restarts++
			return &replication.TxnVerification{}, nil
		}
		return nil, nil // open there now
	})
	if codes[0] != 0 || guards[0] != renewed {
		t.Errorf("partition 0: code %d, guard renewed %v", codes[0], guards[0] == renewed)
	}
	if codes[1] != kerr.ConcurrentTransactions.Code || restarts != maxGuardRounds+1 {
		t.Errorf("partition 1: code %d after %d restarts", codes[1], restarts)
	}
	if codes[2] != 0 || guards[2] != nil {
		t.Errorf("partition 2: code %d, guard %v", codes[2], guards[2])
	}
	if len(net.reqs) != 1+maxGuardRounds {
		t.Errorf("%d adds, want %d", len(net.reqs), 1+maxGuardRounds)
	}
}
