package replication

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// snapshotFiles is what a partition knows of the producer state snapshots in its
// directory: their offsets, ascending, when known exactly (set from the listing the
// last rebuild read, then kept up to date by every write and deletion of this
// partition's; a failure forgets them). A clean close hands them to its log's
// description (ShutdownState), so that the next clean start's rebuild finds them
// without listing the directory.
type snapshotFiles struct {
	offsets []int64
	known   bool
}

// set records offsets, the snapshots a listing just found (and did not delete).
func (f *snapshotFiles) set(offsets []int64) {
	f.offsets, f.known = slices.Clone(offsets), true
}

// add records a snapshot written at offset.
func (f *snapshotFiles) add(offset int64) {
	if !f.known {
		return
	}
	if i, found := slices.BinarySearch(f.offsets, offset); !found {
		f.offsets = slices.Insert(f.offsets, i, offset)
	}
}

// forget records that the snapshots are not known (a write or deletion failed).
func (f *snapshotFiles) forget() {
	f.offsets, f.known = nil, false
}

// update is set after a deletion that left remaining, or forget when it failed.
func (f *snapshotFiles) update(remaining []int64, err error) {
	if err != nil {
		f.forget()
		return
	}
	f.set(remaining)
}

// names are the snapshots' file names, and whether they are known.
func (f *snapshotFiles) names() ([]string, bool) {
	if !f.known {
		return nil, false
	}
	out := make([]string, len(f.offsets))
	for i, off := range f.offsets {
		out[i] = producerSnapshotName(off)
	}
	return out, true
}

// maxDescribedProducerState bounds the producer state a clean close keeps in its log's
// description (describeProducerState): a replica of more producers is left to its
// snapshot files and the replay, as before.
const maxDescribedProducerState = 64 << 10

// describedStateHeader is the log end offset, then the replay's origin and batches.
const describedStateHeader = 8 + 8 + 4

// describeProducerState is the producer state s as of the log end offset leo, for the
// log's description: the next clean start takes it from there instead of reading a
// snapshot file and replaying the batches after it, as if a snapshot at leo had been
// written (Kafka writes one at every clean shutdown). It keeps r, how an open from the
// files would rebuild the same state, so that a start from the description leaves the
// next close the same choice between a snapshot file and a short replay
// (skipShutdownSnapshotLocked). Encoded as leo (8 bytes, big-endian), r's origin (8)
// and batches (4), then the snapshot format; nil when larger than
// maxDescribedProducerState.
func describeProducerState(leo int64, s *ProducerStates, r producerReplay) []byte {
	b := EncodeProducerSnapshot(s)
	if len(b) > maxDescribedProducerState || r.batches < 0 || r.batches > 1<<31-1 {
		return nil
	}
	out := make([]byte, 0, describedStateHeader+len(b))
	out = binary.BigEndian.AppendUint64(out, uint64(leo))
	out = binary.BigEndian.AppendUint64(out, uint64(r.from))
	out = binary.BigEndian.AppendUint32(out, uint32(r.batches))
	return append(out, b...)
}

// describedProducerState decodes what describeProducerState wrote for the log end
// offset leo; an error when it is malformed or describes another offset.
func describedProducerState(data []byte, leo int64) (*ProducerStates, producerReplay, error) {
	if len(data) < describedStateHeader || int64(binary.BigEndian.Uint64(data)) != leo {
		return nil, producerReplay{}, fmt.Errorf("%w: described for another log end offset than %d", ErrCorruptProducerSnapshot, leo)
	}
	r := producerReplay{from: int64(binary.BigEndian.Uint64(data[8:])), batches: int(binary.BigEndian.Uint32(data[16:]))}
	if r.from > leo || r.batches > 1<<31-1 {
		return nil, producerReplay{}, fmt.Errorf("%w: replay from %d", ErrCorruptProducerSnapshot, r.from)
	}
	s, version, err := decodeProducerSnapshotAt(data[describedStateHeader:], leo)
	if err == nil && version < txnIndexSnapshotVersion {
		err = fmt.Errorf("%w: version %d", ErrCorruptProducerSnapshot, version)
	}
	return s, r, err
}
