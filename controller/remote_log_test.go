package controller

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

func remoteChange(id byte, state metadata.RemoteLogSegmentState, leaderEpoch int32) metadata.RemoteLogSegmentRecord {
	return metadata.RemoteLogSegmentRecord{TopicID: isrTestTopic, PartitionID: 1, LeaderEpoch: leaderEpoch,
		Segment: metadata.RemoteLogSegment{ID: metadata.UuidFromBytes([16]byte{id}), StartOffset: 0, EndOffset: 9,
			State: state, LeaderEpochs: []metadata.RemoteEpochStart{{Epoch: 0, StartOffset: 0}}}}
}

// TestRecordRemoteLogSegmentsFencing: the controller records a remote segment change only
// from the partition's leader at its current leader epoch; a stale epoch is
// FENCED_LEADER_EPOCH's error, another sender NOT_LEADER_OR_FOLLOWER's, and the valid
// changes of the same request are committed in one entry.
func TestRecordRemoteLogSegmentsFencing(t *testing.T) {
	q, c, ctx := startISRTest(t) // partition 1: leader 1 at leader epoch 1
	outcomes, err := c.RecordRemoteLogSegments(ctx, 1, q.Image().Brokers[1].Epoch, []metadata.RemoteLogSegmentRecord{
		remoteChange(1, metadata.CopySegmentStarted, 1),
		remoteChange(1, metadata.CopySegmentFinished, 1),
		remoteChange(2, metadata.CopySegmentStarted, 0),    // stale leader epoch
		remoteChange(3, metadata.CopySegmentStarted, 2),    // newer than the controller's
		remoteChange(1, metadata.CopySegmentFinished, 1),   // finished twice
		remoteChange(4, metadata.DeleteSegmentFinished, 1), // unknown segment
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, nil, metadata.ErrRemoteLogFenced, ErrNotController, metadata.ErrInvalidRemoteLogTransition, metadata.ErrInvalidRemoteLogTransition}
	for i, w := range want {
		if (w == nil) != (outcomes[i] == nil) || (w != nil && !errors.Is(outcomes[i], w)) {
			t.Errorf("change %d: %v, want %v", i, outcomes[i], w)
		}
	}
	segs := q.Image().RemoteLogSegments(isrTestTopic, 1)
	if len(segs) != 1 || segs[0].State != metadata.CopySegmentFinished || segs[0].BrokerID != 1 {
		t.Fatalf("remote segments %+v", segs)
	}
	outcomes, err = c.RecordRemoteLogSegments(ctx, 2, q.Image().Brokers[2].Epoch, []metadata.RemoteLogSegmentRecord{remoteChange(1, metadata.DeleteSegmentStarted, 1)})
	if err != nil || !errors.Is(outcomes[0], metadata.ErrRemoteLogNotLeader) {
		t.Fatalf("from a follower: %v, %v", outcomes, err)
	}
}

// TestRecordRemoteLogSegmentsRefusesWhatNoLeaderSends: a broker epoch of -1 (a leader
// always knows its own) or another than the registered one fails the whole request, as
// do more than MaxRemoteLogChangesPerRequest changes; custom metadata past Kafka's 128
// bytes, too many leader epochs or epochs out of order fail their change.
func TestRecordRemoteLogSegmentsRefusesWhatNoLeaderSends(t *testing.T) {
	q, c, ctx := startISRTest(t) // partition 1: leader 1 at leader epoch 1
	for _, epoch := range []int64{-1, q.Image().Brokers[1].Epoch + 1} {
		if _, err := c.RecordRemoteLogSegments(ctx, 1, epoch, []metadata.RemoteLogSegmentRecord{remoteChange(1, metadata.CopySegmentStarted, 1)}); !errors.Is(err, ErrStaleBrokerEpoch) {
			t.Fatalf("broker epoch %d: %v, want ErrStaleBrokerEpoch", epoch, err)
		}
	}
	many := make([]metadata.RemoteLogSegmentRecord, MaxRemoteLogChangesPerRequest+1)
	for i := range many {
		many[i] = remoteChange(byte(i), metadata.CopySegmentStarted, 1)
	}
	if _, err := c.RecordRemoteLogSegments(ctx, 1, q.Image().Brokers[1].Epoch, many); !errors.Is(err, ErrPolicyViolation) {
		t.Fatalf("%d changes: %v, want ErrPolicyViolation", len(many), err)
	}
	bigMetadata := remoteChange(1, metadata.CopySegmentFinished, 1)
	bigMetadata.Segment.CustomMetadata = make([]byte, MaxRemoteCustomMetadataBytes+1)
	fitting := remoteChange(1, metadata.CopySegmentFinished, 1)
	fitting.Segment.CustomMetadata = make([]byte, MaxRemoteCustomMetadataBytes)
	manyEpochs := remoteChange(2, metadata.CopySegmentStarted, 1)
	manyEpochs.Segment.EndOffset = 1 << 20
	manyEpochs.Segment.LeaderEpochs = nil
	for e := range MaxRemoteSegmentLeaderEpochs + 1 {
		manyEpochs.Segment.LeaderEpochs = append(manyEpochs.Segment.LeaderEpochs, metadata.RemoteEpochStart{Epoch: int32(e), StartOffset: int64(e)})
	}
	unordered := remoteChange(3, metadata.CopySegmentStarted, 1)
	unordered.Segment.LeaderEpochs = []metadata.RemoteEpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 0, StartOffset: 5}}
	outside := remoteChange(4, metadata.CopySegmentStarted, 1)
	outside.Segment.LeaderEpochs = []metadata.RemoteEpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 10}}
	outcomes, err := c.RecordRemoteLogSegments(ctx, 1, q.Image().Brokers[1].Epoch, []metadata.RemoteLogSegmentRecord{
		remoteChange(1, metadata.CopySegmentStarted, 1), bigMetadata, fitting, manyEpochs, unordered, outside})
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, metadata.ErrInvalidRecord, nil, metadata.ErrInvalidRecord, metadata.ErrInvalidRecord, metadata.ErrInvalidRecord}
	for i, w := range want {
		if (w == nil) != (outcomes[i] == nil) || (w != nil && !errors.Is(outcomes[i], w)) {
			t.Errorf("change %d: %v, want %v", i, outcomes[i], w)
		}
	}
	if segs := q.Image().RemoteLogSegments(isrTestTopic, 1); len(segs) != 1 || len(segs[0].CustomMetadata) != MaxRemoteCustomMetadataBytes {
		t.Fatalf("remote segments %+v", segs)
	}
}

