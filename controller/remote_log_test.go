package controller

import (
	"errors"
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
	outcomes, err := c.RecordRemoteLogSegments(ctx, 1, -1, []metadata.RemoteLogSegmentRecord{
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
	outcomes, err = c.RecordRemoteLogSegments(ctx, 2, -1, []metadata.RemoteLogSegmentRecord{remoteChange(1, metadata.DeleteSegmentStarted, 1)})
	if err != nil || !errors.Is(outcomes[0], metadata.ErrRemoteLogNotLeader) {
		t.Fatalf("from a follower: %v, %v", outcomes, err)
	}
}
