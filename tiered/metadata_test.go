package tiered

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func sampleMetadata() *RemoteLogSegmentMetadata {
	return &RemoteLogSegmentMetadata{
		SegmentID: RemoteLogSegmentID{
			TopicIDPartition: TopicIDPartition{TopicID: Uuid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Topic: "orders", Partition: 7},
			ID:               Uuid{0xb6, 0xa8, 0xa6, 0x29, 0xe6, 0x70, 0x4a, 0xd3, 0x8e, 0x3b, 0x04, 0x73, 0x4f, 0x72, 0xf9, 0xa1},
		},
		StartOffset: 1234, EndOffset: 2000, MaxTimestampMs: 1_700_000_000_000,
		BrokerID: 2, EventTimestampMs: 1_700_000_001_000,
		SegmentLeaderEpochs: []EpochStart{{Epoch: 3, StartOffset: 1234}, {Epoch: 5, StartOffset: 1500}},
		SegmentSizeInBytes:  1 << 20,
		State:               CopySegmentFinished,
	}
}

func TestMetadataBinaryRoundTrip(t *testing.T) {
	for _, custom := range [][]byte{nil, {}, []byte("manifest")} {
		md := sampleMetadata()
		md.CustomMetadata = custom
		md.TxnIdxEmpty = custom == nil
		b, err := md.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back RemoteLogSegmentMetadata
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&back, md) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, *md)
		}
	}
}

func TestMetadataJSONRoundTripUsesKafkasNames(t *testing.T) {
	md := sampleMetadata()
	b, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	if fields["state"] != "COPY_SEGMENT_FINISHED" {
		t.Errorf("state = %v, want COPY_SEGMENT_FINISHED", fields["state"])
	}
	id := fields["remoteLogSegmentId"].(map[string]any)
	if id["id"] != md.SegmentID.ID.String() {
		t.Errorf("segment id = %v, want %s", id["id"], md.SegmentID.ID)
	}
	var back RemoteLogSegmentMetadata
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, md) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, *md)
	}
}

func TestMetadataDecodersRefuseInvalidRecords(t *testing.T) {
	good, err := sampleMetadata().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"empty":          nil,
		"truncated":      good[:len(good)-1],
		"trailing bytes": append(append([]byte{}, good...), 0),
		"version 1":      append([]byte{0, 1}, good[2:]...),
	}
	for name, b := range cases {
		var md RemoteLogSegmentMetadata
		if err := md.UnmarshalBinary(b); !errors.Is(err, ErrInvalidMetadata) {
			t.Errorf("%s: UnmarshalBinary = %v, want ErrInvalidMetadata", name, err)
		}
	}
	invalid := map[string]func(*RemoteLogSegmentMetadata){
		"no topic":           func(m *RemoteLogSegmentMetadata) { m.SegmentID.TopicIDPartition.Topic = "" },
		"negative partition": func(m *RemoteLogSegmentMetadata) { m.SegmentID.TopicIDPartition.Partition = -1 },
		"end before start":   func(m *RemoteLogSegmentMetadata) { m.EndOffset = m.StartOffset - 1 },
		"no epochs":          func(m *RemoteLogSegmentMetadata) { m.SegmentLeaderEpochs = nil },
		"epoch outside":      func(m *RemoteLogSegmentMetadata) { m.SegmentLeaderEpochs[0].StartOffset = m.StartOffset - 1 },
		"epochs unordered":   func(m *RemoteLogSegmentMetadata) { m.SegmentLeaderEpochs[1].Epoch = 1 },
		"unknown state":      func(m *RemoteLogSegmentMetadata) { m.State = 4 },
		"negative size":      func(m *RemoteLogSegmentMetadata) { m.SegmentSizeInBytes = -1 },
	}
	for name, mutate := range invalid {
		md := sampleMetadata()
		mutate(md)
		if _, err := md.MarshalBinary(); !errors.Is(err, ErrInvalidMetadata) {
			t.Errorf("%s: MarshalBinary = %v, want ErrInvalidMetadata", name, err)
		}
		if !md.State.valid() {
			continue // not expressible in JSON; see below
		}
		type raw RemoteLogSegmentMetadata // no validation on the way out
		j, err := json.Marshal(raw(*md))
		if err != nil {
			t.Fatal(err)
		}
		var back RemoteLogSegmentMetadata
		if err := json.Unmarshal(j, &back); !errors.Is(err, ErrInvalidMetadata) {
			t.Errorf("%s: json.Unmarshal = %v, want ErrInvalidMetadata", name, err)
		}
	}
	for name, j := range map[string]string{
		"unknown state": `{"state":"NO_SUCH_STATE"}`,
		"unknown field": `{"startOffset":1,"color":"red"}`,
	} {
		var back RemoteLogSegmentMetadata
		if err := json.Unmarshal([]byte(j), &back); !errors.Is(err, ErrInvalidMetadata) {
			t.Errorf("%s: json.Unmarshal = %v, want ErrInvalidMetadata", name, err)
		}
	}
}

func TestStateTransitionsAreKafkas(t *testing.T) {
	valid := map[[2]RemoteLogSegmentState]bool{
		{CopySegmentStarted, CopySegmentFinished}:     true,
		{CopySegmentStarted, DeleteSegmentStarted}:    true,
		{CopySegmentFinished, DeleteSegmentStarted}:   true,
		{DeleteSegmentStarted, DeleteSegmentFinished}: true,
	}
	for from := CopySegmentStarted; from <= DeleteSegmentFinished; from++ {
		for to := CopySegmentStarted; to <= DeleteSegmentFinished; to++ {
			if got := from.CanTransitionTo(to); got != valid[[2]RemoteLogSegmentState{from, to}] {
				t.Errorf("%v -> %v = %v", from, to, got)
			}
		}
	}
}

func FuzzRemoteLogSegmentMetadataDecode(f *testing.F) {
	good, _ := sampleMetadata().MarshalBinary()
	f.Add(good)
	f.Add(good[:40])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var md RemoteLogSegmentMetadata
		if err := md.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrInvalidMetadata) {
				t.Fatalf("error %v is not ErrInvalidMetadata", err)
			}
			return
		}
		// A record the decoder accepts is valid and encodes back to the same bytes.
		back, err := md.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded record does not encode: %v", err)
		}
		if string(back) != string(data) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", data, back)
		}
	})
}
