package fsm

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/metadata"
)

func entry(t *testing.T, index uint64, recs ...metadata.Record) *raft.Log {
	t.Helper()
	data, err := metadata.EncodeRecords(recs...)
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: data}
}

func TestApplyPublishesAndRefuses(t *testing.T) {
	f := New()
	changed := f.Changed()
	tid := metadata.Uuid{1}
	res := f.Apply(entry(t, 1, metadata.TopicRecord{Name: "t", TopicID: tid},
		metadata.PartitionRecord{TopicID: tid, Replicas: []int32{0}, ISR: []int32{0}})).(ApplyResult)
	if res.Err != nil || res.Image.Topic("t") == nil {
		t.Fatalf("apply: %+v", res)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("subscribers were not told")
	}
	res = f.Apply(entry(t, 2, metadata.TopicRecord{Name: "t", TopicID: metadata.Uuid{2}})).(ApplyResult)
	if !errors.Is(res.Err, metadata.ErrTopicExists) || f.Image().Offset != 2 || len(f.Image().Topics) != 1 {
		t.Fatalf("refusal: %+v", res)
	}
}

func TestApplyPanicsOnUndecodableEntry(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	New().Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte("garbage")})
}

type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func TestSnapshotRestore(t *testing.T) {
	f := New()
	tid := metadata.Uuid{3}
	v := "42"
	f.Apply(entry(t, 1, metadata.ClusterRecord{ClusterID: "c"}, metadata.RegisterBrokerRecord{BrokerID: 0}))
	f.Apply(entry(t, 2, metadata.TopicRecord{Name: "x", TopicID: tid},
		metadata.PartitionRecord{TopicID: tid, Replicas: []int32{0}, ISR: []int32{0}},
		metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: "x", Name: "retention.ms", Value: &v}))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	g := New()
	g.Apply(entry(t, 1, metadata.TopicRecord{Name: "stale", TopicID: metadata.Uuid{9}}))
	if err := g.Restore(io.NopCloser(&sink)); err != nil {
		t.Fatal(err)
	}
	want, got := f.Image(), g.Image()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored image differs:\n%+v\n%+v", got, want)
	}
	if err := g.Restore(io.NopCloser(bytes.NewBufferString(`{"version":99}`))); err == nil {
		t.Fatal("restored an unknown snapshot version")
	}
}
