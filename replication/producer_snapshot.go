package replication

// Producer state snapshots: "<20-digit offset>.snapshot" in the partition directory
// holds the producer state of every batch below offset. The byte layout (big-endian) is
// documented in docs/storage.md:
//
//	version      int16   3 (1: without the transaction fields, 2: without coordinatorEpoch)
//	crc          uint32  CRC-32C (Castagnoli) of every byte after this field
//	producers    int32
//	producers × {
//	  producerId    int64
//	  producerEpoch int16
//	  lastTimestamp int64
//	  txnOpen       int8   1 when a transaction is ongoing (v2)
//	  txnFirstOffset int64 its first offset, else 0 (v2)
//	  coordinatorEpoch int32 of its last transaction marker, -1 before one (v3)
//	  batches       int8   0..5, oldest first (0: only a marker is known)
//	  batches × { firstSequence int32, lastSequence int32, firstOffset int64,
//	              lastOffset int64, timestamp int64 }
//	}

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/segment"
)

// ProducerSnapshotSuffix ends a producer state snapshot's file name (Kafka's name).
const ProducerSnapshotSuffix = ".snapshot"

const (
	producerSnapshotVersion    = 3
	producerSnapshotHeaderSize = 2 + 4 + 4
	producerEntryFixedSizeV1   = 8 + 2 + 8 + 1
	producerEntryFixedSizeV2   = producerEntryFixedSizeV1 + 1 + 8
	producerEntryFixedSize     = producerEntryFixedSizeV2 + 4
	producerBatchSize          = 4 + 4 + 8 + 8 + 8
)

// ProducerSnapshotPath is the snapshot file of the state below offset in dir.
func ProducerSnapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, producerSnapshotName(offset))
}

// producerSnapshotName is the file name of the snapshot at offset.
func producerSnapshotName(offset int64) string {
	return fmt.Sprintf("%020d%s", offset, ProducerSnapshotSuffix)
}

