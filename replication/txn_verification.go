package replication

// KIP-890 part 1 on the partition side. Before a leader appends the first transactional
// batch of a producer's transaction, the broker asks the transaction coordinator whether
// this partition is in the producer's ongoing transaction. StartTxnVerification hands
// out a TxnVerification (Kafka's VerificationGuard) for the producer id and epoch; the
// broker asks the coordinator without holding any lock and then appends with
// AppendAsLeaderVerified, which accepts the transactional batches only if the
// producer already has an ongoing transaction here at that epoch, or if the guard is
// still the one the partition holds for the producer. Appending a transactional batch
// or a marker of the producer drops its guard, so a marker written while the broker
// waited for the coordinator voids the answer (KAFKA-14884), and a leader epoch change
// voids every guard.

import (
	"fmt"

	"github.com/petrel-broker/petrel/segment"
)

// TxnVerification is a partition leader's pending verification of one producer's
// transaction: valid for one append while the partition still holds it.
type TxnVerification struct {
	producerID    int64
	producerEpoch int16
	leaderEpoch   int32
	// createdMs is when it was handed out; ExpireProducers drops old ones.
	createdMs int64
}

// ProducerID is the producer the verification is for.
func (v *TxnVerification) ProducerID() int64 { return v.producerID }

// StartTxnVerification returns nil when producerID already has an ongoing transaction
// in this partition at producerEpoch (its batches need no verification); otherwise the
// guard to verify with the coordinator and then pass to AppendAsLeaderVerified. A
// producer asking again at the same epoch gets the same guard.
func (p *Partition) StartTxnVerification(producerID int64, producerEpoch int16, nowMs int64) (*TxnVerification, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkLeaderLocked(-1); err != nil {
		return nil, err
	}
	if e := p.producers.Entry(producerID); e != nil && e.TxnOpen && e.ProducerEpoch == producerEpoch {
		return nil, nil
	}
	if v := p.verifying[producerID]; v != nil && v.producerEpoch == producerEpoch && v.leaderEpoch == p.leaderEpoch {
		return v, nil
	}
	v := &TxnVerification{producerID: producerID, producerEpoch: producerEpoch, leaderEpoch: p.leaderEpoch, createdMs: nowMs}
	if p.verifying == nil {
		p.verifying = map[int64]*TxnVerification{}
	}
	p.verifying[producerID] = v
	return v, nil
}

// AppendAsLeaderVerified is AppendAsLeader for a client's produce: every transactional
// batch must belong to a transaction already open here at its epoch or be covered by
// guard (nil when none was verified), else ErrInvalidTxnState and nothing is written.
// Like AppendValidatedAsLeader, the caller has checked every batch's CRC-32C.
func (p *Partition) AppendAsLeaderVerified(records []byte, minInsync int, guard *TxnVerification) (segment.AppendInfo, error) {
	return p.appendAsLeader(records, leaderAppend{leaderEpoch: -1, minInsync: minInsync, verify: true, guard: guard, crcChecked: true, inlineWake: true})
}

// checkTxnVerifiedLocked applies the check of AppendAsLeaderVerified. Callers hold mu.
func (p *Partition) checkTxnVerifiedLocked(records []byte, guard *TxnVerification) error {
	for pos := 0; pos < len(records); {
		h, err := segment.ParseBatchHeader(records[pos:])
		if err != nil {
			return nil // the log refuses it
		}
		pos += int(h.Size())
		if !h.Transactional() || h.Control() {
			continue
		}
		if e := p.producers.Entry(h.ProducerID); e != nil && e.TxnOpen && e.ProducerEpoch == h.ProducerEpoch {
			continue
		}
		if guard != nil && guard.producerID == h.ProducerID && guard.producerEpoch == h.ProducerEpoch &&
			guard.leaderEpoch == p.leaderEpoch && p.verifying[h.ProducerID] == guard {
			continue
		}
		return fmt.Errorf("%w: producer %d epoch %d has no verified ongoing transaction in %s-%d", ErrInvalidTxnState,
			h.ProducerID, h.ProducerEpoch, p.Topic, p.ID)
	}
	return nil
}

// dropTxnVerificationsLocked forgets the guards of the producers whose transactional
// batches or markers records holds (appended). Callers hold mu.
func (p *Partition) dropTxnVerificationsLocked(records []byte) {
	if len(p.verifying) == 0 {
		return
	}
	for pos := 0; pos < len(records); {
		h, err := segment.ParseBatchHeader(records[pos:])
		if err != nil {
			return
		}
		pos += int(h.Size())
		if h.Transactional() {
			delete(p.verifying, h.ProducerID)
		}
	}
}

// expireTxnVerificationsLocked drops guards handed out expirationMs or more before
// nowMs (a verification whose append never came). Callers hold mu.
func (p *Partition) expireTxnVerificationsLocked(nowMs, expirationMs int64) {
	for id, v := range p.verifying {
		if nowMs-v.createdMs >= expirationMs {
			delete(p.verifying, id)
		}
	}
}
