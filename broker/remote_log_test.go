package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
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

// TestRemoteLogBounds: the highest copied offset counts only copied segments, and of
// them only the records of the replica's own lineage: L1 copied epoch 5 up to 199; on
// L2, elected uncleanly with epoch 5 only up to 149 and writing epoch 6 from 150, it
// is 149, so local retention keeps epoch 6's records until they are copied.
func TestRemoteLogBounds(t *testing.T) {
	epochs := func(e ...metadata.RemoteEpochStart) []metadata.RemoteEpochStart { return e }
	segs := []metadata.RemoteLogSegment{
		{StartOffset: 0, EndOffset: 9, State: metadata.DeleteSegmentStarted, LeaderEpochs: epochs(metadata.RemoteEpochStart{Epoch: 5, StartOffset: 0})},
		{StartOffset: 10, EndOffset: 99, State: metadata.CopySegmentFinished, LeaderEpochs: epochs(metadata.RemoteEpochStart{Epoch: 5, StartOffset: 10})},
		{StartOffset: 100, EndOffset: 199, State: metadata.CopySegmentFinished, LeaderEpochs: epochs(metadata.RemoteEpochStart{Epoch: 5, StartOffset: 100})},
		{StartOffset: 200, EndOffset: 239, State: metadata.CopySegmentStarted, LeaderEpochs: epochs(metadata.RemoteEpochStart{Epoch: 5, StartOffset: 200})},
	}
	l1 := []segment.EpochEntry{{Epoch: 5, StartOffset: 0}}
	if h, s := remoteLogBounds(segs, l1, 240); h != 199 || s != 10 {
		t.Fatalf("L1's bounds %d, %d; want 199, 10", h, s)
	}
	l2 := []segment.EpochEntry{{Epoch: 5, StartOffset: 0}, {Epoch: 6, StartOffset: 150}}
	if h, s := remoteLogBounds(segs, l2, 181); h != 149 || s != 10 {
		t.Fatalf("L2's bounds %d, %d; want 149, 10", h, s)
	}
	if h, s := remoteLogBounds(nil, l1, 240); h != -1 || s != -1 {
		t.Fatalf("bounds of none %d, %d", h, s)
	}
}