// EncodeProducerSnapshot encodes a producer state in the snapshot format.
func EncodeProducerSnapshot(s *ProducerStates) []byte {
	entries := s.Entries()
	size := producerSnapshotHeaderSize
	for _, e := range entries {
		size += producerEntryFixedSize + len(e.Batches)*producerBatchSize
	}
	b := make([]byte, producerSnapshotHeaderSize, size)
	binary.BigEndian.PutUint16(b, producerSnapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.ProducerEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
		var open byte
		if e.TxnOpen {
			open = 1
		}
		b = append(b, open)
		b = binary.BigEndian.AppendUint64(b, uint64(e.TxnFirstOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = append(b, byte(len(e.Batches)))
		for _, bt := range e.Batches {
			b = binary.BigEndian.AppendUint32(b, uint32(bt.FirstSequence))
			b = binary.BigEndian.AppendUint32(b, uint32(bt.LastSequence))
			b = binary.BigEndian.AppendUint64(b, uint64(bt.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(bt.LastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(bt.Timestamp))
		}
	}
	binary.BigEndian.PutUint32(b[2:], segment.CRC32C(b[6:]))
	return b
}

// DecodeProducerSnapshot decodes a snapshot. Any damage (version, CRC, lengths, a
// producer listed twice, batches out of order) is ErrCorruptProducerSnapshot.
func DecodeProducerSnapshot(b []byte) (*ProducerStates, error) {
	bad := func(format string, args ...any) (*ProducerStates, error) {
		return nil, fmt.Errorf("%w: %s", ErrCorruptProducerSnapshot, fmt.Sprintf(format, args...))
	}
	if len(b) < producerSnapshotHeaderSize {
		return bad("%d bytes, the header needs %d", len(b), producerSnapshotHeaderSize)
	}
	version := binary.BigEndian.Uint16(b)
	if version < 1 || version > producerSnapshotVersion {
		return bad("version %d, this build reads 1 to %d", version, producerSnapshotVersion)
	}
	fixed := producerEntryFixedSize
	switch version {
	case 1:
		fixed = producerEntryFixedSizeV1
	case 2:
		fixed = producerEntryFixedSizeV2
	}
	if stored, computed := binary.BigEndian.Uint32(b[2:]), segment.CRC32C(b[6:]); stored != computed {
		return bad("stored CRC %#08x, computed %#08x", stored, computed)
	}
	count := int64(binary.BigEndian.Uint32(b[6:]))
	rest := b[producerSnapshotHeaderSize:]
	if count > int64(len(rest)/fixed) {
		return bad("%d producers cannot fit in %d bytes", count, len(rest))
	}
	s := &ProducerStates{}
	if count > 0 {
		s.entries = make(map[int64]*ProducerEntry, count)
	}
	for i := int64(0); i < count; i++ {
		if len(rest) < fixed {
			return bad("producer %d is cut short", i)
		}
		e := &ProducerEntry{
			ProducerID:       int64(binary.BigEndian.Uint64(rest)),
			ProducerEpoch:    int16(binary.BigEndian.Uint16(rest[8:])),
			LastTimestamp:    int64(binary.BigEndian.Uint64(rest[10:])),
			CoordinatorEpoch: -1,
		}
		if version >= 2 {
			switch rest[18] {
			case 0:
			case 1:
				e.TxnOpen = true
			default:
				return bad("producer %d has transaction flag %d", e.ProducerID, rest[18])
			}
			e.TxnFirstOffset = int64(binary.BigEndian.Uint64(rest[19:]))
			if e.TxnFirstOffset < 0 {
				return bad("producer %d's transaction starts at %d", e.ProducerID, e.TxnFirstOffset)
			}
		}
		if version >= 3 {
			e.CoordinatorEpoch = int32(binary.BigEndian.Uint32(rest[27:]))
			if e.CoordinatorEpoch < -1 {
				return bad("producer %d has coordinator epoch %d", e.ProducerID, e.CoordinatorEpoch)
			}
		}
		n := int(rest[fixed-1])
		rest = rest[fixed:]
		switch {
		case e.ProducerID < 0:
			return bad("negative producer id %d", e.ProducerID)
		case s.entries[e.ProducerID] != nil:
			return bad("producer %d listed twice", e.ProducerID)
		case n > ProducerBatchesRetained: // 0: only a transaction marker is known
			return bad("producer %d has %d batches", e.ProducerID, n)
		case len(rest) < n*producerBatchSize:
			return bad("producer %d's batches are cut short", e.ProducerID)
		}
		e.Batches = make([]ProducerBatch, n, ProducerBatchesRetained)
		for j := range e.Batches {
			e.Batches[j] = ProducerBatch{
				FirstSequence: int32(binary.BigEndian.Uint32(rest)),
				LastSequence:  int32(binary.BigEndian.Uint32(rest[4:])),
				FirstOffset:   int64(binary.BigEndian.Uint64(rest[8:])),
				LastOffset:    int64(binary.BigEndian.Uint64(rest[16:])),
				Timestamp:     int64(binary.BigEndian.Uint64(rest[24:])),
			}
			rest = rest[producerBatchSize:]
			bt := e.Batches[j]
			if bt.FirstOffset < 0 || bt.LastOffset < bt.FirstOffset || j > 0 && bt.FirstOffset <= e.Batches[j-1].LastOffset {
				return bad("producer %d batch %d has offsets %d..%d", e.ProducerID, j, bt.FirstOffset, bt.LastOffset)
			}
		}
		s.entries[e.ProducerID] = e
		s.noteOpen(e)
	}
	if len(rest) != 0 {
		return bad("%d bytes after the last producer", len(rest))
	}
	return s, nil
}

// writeProducerSnapshot writes the snapshot of s at offset whole or not at all: a
// temporary file (".tmp", which log recovery removes when left over), fsynced, renamed
// into place (segment.WriteFileSynced). The rename is durable after the directory's next
// fsync: at a roll, the new segment's (rollSnapshotter), before the recovery point moves
// past offset; at a clean close, its own (syncShutdownSnapshotLocked), as the log's
// description names the snapshot.
func writeProducerSnapshot(dir string, offset int64, s *ProducerStates) error {
	path := ProducerSnapshotPath(dir, offset)
	if err := segment.WriteFileSynced(path, EncodeProducerSnapshot(s)); err != nil {
		return fmt.Errorf("replication: writing producer snapshot %s: %w", path, err)
	}
	return nil
}

// readProducerSnapshot reads and decodes the snapshot at offset. Besides the decoder's
// checks, a snapshot is corrupt when it names an offset at or past its own: it holds the
// state of the batches below offset only.
func readProducerSnapshot(dir string, offset int64) (*ProducerStates, uint16, error) {
	b, err := segment.ReadFile(ProducerSnapshotPath(dir, offset))
	if err != nil {
		return nil, 0, err
	}
	return decodeProducerSnapshotAt(b, offset)
}

// decodeProducerSnapshotAt decodes b, a snapshot of the state below offset, and returns
// it with its version; a state reaching past offset is corrupt.
func decodeProducerSnapshotAt(b []byte, offset int64) (*ProducerStates, uint16, error) {
	s, err := DecodeProducerSnapshot(b)
	if err != nil {
		return nil, 0, err
	}
	for _, e := range s.entries {
		if e.TxnOpen && e.TxnFirstOffset >= offset || len(e.Batches) > 0 && e.Batches[len(e.Batches)-1].LastOffset >= offset {
			return nil, 0, fmt.Errorf("%w: producer %d's state reaches past the snapshot's offset %d", ErrCorruptProducerSnapshot, e.ProducerID, offset)
		}
	}
	return s, binary.BigEndian.Uint16(b), nil
}

// txnIndexSnapshotVersion is the first snapshot version written by builds that keep
// .txnindex files: below an older snapshot the segments may hold aborted transactions
// no index lists, so such a snapshot is not trusted for them (a one-time replay from
// the log start after an upgrade).
const txnIndexSnapshotVersion = 3

// ProducerSnapshotOffsets lists the offsets of the snapshots in dir, ascending.
func ProducerSnapshotOffsets(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // a replica that never made its directory (segment.Log.makeDir)
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return producerSnapshotOffsetsIn(names), nil
}

// producerSnapshotOffsetsIn returns the offsets of the producer snapshots among the file
// names of a partition directory, sorted.
func producerSnapshotOffsetsIn(names []string) []int64 {
	var out []int64
	for _, n := range names {
		name, ok := strings.CutSuffix(n, ProducerSnapshotSuffix)
		if !ok || len(name) != 20 {
			continue
		}
		off, err := strconv.ParseInt(name, 10, 64)
		if err != nil || off < 0 {
			continue
		}
		out = append(out, off)
	}
	slices.Sort(out)
	return out
}

// deleteProducerSnapshots removes the snapshots whose offset del selects and returns
// the offsets of those left.
func deleteProducerSnapshots(dir string, del func(offset int64) bool) ([]int64, error) {
	offsets, err := ProducerSnapshotOffsets(dir)
	if err != nil {
		return nil, err
	}
	var errs []error
	remaining := offsets[:0]
	for _, off := range offsets {
		if !del(off) {
			remaining = append(remaining, off)
			continue
		}
		if err := os.Remove(ProducerSnapshotPath(dir, off)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return remaining, errors.Join(errs...)
}
