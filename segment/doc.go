// Package segment is one partition's log on disk, in Apache Kafka's format, so that Kafka's
// own tools can read it and fetches can send stored bytes unchanged.
//
// A partition directory is named <topic>-<partition>. It holds segments, each named by
// its base offset zero-padded to 20 digits:
//
//	00000000000000000000.log        record batches back to back, as the leader appended them
//	00000000000000000000.index      sparse offset index, 8-byte entries
//	00000000000000000000.timeindex  time index, 12-byte entries
//	00000000000000000000.txnindex   aborted transactions of the segment, 34-byte entries (txnindex.go)
//	leader-epoch-checkpoint         (epoch, start offset) pairs, text
//
// A record batch (magic 2), all integers big-endian; the CRC-32C (Castagnoli) covers
// bytes [21, end), so the two fields the broker rewrites, baseOffset and
// partitionLeaderEpoch, sit outside it. Under message.timestamp.type=LogAppendTime
// (Config.LogAppendTime) a leader append also sets the timestamp-type bit and
// maxTimestamp to the append time, and recomputes the CRC:
//
//	 0  baseOffset            int64   rewritten: the offset assigned to the first record
//	 8  batchLength           int32   bytes after this field (batch size = batchLength+12)
//	12  partitionLeaderEpoch  int32   rewritten: the leader epoch of the appending leader
//	16  magic                 int8    2 (0 and 1 are rejected)
//	17  crc                   uint32  CRC-32C of bytes [21, end)
//	21  attributes            int16   bits 0-2 codec, 3 timestamp type (1: LogAppendTime), 4 transactional, 5 control
//	23  lastOffsetDelta       int32   recordCount-1
//	27  baseTimestamp         int64
//	35  maxTimestamp          int64   under LogAppendTime: the append time, every record's timestamp
//	43  producerId            int64
//	51  producerEpoch         int16
//	53  baseSequence          int32
//	57  recordCount           int32
//	61  records               possibly compressed as one stream
//
// Offset index entry (.index): relative offset uint32 (offset - segment base), position
// uint32 (byte position of a batch in .log). An entry is written for a batch once more
// than index.interval.bytes were appended since the previous entry; it holds that batch's
// last offset and its start position. Time index entry (.timeindex): timestamp int64 (the
// largest timestamp so far in the segment), relative offset uint32 (the last offset of the
// batch that holds it); written with offset index entries when the timestamp grew, and
// once more when the segment stops being active. Both index files are memory-mapped
// read-only, as in Kafka, but written with pwrite and never preallocated: a file holds
// exactly its entries (segment.index.bytes bounds how many), so a full file system fails
// an append with ENOSPC instead of a SIGBUS in a mapping, and recovery and truncation cut
// entries off with ftruncate rather than writing zeros (index.go).
//
// Offsets in a Log are contiguous: every batch starts at the offset after the previous
// batch's last offset, and recovery treats a gap as corruption — except in a compacted
// log (Config.Compacted), where the cleaner (clean.go) removes records and whole batches
// but never changes an offset: gaps are legal there, only overlaps are corruption, and a
// batch may hold fewer records than its offset span, down to none. The cleaner's
// .cleaned → .swap → rename protocol is described in clean_swap.go; Open completes an
// interrupted swap before anything else.
//
// Recovery on Open: segments wholly below the recovery point are trusted after a size
// check (the batches after the last index entry must frame the file exactly); the others
// are scanned batch by batch with CRC checks, their indexes rebuilt, and the log is cut at
// the first invalid or torn batch, deleting every later segment. Open returns a
// RecoveryReport of what it cut.
//
// The package starts no goroutines, never logs and knows no Kafka error codes: it returns
// errors wrapping the sentinels of errors.go and reports, and callers do the rest.
package segment
