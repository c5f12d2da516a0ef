package broker

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
)

// topicIDCheckpointFile holds, for the whole log directory, the topic id of every
// replica closed at a clean shutdown: the partition.metadata contents of all partition
// directories in one file, written with the clean shutdown marker. A clean start reads
// it once instead of one partition.metadata per replica (the open of a file per replica
// is most of what opening an idle replica costs); it is read only when the marker says
// the directory was closed cleanly, and a replica it does not name, or names with
// another topic id, reads its partition.metadata as before. Petrel's own file (Kafka
// reads partition.metadata per log), in the format of the offset checkpoints: a
// version line, a count line, then "topic partition topic-id" lines.
const topicIDCheckpointFile = "topic-id-checkpoint"

// writeTopicIDCheckpoint writes ids to path atomically (temporary file, fsync, rename,
// directory fsync).
func writeTopicIDCheckpoint(path string, ids map[segment.TopicPartition]metadata.Uuid) error {
	keys := slices.SortedFunc(maps.Keys(ids), segment.CompareTopicPartitions)
	vals := make([]metadata.Uuid, len(keys))
	for i, tp := range keys {
		vals[i] = ids[tp]
	}
	return writeSortedTopicIDCheckpoint(path, keys, vals)
}

// writeSortedTopicIDCheckpoint writes the file writeTopicIDCheckpoint writes, of keys
// (sorted by segment.CompareTopicPartitions) with ids[i] for keys[i], without a map or
// a string per line.
func writeSortedTopicIDCheckpoint(path string, keys []segment.TopicPartition, ids []metadata.Uuid) error {
	for _, tp := range keys {
		if err := segment.CheckCheckpointTopic(path, tp.Topic); err != nil {
			return err
		}
	}
	return segment.WriteFileAtomic(path, segment.EncodeCheckpoint(len(keys), 56, func(b []byte, i int) []byte {
		b = segment.AppendTopicPartition(b, keys[i])
		b = append(b, ' ')
		return append(b, ids[i].String()...)
	}))
}

// readTopicIDCheckpoint reads path; a missing file is an empty map. A malformed file is
// an error (the caller then reads every partition.metadata).
func readTopicIDCheckpoint(path string) (map[segment.TopicPartition]metadata.Uuid, error) {
	lines, err := segment.ReadCheckpoint(path) // a missing file has no lines
	if err != nil {
		return nil, err
	}
	out := make(map[segment.TopicPartition]metadata.Uuid, len(lines))
	for _, line := range lines {
		f := strings.Split(line, " ")
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: line %q", path, line)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		id, err2 := metadata.ParseUuid(f[2])
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("%s: line %q", path, line)
		}
		out[segment.TopicPartition{Topic: f[0], Partition: int32(p)}] = id
	}
	return out, nil
}
