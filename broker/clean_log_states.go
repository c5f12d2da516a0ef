package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/petrel-broker/petrel/segment"
)

// cleanLogStatesFile holds, for the whole log directory, the description of every log
// closed cleanly at the last shutdown (segment.Log.ShutdownState: its segments' sizes,
// offsets, timestamps and index entry counts, its leader epochs), written with the
// clean shutdown marker, before it. A clean start opens such a replica from its
// description without reading its directory (the listing, three files per segment and
// the leader-epoch-checkpoint were most of the start of a written replica), when its
// topic id, recovery point and log start offset agree with the other checkpoints
// (segment/shutdown_state.go). The file is removed with the marker, before the first
// replica opens, so that it never outlives the close that wrote it; it also names the
// broker epoch the marker records, and a start uses it only with that marker (a build
// without it, run in between, leaves an older file behind a newer marker). Petrel's own
// file (Kafka lists and loads every log at a start).
//
// Format: the magic "PLS1", the broker epoch (varint), a uvarint count, then per log the
// topic (uvarint length and bytes), the partition (varint) and the description (uvarint
// length and segment.AppendShutdownState's bytes); last, the CRC-32C of everything before
// it, 4 bytes big-endian.
const cleanLogStatesFile = "clean-shutdown-log-states"

var cleanLogStatesMagic = []byte("PLS1")

// cleanLogState is one log's encoded description.
type cleanLogState struct {
	tp    segment.TopicPartition
	state []byte
}

// encodeCleanLogStates is the file's content for states, closed at brokerEpoch.
func encodeCleanLogStates(brokerEpoch int64, states []cleanLogState) []byte {
	size := len(cleanLogStatesMagic) + 2*binary.MaxVarintLen64 + 4
	for _, s := range states {
		size += 2*binary.MaxVarintLen64 + len(s.tp.Topic) + len(s.state) + binary.MaxVarintLen32
	}
	b := make([]byte, 0, size)
	b = append(b, cleanLogStatesMagic...)
	b = binary.AppendVarint(b, brokerEpoch)
	b = binary.AppendUvarint(b, uint64(len(states)))
	for _, s := range states {
		b = binary.AppendUvarint(b, uint64(len(s.tp.Topic)))
		b = append(b, s.tp.Topic...)
		b = binary.AppendVarint(b, int64(s.tp.Partition))
		b = binary.AppendUvarint(b, uint64(len(s.state)))
		b = append(b, s.state...)
	}
	return binary.BigEndian.AppendUint32(b, segment.CRC32C(b))
}

// errCleanLogStates is the error of a file that does not decode.
var errCleanLogStates = errors.New("malformed clean shutdown log states")

// decodeCleanLogStates reads the file's content: the broker epoch of the close that
// wrote it and each log's description, still encoded (the replica's open decodes its
// own). The descriptions are slices of b.
func decodeCleanLogStates(b []byte) (int64, map[segment.TopicPartition][]byte, error) {
	if len(b) < len(cleanLogStatesMagic)+4 || string(b[:len(cleanLogStatesMagic)]) != string(cleanLogStatesMagic) {
		return 0, nil, fmt.Errorf("%w: header", errCleanLogStates)
	}
	body := b[:len(b)-4]
	if segment.CRC32C(body) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return 0, nil, fmt.Errorf("%w: checksum", errCleanLogStates)
	}
	d := body[len(cleanLogStatesMagic):]
	bad := false
	uvarint := func() uint64 {
		v, n := binary.Uvarint(d)
		if n <= 0 {
			bad, d = true, nil
			return 0
		}
		d = d[n:]
		return v
	}
	bytesOf := func() []byte {
		n := uvarint()
		if n > uint64(len(d)) {
			bad, d = true, nil
			return nil
		}
		v := d[:n:n]
		d = d[n:]
		return v
	}
	epoch, n := binary.Varint(d)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: broker epoch", errCleanLogStates)
	}
	d = d[n:]
	count := uvarint()
	if count > uint64(len(d))/3 {
		return 0, nil, fmt.Errorf("%w: %d logs", errCleanLogStates, count)
	}
	out := make(map[segment.TopicPartition][]byte, count)
	for range count {
		topic := bytesOf()
		p, n := binary.Varint(d)
		if n <= 0 || p < 0 || p > 1<<31-1 {
			return 0, nil, fmt.Errorf("%w: partition", errCleanLogStates)
		}
		d = d[n:]
		state := bytesOf()
		if bad || len(topic) == 0 {
			return 0, nil, fmt.Errorf("%w: truncated", errCleanLogStates)
		}
		out[segment.TopicPartition{Topic: string(topic), Partition: int32(p)}] = state
	}
	if bad || len(d) != 0 {
		return 0, nil, fmt.Errorf("%w: trailing bytes", errCleanLogStates)
	}
	return epoch, out, nil
}

// readCleanLogStates reads path, the descriptions of the close at brokerEpoch (the
// marker's); a missing file, or one another close wrote, is no description.
func readCleanLogStates(path string, brokerEpoch int64) (map[segment.TopicPartition][]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	epoch, states, err := decodeCleanLogStates(b)
	if err != nil || epoch != brokerEpoch {
		return nil, err
	}
	return states, nil
}
