package share

import (
	"reflect"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary keys and values to the decoder: it never panics, and
// whatever it accepts encodes back to a record that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	st := State{SnapshotEpoch: 1, StartOffset: 4, DeliveryCompleteCount: 2, Batches: []StateBatch{{4, 9, Acknowledged, 1}}}
	for _, r := range []Record{
		EncodeSnapshot(recordKey, st),
		EncodeUpdate(recordKey, UpdateValue{StartOffset: -1, DeliveryCompleteCount: -1, Batches: st.Batches}),
		Tombstone(recordKey),
	} {
		f.Add(r.Key, r.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d, ok, err := DecodeRecord(key, value)
		if err != nil || !ok {
			return
		}
		var r Record
		switch {
		case d.Snapshot != nil:
			r = EncodeSnapshot(d.Key, *d.Snapshot)
		case d.Update != nil:
			r = EncodeUpdate(d.Key, *d.Update)
		default:
			r = Tombstone(d.Key)
		}
		again, ok, err := DecodeRecord(r.Key, r.Value)
		if err != nil || !ok || !reflect.DeepEqual(d, again) {
			t.Fatalf("decoded %+v, re-encoded and decoded %+v (%v)", d, again, err)
		}
	})
}

// FuzzOperations drives the model-based simulation of property_test.go with choices
// read from the fuzz input.
func FuzzOperations(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte("share groups acquire, acknowledge, release, renew and expire records"))
	f.Add([]byte{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &byteChooser{b: data}
		s := newSim(c, int64(10+c.intn(60)))
		for i := 0; i < 200 && !c.exhausted(); i++ {
			if err := s.step(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.drain(); err != nil {
			t.Fatal(err)
		}
	})
}
