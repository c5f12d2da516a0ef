package replication

// A coordinator's transactional write (Kafka's AppendOrigin.COORDINATOR): the group
// coordinator writes a TxnOffsetCommit's offsets as one transactional batch of the
// transaction's producer on its __consumer_offsets partition. Such a batch is checked as
// Kafka checks a coordinator's write: the producer's epoch must not be older than the
// partition's (ErrInvalidProducerEpoch), its sequence is not checked (every coordinator
// batch starts at sequence 0, as Kafka's do), and, with verify, the batch must belong to
// a transaction already open here at its epoch or be covered by the guard the caller
// verified with the transaction coordinator (KIP-890 part 1, ErrInvalidTxnState).

import (
	"fmt"

	"github.com/petrel-broker/petrel/segment"
)

// AppendTransactionalAsCoordinator appends records (whole batches written by a
// coordinator, CRC set) as the leader in leaderEpoch, as AppendAsLeaderInEpoch does,
// with the checks of a coordinator's transactional write described above in place of
// the client checks (idempotent sequence, duplicates).
func (p *Partition) AppendTransactionalAsCoordinator(records []byte, leaderEpoch int32, minInsync int, verify bool, guard *TxnVerification) (segment.AppendInfo, error) {
	return p.appendAsLeader(records, leaderAppend{leaderEpoch: leaderEpoch, minInsync: minInsync, verify: verify, guard: guard, coordinator: true})
}

// checkCoordinatorProducersLocked refuses a batch of records whose producer epoch is
// older than the partition's entry for that producer; markers are checked as always.
// Callers hold mu.
func (p *Partition) checkCoordinatorProducersLocked(records []byte) error {
	for pos := 0; pos < len(records); {
		h, err := segment.ParseBatchHeader(records[pos:])
		if err != nil {
			return nil // the log refuses it
		}
		pos += int(h.Size())
		if h.ProducerID < 0 {
			continue
		}
		if h.Control() {
			if err := checkMarker(p.producers.Entry(h.ProducerID), h); err != nil {
				return err
			}
			continue
		}
		if e := p.producers.Entry(h.ProducerID); e != nil && h.ProducerEpoch < e.ProducerEpoch {
			return fmt.Errorf("%w: producer %d wrote epoch %d, the partition has epoch %d", ErrInvalidProducerEpoch,
				h.ProducerID, h.ProducerEpoch, e.ProducerEpoch)
		}
	}
	return nil
}
