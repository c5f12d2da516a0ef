package replication

// Transaction markers of Transactions V2 (KIP-1228, WriteTxnMarkers v2): a TV2
// coordinator bumps the producer's epoch before it writes the markers of every
// transaction end, so a valid TV2 marker's epoch is strictly newer than the epoch the
// partition has seen from that producer. A marker at the same epoch is a late or
// duplicate one (a retry after its first copy landed, or a marker meant for an earlier
// transaction) and is refused with INVALID_PRODUCER_EPOCH, which the coordinator takes
// as written (coordinator.MarkerDone). Markers of TV0/TV1 transactions keep the rule
// of checkMarker: an epoch at least the producer's.

import (
	"fmt"

	"github.com/petrel-broker/petrel/segment"
)

// AppendMarkerAsLeaderInEpoch appends a transaction marker (a control batch written
// by a transaction coordinator) as AppendAsLeaderInEpoch does; with transactionVersion
// 2 or more its epoch must be newer than the producer's epoch here.
func (p *Partition) AppendMarkerAsLeaderInEpoch(records []byte, leaderEpoch int32, minInsync int, transactionVersion int8) (segment.AppendInfo, error) {
	return p.appendAsLeader(records, leaderAppend{leaderEpoch: leaderEpoch, minInsync: minInsync,
		strictMarkerEpoch: transactionVersion >= 2})
}

// checkMarkerEpochStrictLocked refuses a control batch in records whose producer epoch
// is not newer than the producer's entry here. Callers hold mu.
func (p *Partition) checkMarkerEpochStrictLocked(records []byte) error {
	for pos := 0; pos < len(records); {
		h, err := segment.ParseBatchHeader(records[pos:])
		if err != nil {
			return nil // the log refuses it
		}
		pos += int(h.Size())
		if h.ProducerID < 0 || !h.Control() {
			continue
		}
		if e := p.producers.Entry(h.ProducerID); e != nil && h.ProducerEpoch <= e.ProducerEpoch {
			return fmt.Errorf("%w: a transaction version 2 marker of producer %d has epoch %d, which is not greater than the last seen epoch %d",
				ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.ProducerEpoch)
		}
	}
	return nil
}
