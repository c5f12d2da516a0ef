package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// finalizedVia reads node i's finalized feature levels from its ApiVersions v4 answer.
func (c *Cluster) finalizedVia(ctx context.Context, t testing.TB, i int) (map[string]int16, *kmsg.ApiVersionsResponse) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "petrel-test", "1"
	resp, err := c.RequestTo(ctx, t, i, req)
	if err != nil {
		t.Fatalf("node %d ApiVersions: %v", i, err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	levels := map[string]int16{}
	for _, f := range av.FinalizedFeatures {
		levels[f.Name] = f.MaxVersionLevel
	}
	return levels, av
}

func updateFeatures(ctx context.Context, t testing.TB, c *Cluster, i int, version int16, validateOnly bool, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.ValidateOnly, req.FeatureUpdates = version, validateOnly, updates
	resp, err := c.RequestTo(ctx, t, i, req)
	if err != nil {
		t.Fatalf("UpdateFeatures via node %d: %v", i, err)
	}
	return resp.(*kmsg.UpdateFeaturesResponse)
}

func featureUpdate(name string, level int16, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, typ
	return u
}

// A new cluster is formed at Kafka 4.2's default levels, every node reports them in
// ApiVersions, and a change through UpdateFeatures sent to any node is seen by every
// node once it is answered; refused changes answer Kafka's errors and change nothing.
func TestCluster_FeaturesUpdateSeenByEveryNode(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	ctx := testContext(t)
	want := map[string]int16{metadata.FeatureMetadataVersion: 29, metadata.FeatureTransactionVersion: metadata.TransactionVersionServed,
		metadata.FeatureGroupVersion: 1, metadata.FeatureShareVersion: 1, metadata.FeatureEligibleLeaderReplicasVersion: 1}
	for i := range 3 {
		got, av := c.finalizedVia(ctx, t, i)
		if fmt.Sprint(got) != fmt.Sprint(want) || av.FinalizedFeaturesEpoch <= 0 {
			t.Fatalf("node %d finalized %v (epoch %d), want %v", i, got, av.FinalizedFeaturesEpoch, want)
		}
		if len(av.SupportedFeatures) != 5 {
			t.Fatalf("node %d supported features %+v", i, av.SupportedFeatures)
		}
	}
	ctrl := c.Controller()
	other := (ctrl + 1) % 3
	// Refused: a downgrade without a downgrade type.
	r := updateFeatures(ctx, t, c, other, 2, false, featureUpdate(metadata.FeatureTransactionVersion, 0, 1))
	if r.ErrorCode != kerr.InvalidUpdateVersion.Code || !strings.Contains(deref(r.ErrorMessage), "without setting the upgrade type") {
		t.Fatalf("downgrade as an upgrade: %+v", r)
	}
	// Refused: beyond every node's range.
	r = updateFeatures(ctx, t, c, other, 2, false, featureUpdate(metadata.FeatureTransactionVersion, 3, 1))
	if r.ErrorCode != kerr.InvalidUpdateVersion.Code || len(r.Results) != 0 || !strings.Contains(deref(r.ErrorMessage), "only supports versions 0-2") {
		t.Fatalf("beyond the range: %+v", r)
	}
	// Validate only: accepted, nothing changes.
	r = updateFeatures(ctx, t, c, other, 2, true, featureUpdate(metadata.FeatureTransactionVersion, 0, 2))
	if r.ErrorCode != 0 {
		t.Fatalf("validate only: %+v", r)
	}
	if got, _ := c.finalizedVia(ctx, t, ctrl); got[metadata.FeatureTransactionVersion] != metadata.TransactionVersionServed {
		t.Fatalf("validate only changed the level: %v", got)
	}
	// A safe downgrade through a node that is not the controller, then the upgrade
	// back: each is seen by every node when answered.
	for _, step := range []struct {
		level int16
		typ   int8
	}{{0, 2}, {metadata.TransactionVersionServed, 1}} {
		r = updateFeatures(ctx, t, c, other, 2, false, featureUpdate(metadata.FeatureTransactionVersion, step.level, step.typ))
		if r.ErrorCode != 0 {
			t.Fatalf("transaction.version to %d: %+v", step.level, r)
		}
		for i := range 3 {
			if got, _ := c.finalizedVia(ctx, t, i); got[metadata.FeatureTransactionVersion] != step.level {
				t.Fatalf("node %d reads transaction.version %d after the answer, want %d", i, got[metadata.FeatureTransactionVersion], step.level)
			}
		}
	}
}