// TestRecordRemoteLogSegmentsChecksAgainstTheRequest: each change is checked against
// its partition's segments with the request's earlier valid changes applied, exactly
// as the image applies them: a copy started and finished in one request, a second start
// of the same segment refused, a deletion of a segment started earlier in it accepted.
func TestRecordRemoteLogSegmentsChecksAgainstTheRequest(t *testing.T) {
	q, c, ctx := startISRTest(t)
	other := remoteChange(9, metadata.CopySegmentStarted, 1)
	other.PartitionID = 0
	other.LeaderEpoch = 0
	outcomes, err := c.RecordRemoteLogSegments(ctx, 1, q.Image().Brokers[1].Epoch, []metadata.RemoteLogSegmentRecord{
		remoteChange(1, metadata.CopySegmentStarted, 1),
		other,
		remoteChange(1, metadata.CopySegmentStarted, 1), // started twice
		remoteChange(1, metadata.CopySegmentFinished, 1),
		remoteChange(2, metadata.CopySegmentStarted, 1),
		remoteChange(2, metadata.DeleteSegmentStarted, 1),
		remoteChange(2, metadata.DeleteSegmentFinished, 1),
		remoteChange(2, metadata.DeleteSegmentFinished, 1), // gone already
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, nil, metadata.ErrInvalidRemoteLogTransition, nil, nil, nil, nil, metadata.ErrInvalidRemoteLogTransition}
	for i, w := range want {
		if (w == nil) != (outcomes[i] == nil) || (w != nil && !errors.Is(outcomes[i], w)) {
			t.Errorf("change %d: %v, want %v", i, outcomes[i], w)
		}
	}
	im := q.Image()
	if segs := im.RemoteLogSegments(isrTestTopic, 1); len(segs) != 1 || segs[0].State != metadata.CopySegmentFinished {
		t.Fatalf("partition 1's remote segments %+v", segs)
	}
	if segs := im.RemoteLogSegments(isrTestTopic, 0); len(segs) != 1 || segs[0].State != metadata.CopySegmentStarted {
		t.Fatalf("partition 0's remote segments %+v", segs)
	}
}

// TestRemoteLogRecordsCopiesNoImage: checking a request of MaxRemoteLogChangesPerRequest
// changes on a cluster of 20,000 topics allocates in proportion to the changes, not to
// the image (no image is built per change).
func TestRemoteLogRecordsCopiesNoImage(t *testing.T) {
	recs := isrTestRecords()
	for i := range 20_000 {
		id := metadata.UuidFromBytes([16]byte{0xff, byte(i >> 8), byte(i)})
		recs = append(recs, metadata.TopicRecord{Name: fmt.Sprintf("big-%d", i), TopicID: id},
			metadata.PartitionRecord{TopicID: id, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	}
	im, err := metadata.NewImage().Apply(1, recs)
	if err != nil {
		t.Fatal(err)
	}
	var changes []metadata.RemoteLogSegmentRecord
	for i := range MaxRemoteLogChangesPerRequest / 2 {
		start := remoteChange(0, metadata.CopySegmentStarted, 1)
		start.Segment.ID = metadata.UuidFromBytes([16]byte{1, byte(i >> 8), byte(i)})
		start.Segment.StartOffset, start.Segment.EndOffset = int64(10*i), int64(10*i+9)
		start.Segment.LeaderEpochs = []metadata.RemoteEpochStart{{Epoch: 0, StartOffset: int64(10 * i)}}
		finish := start
		finish.Segment.State = metadata.CopySegmentFinished
		changes = append(changes, start, finish)
	}
	outcomes := make([]error, len(changes))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	records, err := remoteLogRecords(im, 1, im.Brokers[1].Epoch, changes, outcomes)
	runtime.ReadMemStats(&after)
	if err != nil || len(records) != len(changes) {
		t.Fatalf("%d of %d changes accepted: %v %v", len(records), len(changes), err, errors.Join(outcomes...))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Fatalf("checking %d changes allocated %d bytes", len(changes), alloc)
	}
	one := changes[0]
	one.Segment.BrokerID = 1
	runtime.ReadMemStats(&before)
	if _, err := im.Apply(im.Offset+1, []metadata.Record{one}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	t.Logf("one image per change would be %d bytes each", after.TotalAlloc-before.TotalAlloc)
}
