package tiered

import (
	"fmt"
	"strconv"
)

// IndexType is Kafka's RemoteStorageManager.IndexType: the files copied with a segment
// besides its log.
type IndexType int8

// Kafka's index types, with its ids.
const (
	IndexOffset           IndexType = 0 // the offset index (.index)
	IndexTimestamp        IndexType = 1 // the time index (.timeindex)
	IndexProducerSnapshot IndexType = 2 // the producer snapshot at the segment's end (.snapshot)
	IndexTransaction      IndexType = 3 // the aborted transactions (.txnindex), optional
	IndexLeaderEpoch      IndexType = 4 // the leader-epoch checkpoint up to the segment's end
)

// IndexTypes are the index types in Kafka's order.
var IndexTypes = []IndexType{IndexOffset, IndexTimestamp, IndexProducerSnapshot, IndexTransaction, IndexLeaderEpoch}

var indexTypeNames = [...]string{"OFFSET", "TIMESTAMP", "PRODUCER_SNAPSHOT", "TRANSACTION", "LEADER_EPOCH"}

// String is Kafka's name of the index type.
func (t IndexType) String() string {
	if t >= 0 && int(t) < len(indexTypeNames) {
		return indexTypeNames[t]
	}
	return fmt.Sprintf("IndexType(%d)", int8(t))
}

// suffix is the object key suffix of the index type (Aiven's ObjectKeyFactory.Suffix).
func (t IndexType) suffix() string {
	switch t {
	case IndexOffset:
		return "index"
	case IndexTimestamp:
		return "timeindex"
	case IndexProducerSnapshot:
		return "snapshot"
	case IndexTransaction:
		return "txnindex"
	case IndexLeaderEpoch:
		return "leader-epoch-checkpoint"
	}
	return ""
}

// logSuffix is the object key suffix of the segment's log.
const logSuffix = "log"

// ObjectKeys names the objects of remote segments under a key prefix.
type ObjectKeys struct {
	// Prefix starts every key, as given: "tiered/" puts the objects in a "folder";
	// "tiered" without the slash prefixes the topic directory names themselves.
	Prefix string
}

// PartitionPrefix is the key prefix of every object of a partition:
// <prefix><topic>-<topicId>/<partition>/.
func (k ObjectKeys) PartitionPrefix(tp TopicIDPartition) string {
	return k.Prefix + tp.Topic + "-" + tp.TopicID.String() + "/" + strconv.FormatInt(int64(tp.Partition), 10) + "/"
}

// segmentPath is a segment's objects' key without the suffix:
// <prefix><topic>-<topicId>/<partition>/<20-digit start offset>-<segmentId>.
func (k ObjectKeys) segmentPath(md *RemoteLogSegmentMetadata) string {
	return fmt.Sprintf("%s%020d-%s", k.PartitionPrefix(md.SegmentID.TopicIDPartition), md.StartOffset, md.SegmentID.ID)
}

// Log is the key of a segment's log.
func (k ObjectKeys) Log(md *RemoteLogSegmentMetadata) string {
	return k.segmentPath(md) + "." + logSuffix
}

// Index is the key of one of a segment's indexes.
func (k ObjectKeys) Index(md *RemoteLogSegmentMetadata, t IndexType) string {
	return k.segmentPath(md) + "." + t.suffix()
}

// All is every key a segment may have: its log and each index type.
func (k ObjectKeys) All(md *RemoteLogSegmentMetadata) []string {
	keys := []string{k.Log(md)}
	for _, t := range IndexTypes {
		keys = append(keys, k.Index(md, t))
	}
	return keys
}
