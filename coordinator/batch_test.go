package coordinator

import (
	"errors"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
)

// The load path parses batches with segment's parser: a batch that is not magic v2 is
// refused as segment refuses it, not decoded as if it were.
func TestDecodeBatchesUsesSegmentsParser(t *testing.T) {
	b := EncodeBatch([]Record{{Key: []byte("k"), Value: []byte("v")}}, time.Unix(0, 0))
	b[16] = 1 // magic
	n := 0
	if _, err := decodeBatches(b, func(int64, BatchInfo, []byte, []byte) { n++ }, func(Marker) { n++ }); !errors.Is(err, segment.ErrUnsupportedMagic) || n != 0 {
		t.Fatalf("magic 1: %v, %d records", err, n)
	}
	// A negative base offset is no batch of a log either.
	b = EncodeBatch([]Record{{Key: []byte("k")}}, time.Unix(0, 0))
	for i := range 8 {
		b[i] = 0xff
	}
	if _, err := decodeBatches(b, func(int64, BatchInfo, []byte, []byte) { n++ }, func(Marker) { n++ }); !errors.Is(err, segment.ErrInvalidBatch) || n != 0 {
		t.Fatalf("negative base offset: %v, %d records", err, n)
	}
}
