package workload

import "time"

// Status is what a producer learned about one record it produced.
type Status uint8

const (
	// Unacknowledged: the produce (or its transaction's commit) failed or never answered:
	// the record may or may not be in the log. Reading it is not a violation.
	Unacknowledged Status = iota
	// Acknowledged: acks=all answered with an offset (outside a transaction), or the
	// record's transaction committed. It must be read exactly once, in key order.
	Acknowledged
	// Aborted: the record was in a transaction its producer never asked to commit. A
	// read_committed consumer must never return it.
	Aborted
)

func (s Status) String() string {
	switch s {
	case Acknowledged:
		return "acknowledged"
	case Aborted:
		return "aborted"
	}
	return "unacknowledged"
}

// Produced is one record a producer sent and what became of it.
type Produced struct {
	RecordID
	Txn       int32  // the producer's transaction number, -1 outside transactions
	Status    Status // what the producer was told
	Partition int32  // from the produce answer; -1 without one
	Offset    int64  // from the produce answer; -1 without one
	// Failed: the record's transaction was aborted because one of its produces failed,
	// not on purpose (Status Aborted only).
	Failed bool
}

// Read is one of this run's records returned by a consumer.
type Read struct {
	RecordID
	Partition int32
	Offset    int64
}

// Commit is one committed offset of the group for a partition, as a consumer's
// OffsetCommit reported it (Source "consumer N") or as an OffsetFetch observed it
// (Source "observed"). Start and End bracket the request: a commit whose End precedes
// another's Start happened before it at the coordinator.
type Commit struct {
	Partition  int32
	Offset     int64
	Start, End time.Time
	Source     string
}

// History is everything a run saw; Analyze judges it.
type History struct {
	Produced []Produced // every record produced, in no particular order
	Drained  []Read     // the drain phase's reads (read_committed, from the earliest offset)
	// Unfinished names the partitions the drain could not read to their end offsets
	// (within its timeout), with the offset it reached: an acknowledged record there at
	// or past that offset was not checked. Every other partition was read to its end,
	// so an acknowledged record not read is lost, whatever its offset was.
	Unfinished map[int32]int64
	// Ends are the end offsets the drain listed; a partition missing was not listed.
	// An acknowledged record at or past its partition's end offset is lost even where
	// the drain did not finish.
	Ends map[int32]int64
	// Settled: the group's committed offsets reached every partition's end offset after
	// the producers stopped, so every acknowledged record must be among GroupReads.
	Settled    bool
	GroupReads []RecordID // records the group's consumers returned
	Commits    []Commit   // committed offsets over time, reported and observed
}