// TestUpdateRemoteLogStates: every local replica of a tiered topic gets its remote log
// bounds from the image, again when they change, -1, -1 when its topic's remote
// segments are all gone, and a replica opened later gets them too.
func TestUpdateRemoteLogStates(t *testing.T) {
	dir := t.TempDir()
	pm := &partitionManager{dir: dir, parts: map[segment.TopicPartition]*localPartition{}}
	open := func(partition int32) *localPartition {
		log, _, err := segment.Open(filepath.Join(dir, segment.PartitionDirName("t", partition)), segment.DefaultConfig(), segment.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var records []byte
		for range 30 {
			records = append(records, oneRecordBatch()...)
		}
		if _, err := log.AppendAsLeader(records, 0); err != nil { // epoch 0 over 0-29, the segments' lineage
			t.Fatal(err)
		}
		p := replication.NewPartition("t", partition, log, 0, replication.Options{})
		t.Cleanup(func() { p.Stop(false) })
		lp := &localPartition{Partition: p, topicID: metadata.Uuid{1}}
		pm.parts[segment.TopicPartition{Topic: "t", Partition: partition}] = lp
		pm.remoteOpened.Store(true)
		return lp
	}
	apply := func(im *metadata.Image, recs ...metadata.Record) *metadata.Image {
		next, err := im.Apply(im.Offset+1, recs)
		if err != nil {
			t.Fatal(err)
		}
		pm.updateRemoteLogStates(next)
		return next
	}
	seg := func(id byte, state metadata.RemoteLogSegmentState, start, end int64) metadata.RemoteLogSegmentRecord {
		return metadata.RemoteLogSegmentRecord{TopicID: metadata.Uuid{1}, Segment: metadata.RemoteLogSegment{ID: metadata.Uuid{id},
			StartOffset: start, EndOffset: end, State: state, LeaderEpochs: []metadata.RemoteEpochStart{{Epoch: 0, StartOffset: start}}}}
	}
	check := func(lp *localPartition, wantHigh, _ int64) {
		t.Helper()
		if h := lp.TieredOffsets().HighestCopiedOffset; h != wantHigh {
			t.Fatalf("partition %d highest copied offset %d; want %d", lp.ID, h, wantHigh)
		}
	}
	p0 := open(0)
	im := apply(metadata.NewImage(), metadata.RegisterBrokerRecord{BrokerID: 0},
		metadata.TopicRecord{Name: "t", TopicID: metadata.Uuid{1}},
		metadata.PartitionRecord{TopicID: metadata.Uuid{1}, PartitionID: 0, Replicas: []int32{0}, ISR: []int32{0}, Leader: 0},
		metadata.PartitionRecord{TopicID: metadata.Uuid{1}, PartitionID: 1, Replicas: []int32{0}, ISR: []int32{0}, Leader: 0})
	im = apply(im, seg(1, metadata.CopySegmentStarted, 0, 9), seg(1, metadata.CopySegmentFinished, 0, 9))
	check(p0, 9, 0)
	im = apply(im, seg(2, metadata.CopySegmentStarted, 10, 19), seg(2, metadata.CopySegmentFinished, 10, 19))
	check(p0, 19, 0)
	p1 := open(1)
	im = apply(im, metadata.NoOpRecord{})
	check(p1, -1, -1)
	apply(im, seg(1, metadata.DeleteSegmentStarted, 0, 9), seg(1, metadata.DeleteSegmentFinished, 0, 9),
		seg(2, metadata.DeleteSegmentStarted, 10, 19), seg(2, metadata.DeleteSegmentFinished, 10, 19))
	check(p0, -1, -1)
}

// TestRemoteLogManagerStopsCopyOnLeadershipLoss: an image that moves the leadership of
// the partition being copied, or bumps its leader epoch, cancels the copy at once; one
// that changes nothing of it does not.
func TestRemoteLogManagerStopsCopyOnLeadershipLoss(t *testing.T) {
	im, err := metadata.NewImage().Apply(1, []metadata.Record{
		metadata.RegisterBrokerRecord{BrokerID: 0}, metadata.RegisterBrokerRecord{BrokerID: 1},
		metadata.TopicRecord{Name: "t", TopicID: metadata.Uuid{1}},
		metadata.PartitionRecord{TopicID: metadata.Uuid{1}, PartitionID: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}, Leader: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &remoteLogManager{b: &Broker{cfg: Config{NodeID: 0}}}
	copying := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		m.copying = remoteCopying{topicID: metadata.Uuid{1}, partition: 0, epoch: 0, cancel: cancel}
		return ctx
	}
	ctx := copying()
	m.imageChanged(im)
	if ctx.Err() != nil {
		t.Fatal("a copy cancelled while this broker still leads")
	}
	one := int32(1)
	moved, err := im.Apply(2, []metadata.Record{metadata.PartitionChangeRecord{TopicID: metadata.Uuid{1}, PartitionID: 0, Leader: &one}})
	if err != nil {
		t.Fatal(err)
	}
	m.imageChanged(moved)
	if ctx.Err() == nil {
		t.Fatal("the copy goes on after the leadership moved")
	}
	zero := int32(0)
	bumped, err := im.Apply(2, []metadata.Record{metadata.PartitionChangeRecord{TopicID: metadata.Uuid{1}, PartitionID: 0, Leader: &zero}})
	if err != nil {
		t.Fatal(err)
	}
	ctx = copying()
	m.imageChanged(bumped)
	if ctx.Err() == nil {
		t.Fatal("the copy goes on in a new leader epoch")
	}
}

// FuzzRemoteLogSegmentsRequest decodes arbitrary bytes as a RemoteLogSegments request
// (decoded before authorization): an error or a request that reads back as itself once
// encoded, never a panic. Run with
//
//	go test -run XXX -fuzz FuzzRemoteLogSegmentsRequest -fuzztime 20000x ./broker/
func FuzzRemoteLogSegmentsRequest(f *testing.F) {
	seed := &remoteLogSegmentsRequest{BrokerID: 1, BrokerEpoch: 5, Changes: []metadata.RemoteLogSegmentRecord{
		{TopicID: metadata.Uuid{1}, LeaderEpoch: 2, Segment: metadata.RemoteLogSegment{ID: metadata.Uuid{2}, EndOffset: 9,
			LeaderEpochs: []metadata.RemoteEpochStart{{Epoch: 2}}, CustomMetadata: []byte("x")}}}}
	f.Add(seed.AppendTo(nil))
	f.Add(remoteLogSegmentsBomb(1 << 12))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var r remoteLogSegmentsRequest
		if err := r.ReadFrom(raw); err != nil {
			return
		}
		var back remoteLogSegmentsRequest
		if err := back.ReadFrom(r.AppendTo(nil)); err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("decoded %+v reads back as %+v, %v", r, back, err)
		}
	})
}

// remoteLogSegmentsBomb is a request body of size bytes that announces as many changes
// as it has bytes, the first of them announcing as many leader epochs: what the
// decoder must refuse before allocating for them.
func remoteLogSegmentsBomb(size int) []byte {
	raw := make([]byte, size)
	binary.BigEndian.PutUint32(raw[12:], uint32(size-16))       // changes
	binary.BigEndian.PutUint32(raw[16+74:], uint32(size-16-78)) // the first change's leader epochs
	return raw
}

