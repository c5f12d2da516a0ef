package segment

import "testing"

// controlType and controlCoordinatorEpoch are controlRecord's two results.
func controlType(rec []byte) int16 { typ, _ := controlRecord(rec); return typ }

func controlCoordinatorEpoch(rec []byte) int32 { _, epoch := controlRecord(rec); return epoch }

// A control record's type is read from Kafka's layout; cut or malformed records give -1.
func TestControlType(t *testing.T) {
	// length 10, attributes 0, timestampDelta 0, offsetDelta 0, keyLength 4 (zigzag 8),
	// key version 0 type 1.
	rec := []byte{20, 0, 0, 0, 8, 0, 0, 0, 1, 12, 0, 0, 0, 0, 0, 5, 0}
	if got := controlType(rec); got != 1 {
		t.Fatalf("controlType = %d, want 1", got)
	}
	for n := range 9 {
		if got := controlType(rec[:n]); got != -1 {
			t.Fatalf("controlType of %d bytes = %d, want -1", n, got)
		}
	}
}

// FuzzControlType: arbitrary bytes after a control batch's header never panic and give
// -1 or the int16 at the key's type.
func FuzzControlType(f *testing.F) {
	f.Add([]byte{20, 0, 0, 0, 8, 0, 0, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = controlType(b)
	})
}

// A marker's coordinator epoch is read from its value; cut records give -1.
func TestControlCoordinatorEpoch(t *testing.T) {
	rec := []byte{20, 0, 0, 0, 8, 0, 0, 0, 1, 12, 0, 0, 0, 0, 0, 5, 0}
	if got := controlCoordinatorEpoch(rec); got != 5 {
		t.Fatalf("controlCoordinatorEpoch = %d, want 5", got)
	}
	for n := range 16 {
		if got := controlCoordinatorEpoch(rec[:n]); got != -1 {
			t.Fatalf("controlCoordinatorEpoch of %d bytes = %d, want -1", n, got)
		}
	}
}

// FuzzControlCoordinatorEpoch: arbitrary bytes never panic.
func FuzzControlCoordinatorEpoch(f *testing.F) {
	f.Add([]byte{20, 0, 0, 0, 8, 0, 0, 0, 1, 12, 0, 0, 0, 0, 0, 5, 0})
	f.Add([]byte{20, 0, 0, 0, 0x7f, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = controlCoordinatorEpoch(b)
	})
}
