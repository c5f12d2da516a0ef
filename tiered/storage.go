package tiered

import (
	"context"
	"io"
)

// RemoteStorageManager is Kafka's RemoteStorageManager (KIP-405): the object store side
// of tiered storage. Every method takes the segment's metadata, whose id names the
// objects (ObjectKeys); every failure is an error matching ErrRemoteStorage, and a
// missing object one matching ErrRemoteResourceNotFound too. A context ends a call
// (and the reading of a stream it returned) when it is done.
type RemoteStorageManager interface {
	// CopyLogSegmentData copies a closed segment and its indexes, md being in
	// COPY_SEGMENT_STARTED. The copy is complete when it returns nil; after an error
	// some objects may exist, which DeleteLogSegmentData removes.
	CopyLogSegmentData(ctx context.Context, md *RemoteLogSegmentMetadata, data LogSegmentData) error
	// FetchLogSegment returns the segment's log from byte startPosition to its end.
	FetchLogSegment(ctx context.Context, md *RemoteLogSegmentMetadata, startPosition int64) (io.ReadCloser, error)
	// FetchLogSegmentRange returns the segment's log from byte startPosition to byte
	// endPosition, inclusive (Kafka's fetchLogSegment with an end position), or to its
	// end when that comes first.
	FetchLogSegmentRange(ctx context.Context, md *RemoteLogSegmentMetadata, startPosition, endPosition int64) (io.ReadCloser, error)
	// FetchIndex returns one of the segment's indexes whole; a transaction index the
	// segment was copied without is ErrRemoteResourceNotFound.
	FetchIndex(ctx context.Context, md *RemoteLogSegmentMetadata, t IndexType) (io.ReadCloser, error)
	// DeleteLogSegmentData deletes every object of the segment. Objects already gone are
	// not an error, so a deletion may be retried.
	DeleteLogSegmentData(ctx context.Context, md *RemoteLogSegmentMetadata) error
}

// LogSegmentData is Kafka's LogSegmentData: the files of one closed segment to copy.
type LogSegmentData struct {
	LogSegment       string // the .log file
	OffsetIndex      string // the .index file
	TimeIndex        string // the .timeindex file
	TransactionIndex string // the .txnindex file; "" when the segment has none
	ProducerSnapshot string // the producer snapshot file at the segment's end offset
	// LeaderEpochIndex is the leader-epoch checkpoint, in its file format, of the epochs
	// up to the segment's end.
	LeaderEpochIndex []byte
}
