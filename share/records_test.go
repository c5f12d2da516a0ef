package share

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var recordKey = Key{GroupID: "gs1", TopicID: [16]byte{0: 0x52, 15: 0xd7}, Partition: 2}

// TestRecordBytes pins the byte layout of Kafka's ShareSnapshot and ShareUpdate records.
func TestRecordBytes(t *testing.T) {
	snap := EncodeSnapshot(recordKey, State{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: 3, StartOffset: 4,
		DeliveryCompleteCount: 5, CreateTimestampMs: 6, WriteTimestampMs: 7,
		Batches: []StateBatch{{FirstOffset: 4, LastOffset: 9, DeliveryState: Acknowledged, DeliveryCount: 1}}})
	key := `0000 0003 677331 52 0000000000000000000000000000 d7 00000002`
	if want := unhex(t, key); !bytes.Equal(snap.Key, want) {
		t.Fatalf("snapshot key %x, want %x", snap.Key, want)
	}
	wantValue := unhex(t, `0000
		00000001 00000002 00000003 0000000000000004 0000000000000006 0000000000000007
		02 0000000000000004 0000000000000009 02 0001 00
		01 00 04 00000005`)
	if !bytes.Equal(snap.Value, wantValue) {
		t.Fatalf("snapshot value\n%x, want\n%x", snap.Value, wantValue)
	}
	upd := EncodeUpdate(recordKey, UpdateValue{SnapshotEpoch: 1, LeaderEpoch: 3, StartOffset: -1, DeliveryCompleteCount: -1})
	if want := unhex(t, "0001"+key[4:]); !bytes.Equal(upd.Key, want) {
		t.Fatalf("update key %x, want %x", upd.Key, want)
	}
	if want := unhex(t, `0000 00000001 00000003 ffffffffffffffff 01 00`); !bytes.Equal(upd.Value, want) {
		t.Fatalf("update value %x, want %x", upd.Value, want)
	}
	tomb := Tombstone(recordKey)
	if !bytes.Equal(tomb.Key, snap.Key) || tomb.Value != nil {
		t.Fatalf("tombstone %+v", tomb)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	st := State{SnapshotEpoch: 9, StateEpoch: 1, LeaderEpoch: 4, StartOffset: 100, DeliveryCompleteCount: -1,
		CreateTimestampMs: 1700000000000, WriteTimestampMs: 1700000000001,
		Batches: []StateBatch{{100, 104, Available, 2}, {105, 105, Archived, 5}, {106, 200, Acknowledged, 1}}}
	d, ok, err := DecodeRecord(EncodeSnapshot(recordKey, st).Key, EncodeSnapshot(recordKey, st).Value)
	if err != nil || !ok || d.Type != RecordTypeShareSnapshot || d.Key != recordKey || !reflect.DeepEqual(*d.Snapshot, st) {
		t.Fatalf("snapshot round trip: %+v %v %v", d, ok, err)
	}
	u := UpdateValue{SnapshotEpoch: 9, LeaderEpoch: 5, StartOffset: 101, DeliveryCompleteCount: 7, Batches: st.Batches[1:]}
	r := EncodeUpdate(recordKey, u)
	d, ok, err = DecodeRecord(r.Key, r.Value)
	if err != nil || !ok || d.Type != RecordTypeShareUpdate || !reflect.DeepEqual(*d.Update, u) {
		t.Fatalf("update round trip: %+v %v %v", d, ok, err)
	}
	d, ok, err = DecodeRecord(Tombstone(recordKey).Key, nil)
	if err != nil || !ok || d.Snapshot != nil || d.Update != nil {
		t.Fatalf("tombstone: %+v %v %v", d, ok, err)
	}
	// Unknown record types are skipped; bad values are corrupt.
	if _, ok, err := DecodeRecord([]byte{0, 9, 0, 0}, []byte{0, 0}); ok || err != nil {
		t.Fatalf("unknown type: %v %v", ok, err)
	}
	bad := append([]byte{}, r.Value...)
	bad[1] = 1 // value version 1
	if _, _, err := DecodeRecord(r.Key, bad); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("value version 1: %v", err)
	}
	if _, _, err := DecodeRecord(r.Key, r.Value[:len(r.Value)-3]); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("truncated value: %v", err)
	}
}

func TestStateLogSnapshotsAndUpdates(t *testing.T) {
	l := &StateLog{Key: recordKey, SnapshotUpdateRecords: 2}
	recs := []Record{l.Initialize(State{StartOffset: 0, DeliveryCompleteCount: -1}, 10)}
	for i, c := range []Change{
		{StartOffset: 0, Batches: []StateBatch{{0, 9, Available, 1}}},
		{StartOffset: 0, Batches: []StateBatch{{0, 4, Acknowledged, 1}}},
		{StartOffset: 5, Batches: []StateBatch{{5, 5, Archived, 1}}},
	} {
		r, err := l.Write(c, 1, int64(20+i))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	var types []int16
	for _, r := range recs {
		d, _, err := DecodeRecord(r.Key, r.Value)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, d.Type)
	}
	if want := []int16{0, 1, 1, 0}; !reflect.DeepEqual(types, want) {
		t.Fatalf("record types %v, want %v", types, want)
	}
	want := []StateBatch{{5, 5, Archived, 1}, {6, 9, Available, 1}}
	if l.State.StartOffset != 5 || l.State.SnapshotEpoch != 1 || !reflect.DeepEqual(l.State.Batches, want) {
		t.Fatalf("state %+v", l.State)
	}
	replayed := &StateLog{Key: recordKey}
	for _, r := range recs {
		if err := replayed.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(replayed.State, l.State) {
		t.Fatalf("replayed %+v, written %+v", replayed.State, l.State)
	}
	if _, err := l.Write(Change{StartOffset: 5}, 0, 30); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("write from an old leader epoch: %v", err)
	}
}