// TestRemoteLogSegmentsDecodeAllocatesLinearly: 1 MiB bodies of garbage (random bytes,
// counts as large as the bytes, a valid header before zeros) decode with an error or as
// what they say, allocating at most a few MiB: decoding runs before authorization.
func TestRemoteLogSegmentsDecodeAllocatesLinearly(t *testing.T) {
	const size = 1 << 20
	random := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // test data
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	countsAsBytes := remoteLogSegmentsBomb(size)
	maxChanges := make([]byte, size) // as many all-zero changes as fit: a valid request
	binary.BigEndian.PutUint32(maxChanges[12:], uint32((size-16)/remoteLogChangeMinBytes))
	for _, c := range []struct {
		name    string
		raw     []byte
		wantErr bool
	}{{"random", random, true}, {"counts as large as the bytes", countsAsBytes, true}, {"zero changes filling the body", maxChanges, false}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := new(remoteLogSegmentsRequest).ReadFrom(c.raw)
		runtime.ReadMemStats(&after)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: error %v, want one: %v", c.name, err, c.wantErr)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*size {
			t.Errorf("%s: decoding %d bytes allocated %d", c.name, size, alloc)
		}
	}
}

// TestCopyableSegmentsSkipThoseBelowTheLogStart: a local segment wholly below the log
// start offset (DeleteRecords, here kept on disk by an older build across a restart) is
// never copied; the one holding the log start is.
func TestCopyableSegmentsSkipThoseBelowTheLogStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), segment.PartitionDirName("t", 0))
	cfg := segment.DefaultConfig()
	cfg.RemoteStorageEnable = true
	log, _, err := segment.Open(dir, cfg, segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 { // segments [0,2) [2,4) [4,6) [6,8)
		if _, err := log.AppendAsLeader(append(oneRecordBatch(), oneRecordBatch()...), 0); err != nil {
			t.Fatal(err)
		}
		if err := log.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if log, _, err = segment.Open(dir, cfg, segment.OpenOptions{LogStartOffset: 3}); err != nil {
		t.Fatal(err)
	}
	p := replication.NewPartition("t", 0, log, 0, replication.Options{})
	t.Cleanup(func() { p.Stop(false) })
	if err := p.BecomeLeaderOf(0, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	segs, err := leaderLog{lp: &localPartition{Partition: p}}.CopyableSegments()
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, s := range segs {
		bases = append(bases, s.BaseOffset)
	}
	if len(bases) == 0 || bases[0] != 2 {
		t.Fatalf("copyable segments at %v (high watermark %d); want from 2", bases, p.State().HighWatermark)
	}
}

// TestRefreshRemoteLogBounds: a replica's bound follows its own log between image
// changes: a follower that held 10 records when segments up to 29 were copied is bound
// at 9, and at 29 once it holds them, at the next retention pass's refresh.
func TestRefreshRemoteLogBounds(t *testing.T) {
	log, _, err := segment.Open(filepath.Join(t.TempDir(), segment.PartitionDirName("t", 0)), segment.DefaultConfig(), segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := replication.NewPartition("t", 0, log, 0, replication.Options{})
	t.Cleanup(func() { p.Stop(false) })
	appendRecords := func(n int) {
		t.Helper()
		var records []byte
		for range n {
			records = append(records, oneRecordBatch()...)
		}
		if err := p.WithLog(func(l *segment.Log) error { _, err := l.AppendAsLeader(records, 0); return err }); err != nil {
			t.Fatal(err)
		}
	}
	appendRecords(10)
	lp := &localPartition{Partition: p, topicID: metadata.Uuid{1}}
	pm := &partitionManager{parts: map[segment.TopicPartition]*localPartition{{Topic: "t", Partition: 0}: lp}}
	seg := func(id byte, state metadata.RemoteLogSegmentState, start, end int64) metadata.RemoteLogSegmentRecord {
		return metadata.RemoteLogSegmentRecord{TopicID: metadata.Uuid{1}, Segment: metadata.RemoteLogSegment{ID: metadata.Uuid{id},
			StartOffset: start, EndOffset: end, State: state, LeaderEpochs: []metadata.RemoteEpochStart{{Epoch: 0, StartOffset: start}}}}
	}
	im, err := metadata.NewImage().Apply(1, []metadata.Record{metadata.RegisterBrokerRecord{BrokerID: 0},
		metadata.TopicRecord{Name: "t", TopicID: metadata.Uuid{1}},
		metadata.PartitionRecord{TopicID: metadata.Uuid{1}, PartitionID: 0, Replicas: []int32{0}, ISR: []int32{0}, Leader: 0},
		seg(1, metadata.CopySegmentStarted, 0, 9), seg(1, metadata.CopySegmentFinished, 0, 9),
		seg(2, metadata.CopySegmentStarted, 10, 29), seg(2, metadata.CopySegmentFinished, 10, 29)})
	if err != nil {
		t.Fatal(err)
	}
	pm.remoteOpened.Store(true)
	pm.updateRemoteLogStates(im)
	if h := lp.TieredOffsets().HighestCopiedOffset; h != 9 {
		t.Fatalf("holding 10 records: highest copied %d, want 9", h)
	}
	appendRecords(25)
	refreshRemoteLogBounds(im, lp)
	if h := lp.TieredOffsets().HighestCopiedOffset; h != 29 {
		t.Fatalf("holding 35 records: highest copied %d, want 29", h)
	}
}
