// Package tiered is tiered storage (KIP-405): closed log segments copied to object
// storage and read back from it.
//
// The storage side is in the shape of Kafka's RemoteStorageManager: CopyLogSegmentData
// uploads a closed segment with its indexes, FetchLogSegment and FetchIndex read them
// back (by byte range), DeleteLogSegmentData removes them. RemoteLogSegmentMetadata is
// Kafka's record of one remote segment, with a binary and a JSON encoding;
// RemoteLogMetadataManager is Kafka's interface to where the cluster records them (the
// broker implements it over the Raft metadata). Copier is the remote log manager's copy
// task for one partition, synchronous: the broker runs it on its own goroutine. Nothing
// here runs goroutines of its own.
//
// Objects are laid out as Aiven's tiered-storage-for-apache-kafka lays them out
// (ObjectKeyFactory): under a key prefix, one object per file,
//
//	<prefix><topic>-<topicId>/<partition>/<20-digit start offset>-<segmentId>.<suffix>
//
// with suffix log, index, timeindex, snapshot, txnindex or leader-epoch-checkpoint, and
// the ids in Kafka's Uuid text form (unpadded URL-safe base64). The objects hold the
// files' bytes unchanged: Aiven's plugin chunks, may compress or encrypt them and adds
// an rsm-manifest, so the two cannot read each other's segments.
package tiered
