package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

func waitClusterID(t *testing.T, c *Controller) *metadata.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	im, err := c.Do(ctx, func(*metadata.Image) ([]metadata.Record, error) { return nil, nil })
	if err != nil || im.ClusterID == "" {
		t.Fatalf("no cluster id: %v", err)
	}
	return im
}

// A new cluster's first term writes the bootstrap levels with its cluster id; a
// cluster that already has an id (formed before feature levels) gets none and reads
// its legacy levels: group.version and share.version enabled, TV and ELR at 0.
func TestFeatureLevelsBootstrapOnlyOnANewCluster(t *testing.T) {
	q := newMemQuorum(t)
	q.leader.Store(true)
	im := waitClusterID(t, startController(t, q, time.Minute))
	if im.FeatureLevel(metadata.FeatureMetadataVersion) != metadata.MetadataVersionLatest ||
		im.FeatureLevel(metadata.FeatureTransactionVersion) != metadata.TransactionVersionServed ||
		im.FeatureLevel(metadata.FeatureEligibleLeaderReplicasVersion) != 1 || im.Features == nil {
		t.Fatalf("new cluster levels %v", im.Features)
	}

	legacy := newMemQuorum(t, metadata.ClusterRecord{ClusterID: "old"}, metadata.RegisterBrokerRecord{BrokerID: 0, Fenced: true})
	legacy.leader.Store(true)
	c := startController(t, legacy, time.Minute)
	im = waitClusterID(t, c)
	if im.Features != nil || im.FeatureLevel(metadata.FeatureGroupVersion) != 1 || im.FeatureLevel(metadata.FeatureShareVersion) != 1 ||
		im.FeatureLevel(metadata.FeatureTransactionVersion) != 0 || im.FeatureLevel(metadata.FeatureEligibleLeaderReplicasVersion) != 0 {
		t.Fatalf("legacy cluster levels %v, group %d", im.Features, im.FeatureLevel(metadata.FeatureGroupVersion))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Broker 0 registered without ranges (an older Petrel): no level may change yet.
	up := []metadata.FeatureUpdate{{Name: metadata.FeatureTransactionVersion, Level: 1, Type: metadata.Upgrade}}
	if _, err := c.UpdateFeatures(ctx, up, false); !errors.Is(err, metadata.ErrInvalidUpdateVersion) {
		t.Fatalf("update with an older broker registered: %v", err)
	}
	// Once it re-registers with its ranges, the update writes the whole set.
	if _, err := c.Register(ctx, Registration{BrokerID: 0, ClusterID: "old", Incarnation: metadata.Uuid{1},
		Features: metadata.SupportedBrokerFeatures()}); err != nil {
		t.Fatal(err)
	}
	im, err := c.UpdateFeatures(ctx, up, false)
	if err != nil || im.FeatureLevel(metadata.FeatureTransactionVersion) != 1 || im.FeatureLevel(metadata.FeatureGroupVersion) != 1 ||
		im.FeatureLevel(metadata.FeatureMetadataVersion) != metadata.MetadataVersion40IV0 {
		t.Fatalf("update on a legacy cluster: %v %v", im.Features, err)
	}
	// Now that levels are recorded, a broker without ranges, or with ranges that leave
	// a finalized level out, cannot register.
	if _, err := c.Register(ctx, Registration{BrokerID: 1, ClusterID: "old", Incarnation: metadata.Uuid{2}}); !errors.Is(err, ErrUnsupportedFeatures) {
		t.Fatalf("registration without ranges: %v", err)
	}
	narrow := []metadata.BrokerFeature{{Name: metadata.FeatureMetadataVersion, Range: metadata.FeatureRange{Min: 7, Max: 21}}}
	if _, err := c.Register(ctx, Registration{BrokerID: 1, ClusterID: "old", Incarnation: metadata.Uuid{2}, Features: narrow}); !errors.Is(err, ErrUnsupportedFeatures) {
		t.Fatalf("registration with narrow ranges: %v", err)
	}
}
