package metadata

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// remoteRecord is a record of segment id's state from broker 0 at leader epoch 0 of
// topic Uuid{1} partition 0, covering [start, end].
func remoteRecord(id byte, state RemoteLogSegmentState, start, end int64) RemoteLogSegmentRecord {
	return RemoteLogSegmentRecord{TopicID: Uuid{1}, PartitionID: 0, LeaderEpoch: 0, Segment: RemoteLogSegment{
		ID: Uuid{id}, StartOffset: start, EndOffset: end, SizeInBytes: 100, BrokerID: 0, State: state,
		LeaderEpochs: []RemoteEpochStart{{0, start}},
	}}
}

func remoteImage(t *testing.T) *Image {
	t.Helper()
	im := mustApply(t, NewImage(), 1, RegisterBrokerRecord{BrokerID: 0}, RegisterBrokerRecord{BrokerID: 1})
	return mustApply(t, im, 2, createTopicRecords("t", 1, []int32{0, 1})...)
}

func states(segs []RemoteLogSegment) map[Uuid]RemoteLogSegmentState {
	m := map[Uuid]RemoteLogSegmentState{}
	for _, s := range segs {
		m[s.ID] = s.State
	}
	return m
}

// TestRemoteLogSegmentTransitions: segments are kept ordered by start offset, move only
// by Kafka's transitions, and leave the image at DELETE_SEGMENT_FINISHED.
func TestRemoteLogSegmentTransitions(t *testing.T) {
	im := remoteImage(t)
	im = mustApply(t, im, 3, remoteRecord(2, CopySegmentStarted, 100, 199))
	im = mustApply(t, im, 4, remoteRecord(1, CopySegmentStarted, 0, 99), remoteRecord(1, CopySegmentFinished, 0, 99))
	segs := im.RemoteLogSegments(Uuid{1}, 0)
	if len(segs) != 2 || segs[0].ID != (Uuid{1}) || segs[1].ID != (Uuid{2}) {
		t.Fatalf("segments %+v, want ordered by start offset", segs)
	}
	if segs[0].State != CopySegmentFinished || segs[0].SizeInBytes != 100 {
		t.Fatalf("segment 1 %+v", segs[0])
	}
	for name, r := range map[string]RemoteLogSegmentRecord{
		"started twice":        remoteRecord(1, CopySegmentStarted, 0, 99),
		"finished to finished": remoteRecord(1, CopySegmentFinished, 0, 99),
		"unknown segment":      remoteRecord(9, CopySegmentFinished, 0, 99),
		"started to deleted":   remoteRecord(2, DeleteSegmentFinished, 100, 199),
	} {
		if _, err := im.Apply(5, []Record{r}); !errors.Is(err, ErrInvalidRemoteLogTransition) {
			t.Errorf("%s: %v, want ErrInvalidRemoteLogTransition", name, err)
		}
	}
	im = mustApply(t, im, 5, remoteRecord(2, DeleteSegmentStarted, 100, 199))
	im = mustApply(t, im, 6, remoteRecord(2, DeleteSegmentFinished, 100, 199))
	if got := states(im.RemoteLogSegments(Uuid{1}, 0)); !reflect.DeepEqual(got, map[Uuid]RemoteLogSegmentState{{1}: CopySegmentFinished}) {
		t.Fatalf("after deleting segment 2: %v", got)
	}
	im = mustApply(t, im, 7, remoteRecord(1, DeleteSegmentStarted, 0, 99), remoteRecord(1, DeleteSegmentFinished, 0, 99))
	if im.RemoteLogs != nil && len(im.RemoteLogs) != 0 {
		t.Fatalf("remote logs %+v after every segment was deleted", im.RemoteLogs)
	}
}

