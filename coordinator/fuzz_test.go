package coordinator

import (
	"testing"
	"time"
)

// FuzzDecodeBatches feeds arbitrary bytes to the load path's batch decoder: errors,
// never panics.
func FuzzDecodeBatches(f *testing.F) {
	f.Add(EncodeBatch([]Record{{Key: []byte("k"), Value: []byte("v")}, {Key: []byte("t")}}, time.Unix(0, 0)))
	f.Add(EncodeTransactionalBatch([]Record{{Key: []byte("k"), Value: []byte("v")}}, 7, 1, time.Unix(0, 0)))
	f.Add(EncodeMarker(7, 1, true, 3, time.Unix(0, 0)))
	f.Add([]byte{})
	f.Add(make([]byte, 61))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeBatches(b, func(int64, BatchInfo, []byte, []byte) {}, func(Marker) {})
	})
}
