package coordinator

// KIP-890 part 2, the partition leader's side: under transaction.version 2 a Produce
// v12 (or a TxnOffsetCommit v5) does not wait for the client's AddPartitionsToTxn; the
// leader itself adds the partition to the producer's transaction with the
// coordinator (in process, or AddPartitionsToTxn v5 without VerifyOnly through
// VerifyNet) before the first batch of the transaction is appended. Everything else is
// the verification path of txn_verify.go: the same guard, the same retries of
// CONCURRENT_TRANSACTIONS, the same translation of the answers (ProduceVerifyCode).

import (
	"context"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ImplicitAdd reports whether a request of version, whose TV2 form starts at since
// (Produce 12, TxnOffsetCommit 5), adds its partitions implicitly: the cluster's
// transaction.version is 2 or more.
func (v *Verifier) ImplicitAdd(version, since int16) bool {
	return version >= since && v.cfg.TransactionVersion != nil && v.cfg.TransactionVersion() >= 2
}

// Add adds tps to the ongoing transaction of producer pid at epoch (starting one when
// none is open) with the coordinator of id; one coordinator code per partition, as
// Verify returns them.
func (v *Verifier) Add(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) []int16 {
	return v.retrying(ctx, func() []int16 { return v.ask(ctx, id, pid, epoch, tps, true) })
}

// addLocal adds through this broker's own coordinator.
func (v *Verifier) addLocal(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) []int16 {
	ch := make(chan []int16, 1)
	answer := func(code int16) {
		select {
		case ch <- slices.Repeat([]int16{code}, len(tps)):
		default:
		}
	}
	v.cfg.Local.Submit(id, func(now time.Time, s *txn.Shard) txn.Effects {
		return s.AddPartitionsImplicit(now, id, pid, epoch, tps, answer)
	}, answer)
	select {
	case got := <-ch:
		return got
	case <-ctx.Done():
		return slices.Repeat([]int16{kerr.RequestTimedOut.Code}, len(tps))
	}
}

// maxGuardRounds bounds the adds again of AddUnderGuards.
const maxGuardRounds = 3

// AddUnderGuards is Add for partitions that handed out guards[i] before it, and
// returns the codes with guards updated to append with. A marker appended to a
// partition while the add was being answered voids its guard: under TV2 that is the
// previous transaction's marker, written at the epoch the producer uses now, which the
// coordinator completes before it answers the add. Such a partition asks its
// partition for a fresh guard (restart(i)) and adds again (answered at once: the
// partition is in the transaction) — safe because an add at the epoch of a
// transaction that has ended is PRODUCER_FENCED, the end having bumped the epoch. A
// guard still voided after a few rounds is CONCURRENT_TRANSACTIONS (retriable).
func (v *Verifier) AddUnderGuards(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition,
	guards []*replication.TxnVerification, restart func(i int) (*replication.TxnVerification, error)) []int16 {
	codes := v.Add(ctx, id, pid, epoch, tps)
	for round := 0; ; round++ {
		var again []int
		for i := range tps {
			if codes[i] != 0 || guards[i] == nil {
				continue
			}
			g, err := restart(i)
			if err != nil || g == guards[i] {
				continue // still valid, or the append refuses it (no longer the leader)
			}
			guards[i] = g
			if g != nil { // nil: the transaction is open there now
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			return codes
		}
		if round == maxGuardRounds {
			for _, i := range again {
				codes[i] = kerr.ConcurrentTransactions.Code
			}
			return codes
		}
		sub := make([]txn.TopicPartition, len(again))
		for j, i := range again {
			sub[j] = tps[i]
		}
		for j, code := range v.Add(ctx, id, pid, epoch, sub) {
			codes[again[j]] = code
		}
	}
}
