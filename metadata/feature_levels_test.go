package metadata

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func featureImage(t *testing.T, records ...Record) *Image {
	t.Helper()
	im, err := NewImage().Apply(1, records)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func TestFeatureLevelsBootstrapAndLegacy(t *testing.T) {
	legacy := featureImage(t, ClusterRecord{ClusterID: "c"})
	for name, want := range map[string]int16{FeatureMetadataVersion: 22, FeatureGroupVersion: 1, FeatureShareVersion: 1,
		FeatureTransactionVersion: 0, FeatureEligibleLeaderReplicasVersion: 0} {
		if got := legacy.FeatureLevel(name); got != want {
			t.Errorf("legacy %s = %d, want %d", name, got, want)
		}
	}
	fresh := featureImage(t, append([]Record{ClusterRecord{ClusterID: "c"}}, BootstrapFeatureRecords()...)...)
	for name, want := range map[string]int16{FeatureMetadataVersion: 29, FeatureGroupVersion: 1, FeatureShareVersion: 1,
		FeatureTransactionVersion: TransactionVersionServed, FeatureEligibleLeaderReplicasVersion: 1} {
		if got := fresh.FeatureLevel(name); got != want {
			t.Errorf("bootstrapped %s = %d, want %d", name, got, want)
		}
	}
	// Copy on write: the earlier image's map is never modified.
	before := fresh.Features
	next, err := fresh.Apply(2, []Record{FeatureLevelRecord{Name: FeatureTransactionVersion, FeatureLevel: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if before[FeatureTransactionVersion] != TransactionVersionServed || next.FeatureLevel(FeatureTransactionVersion) != 0 {
		t.Fatalf("copy on write broken: before %v next %v", before, next.Features)
	}
	if _, ok := next.FinalizedFeatures()[FeatureTransactionVersion]; ok {
		t.Fatal("a feature at level 0 is still finalized")
	}
	if _, err := fresh.Apply(3, []Record{FeatureLevelRecord{Name: FeatureMetadataVersion, FeatureLevel: 0}}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("metadata.version 0 applied: %v", err)
	}
}

func TestFeatureLevelRecordRoundTrip(t *testing.T) {
	recs := append(BootstrapFeatureRecords(), RegisterBrokerRecord{BrokerID: 1, Features: SupportedBrokerFeatures()})
	data, err := EncodeRecords(recs...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecords(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) || got[0] != recs[0] {
		t.Fatalf("decoded %v, want %v", got, recs)
	}
	if rb := got[len(got)-1].(RegisterBrokerRecord); len(rb.Features) != len(SupportedFeatures()) {
		t.Fatalf("registration features lost: %+v", rb)
	}
}

func planImage(t *testing.T, bootstrapped bool, brokerFeatures []BrokerFeature) *Image {
	t.Helper()
	recs := []Record{ClusterRecord{ClusterID: "c"}, RegisterBrokerRecord{BrokerID: 0, Features: brokerFeatures}}
	if bootstrapped {
		recs = append(recs, BootstrapFeatureRecords()...)
	}
	return featureImage(t, recs...)
}

func TestPlanFeatureUpdates(t *testing.T) {
	sup := SupportedFeatures()
	all := SupportedBrokerFeatures()
	tests := []struct {
		name         string
		bootstrapped bool
		broker       []BrokerFeature
		updates      []FeatureUpdate
		wantErr      string
		want         map[string]int16 // the finalized levels after applying
	}{
		{name: "upgrade TV on a legacy cluster keeps the legacy levels", broker: all,
			updates: []FeatureUpdate{{FeatureTransactionVersion, 1, Upgrade}},
			want:    map[string]int16{FeatureMetadataVersion: 22, FeatureGroupVersion: 1, FeatureShareVersion: 1, FeatureTransactionVersion: 1}},
		{name: "downgrade needs a downgrade type", bootstrapped: true, broker: all,
			updates: []FeatureUpdate{{FeatureTransactionVersion, 0, Upgrade}}, wantErr: "without setting the upgrade type"},
		{name: "a downgrade type to a newer version", bootstrapped: true, broker: all,
			updates: []FeatureUpdate{{FeatureMetadataVersion, 28, SafeDowngrade}, {FeatureGroupVersion, 1, SafeDowngrade}},
			want: map[string]int16{FeatureMetadataVersion: 28, FeatureGroupVersion: 1, FeatureShareVersion: 1, FeatureTransactionVersion: 2,
				FeatureEligibleLeaderReplicasVersion: 1}},
		{name: "safe downgrade of a feature to 0 disables it", bootstrapped: true, broker: all,
			updates: []FeatureUpdate{{FeatureEligibleLeaderReplicasVersion, 0, SafeDowngrade}},
			want:    map[string]int16{FeatureMetadataVersion: 29, FeatureGroupVersion: 1, FeatureShareVersion: 1, FeatureTransactionVersion: 2}},
		{name: "beyond the controller's range", bootstrapped: true, broker: all,
			updates: []FeatureUpdate{{FeatureTransactionVersion, 3, Upgrade}}, wantErr: "only supports versions 0-2"},
		{name: "unknown feature", bootstrapped: true, broker: all,
			updates: []FeatureUpdate{{"no.such.version", 1, Upgrade}}, wantErr: "does not support this feature"},
		{name: "a broker without the level", broker: []BrokerFeature{{FeatureTransactionVersion, FeatureRange{0, 0}}},
			updates: []FeatureUpdate{{FeatureTransactionVersion, 1, Upgrade}}, wantErr: "Broker 0 does not support"},
		{name: "a broker of an older Petrel", updates: []FeatureUpdate{{FeatureTransactionVersion, 1, Upgrade}},
			wantErr: "registered without supported features"},
		{name: "unsafe metadata downgrade", bootstrapped: true, broker: all,
			updates: []FeatureUpdate{{FeatureMetadataVersion, 28, UnsafeDowngrade}}, wantErr: "Unsafe metadata downgrade"},
		{name: "safe metadata downgrade across a metadata change", bootstrapped: true, broker: all,
			updates: []FeatureUpdate{{FeatureMetadataVersion, 22, SafeDowngrade}}, wantErr: "might delete metadata information"},
		{name: "dependency: ELR needs 4.0-IV1", broker: all,
			updates: []FeatureUpdate{{FeatureEligibleLeaderReplicasVersion, 1, Upgrade}}, wantErr: "requires metadata.version to be at least 23"},
		{name: "dependency satisfied in the same request", broker: all,
			updates: []FeatureUpdate{{FeatureMetadataVersion, 29, Upgrade}, {FeatureEligibleLeaderReplicasVersion, 1, Upgrade}},
			want:    map[string]int16{FeatureMetadataVersion: 29, FeatureGroupVersion: 1, FeatureShareVersion: 1, FeatureEligibleLeaderReplicasVersion: 1}},
		{name: "no change", bootstrapped: true, broker: all,
			updates: []FeatureUpdate{{FeatureTransactionVersion, 2, Upgrade}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			im := planImage(t, tc.bootstrapped, tc.broker)
			recs, err := PlanFeatureUpdates(im, 0, sup, tc.updates)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidUpdateVersion) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(recs) != 0 {
					t.Fatalf("records for no change: %v", recs)
				}
				return
			}
			next, err := im.Apply(5, recs)
			if err != nil {
				t.Fatal(err)
			}
			if got := next.FinalizedFeatures(); !maps.Equal(got, tc.want) {
				t.Fatalf("finalized %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnsupportedFinalized(t *testing.T) {
	im := planImage(t, true, nil)
	if err := UnsupportedFinalized(im, SupportedBrokerFeatures()); err != nil {
		t.Fatal(err)
	}
	old := []BrokerFeature{{FeatureMetadataVersion, FeatureRange{7, 22}}}
	if err := UnsupportedFinalized(im, old); err == nil || !strings.Contains(err.Error(), "does not support finalized version") {
		t.Fatalf("an old broker's ranges accepted: %v", err)
	}
}
