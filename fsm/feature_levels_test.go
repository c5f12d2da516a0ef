package fsm

import (
	"io"
	"maps"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// The finalized feature levels and the brokers' supported ranges survive a snapshot.
func TestSnapshotRestoreFeatureLevels(t *testing.T) {
	f := New()
	f.Apply(entry(t, 1, append([]metadata.Record{metadata.ClusterRecord{ClusterID: "c"},
		metadata.RegisterBrokerRecord{BrokerID: 0, Features: metadata.SupportedBrokerFeatures()}},
		metadata.BootstrapFeatureRecords()...)...))
	f.Apply(entry(t, 2, metadata.FeatureLevelRecord{Name: metadata.FeatureTransactionVersion, FeatureLevel: 0}))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	g := New()
	if err := g.Restore(io.NopCloser(&sink)); err != nil {
		t.Fatal(err)
	}
	want := f.Image().FinalizedFeatures()
	if got := g.Image().FinalizedFeatures(); !maps.Equal(got, want) || len(got) == 0 {
		t.Fatalf("restored levels %v, want %v", got, want)
	}
	if got := g.Image().Brokers[0].Features; len(got) != len(metadata.SupportedFeatures()) {
		t.Fatalf("restored broker features %v", got)
	}
}
