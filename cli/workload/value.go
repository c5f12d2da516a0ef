package workload

import (
	"fmt"
	"strconv"
	"strings"
)

// valuePrefix starts every value the workload writes, so that other data in the topic
// (an earlier run, another writer) is told apart and ignored.
const valuePrefix = "petrel-verify"

// RecordID names one produced record: its producer, its key and its sequence among
// that producer's records of that key (0, 1, 2, ...).
type RecordID struct {
	Producer int32 // producer number, 0..Producers-1
	Key      int32 // key number, 0..Keys-1
	Seq      int32 // per producer and key, in produce order
}

func (id RecordID) String() string {
	return fmt.Sprintf("producer %d key %d seq %d", id.Producer, id.Key, id.Seq)
}

// recordKey is the Kafka key of key number k: one key always lands in one partition.
func recordKey(k int32) []byte { return []byte("k" + strconv.Itoa(int(k))) }

// encodeValue is a record's value: the run, the record's id, its transaction (-1
// outside one) and whether the producer meant to commit it ("c"), abort it ("a") or
// wrote it outside a transaction ("-"). The intent is for people reading the topic;
// the analysis trusts the History, which holds what really happened.
func encodeValue(run string, id RecordID, txn int32, intent byte) []byte {
	return fmt.Appendf(nil, "%s %s %d %d %d %d %c", valuePrefix, run, id.Producer, id.Key, id.Seq, txn, intent)
}

// decodeValue parses a value written by run; ok is false for anything else (another
// run's records, other writers, garbage).
func decodeValue(run string, v []byte) (id RecordID, ok bool) {
	f := strings.Fields(string(v))
	if len(f) != 7 || f[0] != valuePrefix || f[1] != run {
		return RecordID{}, false
	}
	var n [4]int64
	for i := range n {
		x, err := strconv.ParseInt(f[2+i], 10, 32)
		if err != nil {
			return RecordID{}, false
		}
		n[i] = x
	}
	if n[0] < 0 || n[1] < 0 || n[2] < 0 {
		return RecordID{}, false
	}
	return RecordID{Producer: int32(n[0]), Key: int32(n[1]), Seq: int32(n[2])}, true
}
