package broker

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/tiered"
)

// TestRemoteLogSegmentsWireRoundTrip: the RemoteLogSegments request and response read
// back what they wrote, and truncated bytes are an error, not a panic.
func TestRemoteLogSegmentsWireRoundTrip(t *testing.T) {
	req := &remoteLogSegmentsRequest{BrokerID: 2, BrokerEpoch: 77, Changes: []metadata.RemoteLogSegmentRecord{
		{TopicID: metadata.Uuid{1}, PartitionID: 3, LeaderEpoch: 4, Segment: metadata.RemoteLogSegment{
			ID: metadata.Uuid{9}, StartOffset: 10, EndOffset: 19, MaxTimestampMs: 1234, SizeInBytes: 4096, // BrokerID is the sender, not sent
			State: metadata.CopySegmentStarted, TxnIdxEmpty: true,
			LeaderEpochs:   []metadata.RemoteEpochStart{{Epoch: 3, StartOffset: 10}, {Epoch: 4, StartOffset: 15}},
			CustomMetadata: []byte("cm")}},
		{TopicID: metadata.Uuid{1}, PartitionID: 3, LeaderEpoch: 4, Segment: metadata.RemoteLogSegment{
			ID: metadata.Uuid{9}, State: metadata.CopySegmentFinished}},
	}}
	raw := req.AppendTo(nil)
	var back remoteLogSegmentsRequest
	if err := back.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Changes, req.Changes) || back.BrokerID != 2 || back.BrokerEpoch != 77 {
		t.Fatalf("read back %+v, want %+v", back, req)
	}
	for n := range len(raw) {
		if err := new(remoteLogSegmentsRequest).ReadFrom(raw[:n]); err == nil {
			t.Fatalf("%d of %d bytes read without an error", n, len(raw))
		}
	}
	resp := &remoteLogSegmentsResponse{ThrottleMillis: 5, ErrorCodes: []int16{0, 74}}
	var rback remoteLogSegmentsResponse
	if err := rback.ReadFrom(resp.AppendTo(nil)); err != nil || !reflect.DeepEqual(rback, *resp) {
		t.Fatalf("response read back %+v, %v", rback, err)
	}
}

// TestRemoteLogManagerRefusesIncompleteS3Settings: with remote storage enabled, a
// broker without a usable S3 configuration does not start, and says which setting is
// missing.
func TestRemoteLogManagerRefusesIncompleteS3Settings(t *testing.T) {
	_, err := Start(Config{NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
		Logger: hclog.NewNullLogger(), Properties: map[string]string{
			"remote.log.storage.system.enable": "true", "rsm.config.storage.s3.region": "us-east-1"}})
	if !errors.Is(err, tiered.ErrInvalidS3Config) || !strings.Contains(err.Error(), "rsm.config.storage.s3.bucket.name") {
		t.Fatalf("start: %v, want a refusal naming the bucket", err)
	}
}

// TestRemoteLogBounds: the highest copied offset and remote log start offset count
// only copied segments.
func TestRemoteLogBounds(t *testing.T) {
	segs := []metadata.RemoteLogSegment{
		{StartOffset: 0, EndOffset: 9, State: metadata.DeleteSegmentStarted},
		{StartOffset: 10, EndOffset: 19, State: metadata.CopySegmentFinished},
		{StartOffset: 20, EndOffset: 29, State: metadata.CopySegmentFinished},
		{StartOffset: 30, EndOffset: 39, State: metadata.CopySegmentStarted},
	}
	if h, s := remoteLogBounds(segs); h != 29 || s != 10 {
		t.Fatalf("bounds %d, %d; want 29, 10", h, s)
	}
	if h, s := remoteLogBounds(nil); h != -1 || s != -1 {
		t.Fatalf("bounds of none %d, %d", h, s)
	}
}
