package broker

import (
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// pinned caps the client's versions of key at max.
func pinned(caps map[kmsg.Key]int16) kgo.Opt {
	v := kversion.Stable()
	for key, max := range caps {
		v.SetMaxKeyVersion(key.Int16(), max)
	}
	return kgo.MaxVersions(v)
}

// UpdateFeatures v0 and v1 repeat the top-level answer on each feature's result; v0's
// AllowDowngrade is a safe downgrade; ApiVersions v3 leaves out the supported features
// whose minimum is 0 (v4 has them all).
func TestUpdateFeaturesOldVersions(t *testing.T) {
	b := startTestBroker(t, "", nil)
	ctx := testContext(t)

	v3 := newClient(t, b, pinned(map[kmsg.Key]int16{kmsg.ApiVersions: 3}))
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, v3)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 3 || len(resp.SupportedFeatures) != 1 || resp.SupportedFeatures[0].Name != metadata.FeatureMetadataVersion ||
		len(resp.FinalizedFeatures) != 5 {
		t.Fatalf("ApiVersions v%d features: supported %+v finalized %+v", resp.Version, resp.SupportedFeatures, resp.FinalizedFeatures)
	}

	for _, version := range []int16{0, 1} {
		cl := newClient(t, b, pinned(map[kmsg.Key]int16{kmsg.UpdateFeatures: version}))
		req := kmsg.NewPtrUpdateFeaturesRequest()
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel = metadata.FeatureTransactionVersion, 0
		u.AllowDowngrade, u.UpgradeType = version == 0, 2 // each version's safe downgrade
		bad := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		bad.Feature, bad.MaxVersionLevel, bad.UpgradeType = metadata.FeatureShareVersion, 9, 1
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{u, bad}
		before := b.Image().FeatureLevel(metadata.FeatureTransactionVersion)
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		// All or nothing: the bad update fails the request, each result carries it.
		if r.Version != version || r.ErrorCode != kerr.InvalidUpdateVersion.Code || len(r.Results) != 2 ||
			r.Results[0].ErrorCode != r.ErrorCode || !strings.Contains(*r.Results[1].ErrorMessage, "only supports versions 0-1") {
			t.Fatalf("v%d refusal: %+v", version, r)
		}
		if b.Image().FeatureLevel(metadata.FeatureTransactionVersion) != before {
			t.Fatal("a refused request changed a level")
		}
		req.FeatureUpdates = req.FeatureUpdates[:1]
		if r, err = req.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 || len(r.Results) != 1 || r.Results[0].ErrorCode != 0 {
			t.Fatalf("v%d safe downgrade: %+v %v", version, r, err)
		}
		if got := b.Image().FeatureLevel(metadata.FeatureTransactionVersion); got != 0 {
			t.Fatalf("v%d: transaction.version %d after the downgrade", version, got)
		}
		// Back up, and a name given twice is INVALID_REQUEST.
		u.MaxVersionLevel, u.AllowDowngrade, u.UpgradeType = 1, false, 1
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{u, u}
		if r, _ = req.RequestWith(ctx, cl); r == nil || r.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("v%d duplicate: %+v", version, r)
		}
		req.FeatureUpdates = req.FeatureUpdates[:1]
		if r, err = req.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
			t.Fatalf("v%d upgrade: %+v %v", version, r, err)
		}
	}
}
