package tiered

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// memMetadata is a RemoteLogMetadataManager over a metadata image, applying each
// change as the controller would (leader 0 at epoch 0 of topic {1} partition 0).
type memMetadata struct {
	mu sync.Mutex
	im *metadata.Image
}

func newMemMetadata(t *testing.T) *memMetadata {
	im, err := metadata.NewImage().Apply(1, []metadata.Record{
		metadata.RegisterBrokerRecord{BrokerID: 0},
		metadata.TopicRecord{Name: "t", TopicID: metadata.Uuid{1}},
		metadata.PartitionRecord{TopicID: metadata.Uuid{1}, Replicas: []int32{0}, ISR: []int32{0}, Leader: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &memMetadata{im: im}
}

func (m *memMetadata) apply(r metadata.RemoteLogSegmentRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next, err := m.im.Apply(m.im.Offset+1, []metadata.Record{r})
	if errors.Is(err, metadata.ErrInvalidRemoteLogTransition) {
		err = errors.Join(ErrSegmentUnknown, err)
	}
	m.im = next
	return err
}

func (m *memMetadata) AddRemoteLogSegmentMetadata(_ context.Context, md *RemoteLogSegmentMetadata, epoch int32) error {
	return m.apply(AddRecord(md, epoch))
}

func (m *memMetadata) UpdateRemoteLogSegmentMetadata(_ context.Context, u RemoteLogSegmentMetadataUpdate, epoch int32) error {
	return m.apply(UpdateRecord(u, epoch))
}

func (m *memMetadata) ListRemoteLogSegments(tp TopicIDPartition) []*RemoteLogSegmentMetadata {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*RemoteLogSegmentMetadata
	for _, s := range m.im.RemoteLogSegments(tp.TopicID, tp.Partition) {
		out = append(out, FromImage(tp, s))
	}
	return out
}

func (m *memMetadata) RemoteLogSegmentMetadata(tp TopicIDPartition, epoch int32, offset int64) (*RemoteLogSegmentMetadata, bool) {
	return SegmentFor(m.ListRemoteLogSegments(tp), epoch, offset)
}

func (m *memMetadata) HighestOffsetForEpoch(tp TopicIDPartition, epoch int32) (int64, bool) {
	return HighestOffsetForEpoch(m.ListRemoteLogSegments(tp), epoch)
}

// memStorage keeps copies by segment id; failCopies copies fail.
type memStorage struct {
	RemoteStorageManager
	copies     map[Uuid]LogSegmentData
	deleted    []Uuid
	failCopies int
}

func (s *memStorage) CopyLogSegmentData(_ context.Context, md *RemoteLogSegmentMetadata, data LogSegmentData) error {
	if s.failCopies > 0 {
		s.failCopies--
		return &StorageError{Op: "copyLogSegmentData", Err: errors.New("store down")}
	}
	s.copies[md.SegmentID.ID] = data
	return nil
}

func (s *memStorage) DeleteLogSegmentData(_ context.Context, md *RemoteLogSegmentMetadata) error {
	delete(s.copies, md.SegmentID.ID)
	s.deleted = append(s.deleted, md.SegmentID.ID)
	return nil
}

// fakeLog has segments [0,9], [10,19], [20,29] closed, epochs 0 from 0 and 1 from 15.
type fakeLog struct {
	leads bool
}

func (l *fakeLog) LeaderEpoch() (int32, bool) { return 0, l.leads }
func (l *fakeLog) LeaderEpochs() ([]EpochStart, int64) {
	return []EpochStart{{0, 0}, {1, 15}}, 35
}
func (l *fakeLog) CopyableSegments() ([]LocalSegment, error) {
	return []LocalSegment{{0, 9, 100, 1}, {10, 19, 100, 2}, {20, 29, 100, 3}}, nil
}
func (l *fakeLog) StageSegment(seg LocalSegment, dir string) (LogSegmentData, error) {
	p := filepath.Join(dir, "x.log")
	return LogSegmentData{LogSegment: p, OffsetIndex: p, TimeIndex: p, ProducerSnapshot: p}, os.WriteFile(p, nil, 0o644)
}

func newTestCopier(t *testing.T, store *memStorage, md *memMetadata) *Copier {
	id := byte(0)
	return &Copier{Storage: store, Metadata: md, BrokerID: 0, StagingDir: t.TempDir(), CallTimeout: time.Second,
		Now: time.Now, NewID: func() Uuid { id++; return metadata.Uuid{9, id} }}
}

// TestCopierCopiesAboveHighestCopied: a pass copies each closed segment once, oldest
// first, with its leader epochs and the checkpoint slice; the next pass copies nothing.
func TestCopierCopiesAboveHighestCopied(t *testing.T) {
	store, md := &memStorage{copies: map[Uuid]LogSegmentData{}}, newMemMetadata(t)
	c := newTestCopier(t, store, md)
	tp := TopicIDPartition{TopicID: metadata.Uuid{1}, Topic: "t"}
	log := &fakeLog{leads: true}
	if n, err := c.CopyPass(context.Background(), tp, log); n != 3 || err != nil {
		t.Fatalf("first pass: %d, %v", n, err)
	}
	if n, err := c.CopyPass(context.Background(), tp, log); n != 0 || err != nil {
		t.Fatalf("second pass: %d, %v", n, err)
	}
	segs := md.ListRemoteLogSegments(tp)
	if len(segs) != 3 || segs[1].State != CopySegmentFinished {
		t.Fatalf("segments %+v", segs)
	}
	if want := []EpochStart{{0, 10}, {1, 15}}; !reflect.DeepEqual(segs[1].SegmentLeaderEpochs, want) {
		t.Fatalf("epochs of [10,19]: %v, want %v", segs[1].SegmentLeaderEpochs, want)
	}
	if got := string(store.copies[segs[0].SegmentID.ID].LeaderEpochIndex); got != "0\n1\n0 0\n" {
		t.Fatalf("checkpoint slice of [0,9]: %q", got)
	}
	if got, ok := md.RemoteLogSegmentMetadata(tp, 1, 17); !ok || got.StartOffset != 10 {
		t.Fatalf("segment for epoch 1 offset 17: %+v %v", got, ok)
	}
}

// TestCopierAbandonsFailedCopies: a failed copy is deleted from the store and the
// metadata, the pass ends with the error, and the next pass copies the segment anew;
// a broker that no longer leads copies nothing.
func TestCopierAbandonsFailedCopies(t *testing.T) {
	store, md := &memStorage{copies: map[Uuid]LogSegmentData{}, failCopies: 1}, newMemMetadata(t)
	c := newTestCopier(t, store, md)
	tp := TopicIDPartition{TopicID: metadata.Uuid{1}, Topic: "t"}
	if n, err := c.CopyPass(context.Background(), tp, &fakeLog{leads: false}); n != 0 || !errors.Is(err, ErrNotLeader) {
		t.Fatalf("not leading: %d, %v", n, err)
	}
	if n, err := c.CopyPass(context.Background(), tp, &fakeLog{leads: true}); n != 0 || !errors.Is(err, ErrRemoteStorage) {
		t.Fatalf("failing store: %d, %v", n, err)
	}
	if segs := md.ListRemoteLogSegments(tp); len(segs) != 0 || len(store.deleted) != 1 {
		t.Fatalf("after the failed copy: segments %+v, deleted %v", segs, store.deleted)
	}
	if n, err := c.CopyPass(context.Background(), tp, &fakeLog{leads: true}); n != 3 || err != nil {
		t.Fatalf("retry: %d, %v", n, err)
	}
}

// TestThrottlePaces: reservations beyond the rate wait their turn.
func TestThrottlePaces(t *testing.T) {
	now := time.Unix(0, 0)
	th := NewThrottle(1000, func() time.Time { return now })
	if err := th.Wait(context.Background(), 1000); err != nil { // the first starts at once
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := th.Wait(ctx, 1000); !errors.Is(err, context.Canceled) { // must wait a second
		t.Fatalf("second reservation: %v, want to wait", err)
	}
	if NewThrottle(0, time.Now) != nil {
		t.Fatal("a zero rate throttles")
	}
}

// TestHighestCopiedOnLineage: a replica's highest copied offset counts only the copied
// records of its own lineage. L1 copied epoch 5 up to 199; L2, elected uncleanly with
// epoch 5 only up to 149, wrote epoch 6 from 150: on L2's lineage only up to 149 is
// copied, so local retention keeps epoch 6's records 150-180; on L1's, 199.
func TestHighestCopiedOnLineage(t *testing.T) {
	seg := func(state RemoteLogSegmentState, start, end int64, epochs ...EpochStart) *RemoteLogSegmentMetadata {
		return &RemoteLogSegmentMetadata{StartOffset: start, EndOffset: end, State: state, SegmentLeaderEpochs: epochs}
	}
	l1 := []*RemoteLogSegmentMetadata{
		seg(CopySegmentFinished, 0, 99, EpochStart{3, 0}, EpochStart{5, 50}),
		seg(CopySegmentFinished, 100, 199, EpochStart{5, 100}),
	}
	cases := []struct {
		name   string
		segs   []*RemoteLogSegmentMetadata
		epochs []EpochStart
		logEnd int64
		want   int64
	}{
		{"L2 after the unclean election", l1, []EpochStart{{3, 0}, {5, 50}, {6, 150}}, 181, 149},
		{"L1's own lineage", l1, []EpochStart{{3, 0}, {5, 50}}, 230, 199},
		{"a follower behind", l1, []EpochStart{{3, 0}, {5, 50}}, 120, 119},
		{"an epoch copied by nobody counts the one below", l1, []EpochStart{{3, 0}, {4, 50}}, 120, 49},
		{"no epochs", l1, nil, 0, -1},
		{"nothing copied", []*RemoteLogSegmentMetadata{seg(CopySegmentStarted, 0, 99, EpochStart{3, 0})}, []EpochStart{{3, 0}}, 200, -1},
		{"a gap within the epoch ends the run", []*RemoteLogSegmentMetadata{
			seg(CopySegmentFinished, 0, 99, EpochStart{3, 0}),
			seg(CopySegmentFinished, 150, 199, EpochStart{3, 150}),
		}, []EpochStart{{3, 0}}, 300, 99},
		{"L2's own copy above L1's", append(slices.Clone(l1), seg(CopySegmentFinished, 100, 180, EpochStart{5, 100}, EpochStart{6, 150})),
			[]EpochStart{{3, 0}, {5, 50}, {6, 150}}, 250, 180},
		{"L1 truncated to L2's lineage", append(slices.Clone(l1), seg(CopySegmentFinished, 100, 180, EpochStart{5, 100}, EpochStart{6, 150})),
			[]EpochStart{{3, 0}, {5, 50}, {6, 150}}, 170, 169},
	}
	for _, c := range cases {
		if got := HighestCopiedOnLineage(c.segs, c.epochs, c.logEnd); got != c.want {
			t.Errorf("%s: highest copied %d; want %d", c.name, got, c.want)
		}
	}
}
