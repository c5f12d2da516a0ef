package txn

import (
	"testing"
	"time"
)

// FuzzReplay feeds arbitrary keys and values to Replay: errors, never panics; what it
// accepts encodes again to a record it accepts.
func FuzzReplay(f *testing.F) {
	t := &Transaction{ID: "t", ProducerID: 5, ProducerEpoch: 2, Timeout: time.Minute, State: StateOngoing,
		Partitions: map[TopicPartition]struct{}{{"a", 1}: {}}, StartTime: time.UnixMilli(1), LastUpdate: time.UnixMilli(2)}
	f.Add(encodeKey("t"), encodeValue(t))
	f.Add([]byte{0, 0, 0, 1, 'x'}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s := NewShard(DefaultConfig(), 0)
		if err := s.Replay(key, value); err != nil {
			return
		}
		for id, tx := range s.txns {
			s2 := NewShard(DefaultConfig(), 0)
			if err := s2.Replay(encodeKey(id), encodeValue(tx)); err != nil {
				t.Fatalf("re-encoded record refused: %v", err)
			}
		}
	})
}