// TestRemoteLogSegmentFencing: only the partition's leader at its current leader epoch
// records a change; a leader change fences the old leader's records.
func TestRemoteLogSegmentFencing(t *testing.T) {
	im := remoteImage(t)
	im = mustApply(t, im, 3, remoteRecord(1, CopySegmentStarted, 0, 99))
	stale := remoteRecord(1, CopySegmentFinished, 0, 99)
	im = mustApply(t, im, 4, PartitionChangeRecord{TopicID: Uuid{1}, PartitionID: 0, Leader: ptr(int32(1))})
	if _, err := im.Apply(5, []Record{stale}); !errors.Is(err, ErrRemoteLogNotLeader) {
		t.Fatalf("old leader's record: %v, want ErrRemoteLogNotLeader", err)
	}
	fromNew := stale
	fromNew.Segment.BrokerID = 1
	if _, err := im.Apply(5, []Record{fromNew}); !errors.Is(err, ErrRemoteLogFenced) {
		t.Fatalf("new leader at the old epoch: %v, want ErrRemoteLogFenced", err)
	}
	fromNew.LeaderEpoch = 1
	fromNew.Segment.State = DeleteSegmentStarted // the new leader abandons the old copy
	im = mustApply(t, im, 5, fromNew)
	if s := im.RemoteLogSegments(Uuid{1}, 0)[0]; s.State != DeleteSegmentStarted || s.BrokerID != 1 {
		t.Fatalf("segment %+v", s)
	}
	unknown := remoteRecord(2, CopySegmentStarted, 0, 9)
	unknown.PartitionID = 3
	if _, err := im.Apply(6, []Record{unknown}); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("unknown partition: %v", err)
	}
}

// TestRemoteLogOfDeletedTopic: deleting a topic keeps its remote segments, awaiting
// deletion, until each is reported deleted; nothing but deletion is accepted for them.
func TestRemoteLogOfDeletedTopic(t *testing.T) {
	im := remoteImage(t)
	im = mustApply(t, im, 3, remoteRecord(1, CopySegmentStarted, 0, 99), remoteRecord(1, CopySegmentFinished, 0, 99))
	im = mustApply(t, im, 4, RemoveTopicRecord{TopicID: Uuid{1}})
	del := im.DeletedRemoteLogs()
	if len(del) != 1 || del[Uuid{1}].Name != "t" || len(del[Uuid{1}].Partitions[0]) != 1 {
		t.Fatalf("deleted remote logs %+v", del)
	}
	if _, err := im.Apply(5, []Record{remoteRecord(2, CopySegmentStarted, 100, 199)}); !errors.Is(err, ErrInvalidRemoteLogTransition) {
		t.Fatalf("copy to a deleted topic: %v", err)
	}
	start := remoteRecord(1, DeleteSegmentStarted, 0, 99)
	start.LeaderEpoch, start.Segment.BrokerID = -1, 1 // any broker, no epoch
	finish := start
	finish.Segment.State = DeleteSegmentFinished
	im = mustApply(t, im, 5, start, finish)
	if len(im.RemoteLogs) != 0 || len(im.DeletedRemoteLogs()) != 0 {
		t.Fatalf("remote logs %+v after the last deletion", im.RemoteLogs)
	}
}

// TestRemoteLogSnapshotRoundTrip: remote logs survive the snapshot form and the record
// encoding.
func TestRemoteLogSnapshotRoundTrip(t *testing.T) {
	im := remoteImage(t)
	r := remoteRecord(1, CopySegmentStarted, 0, 99)
	r.Segment.CustomMetadata, r.Segment.TxnIdxEmpty = []byte{1, 2}, true
	data, err := EncodeRecords(r)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeRecords(data)
	if err != nil || !reflect.DeepEqual(recs, []Record{r}) {
		t.Fatalf("decoded %+v, %v", recs, err)
	}
	im = mustApply(t, im, 3, recs...)
	b, err := json.Marshal(im.SnapshotForm())
	if err != nil {
		t.Fatal(err)
	}
	var back Image
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.FromSnapshotForm(); !reflect.DeepEqual(got.RemoteLogs, im.RemoteLogs) {
		t.Fatalf("restored %+v, want %+v", got.RemoteLogs, im.RemoteLogs)
	}
}
