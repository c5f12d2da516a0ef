package broker

// The broker's side of KIP-584 features: the supported ranges a broker registers with,
// and the supported and finalized features ApiVersions v3+ carries (what kadm and
// `petrel features describe` read, as Kafka's DescribeFeatures does).

import (
	"maps"
	"slices"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// addSupportedFeatures puts this build's supported feature ranges in a registration.
func addSupportedFeatures(req *kmsg.BrokerRegistrationRequest) {
	for _, f := range metadata.SupportedBrokerFeatures() {
		rf := kmsg.NewBrokerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Range.Min, f.Range.Max
		req.Features = append(req.Features, rf)
	}
}

// registrationFeatures decodes a registration's supported feature ranges; nil when it
// carries none (a Petrel without features).
func registrationFeatures(r *kmsg.BrokerRegistrationRequest) []metadata.BrokerFeature {
	if len(r.Features) == 0 {
		return nil
	}
	out := make([]metadata.BrokerFeature, 0, len(r.Features))
	for _, f := range r.Features {
		out = append(out, metadata.BrokerFeature{Name: f.Name,
			Range: metadata.FeatureRange{Min: f.MinSupportedVersion, Max: f.MaxSupportedVersion}})
	}
	return out
}

// addApiVersionsFeatures fills ApiVersions v3+'s features from the current image:
// this build's supported ranges (v3 leaves out those whose minimum is 0, which clients
// before ApiVersions v4 cannot read, as Kafka does), the finalized levels above 0, and
// their epoch, the metadata offset of the image they were read from.
func (b *Broker) addApiVersionsFeatures(version int16, resp *kmsg.ApiVersionsResponse) {
	sup := metadata.SupportedFeatures()
	for _, name := range slices.Sorted(maps.Keys(sup)) {
		r := sup[name]
		if version < 4 && r.Min == 0 {
			continue
		}
		f := kmsg.NewApiVersionsResponseSupportedFeature()
		f.Name, f.MinVersion, f.MaxVersion = name, r.Min, r.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, f)
	}
	im := b.Image()
	finalized := im.FinalizedFeatures()
	for _, name := range slices.Sorted(maps.Keys(finalized)) {
		f := kmsg.NewApiVersionsResponseFinalizedFeature()
		f.Name, f.MinVersionLevel, f.MaxVersionLevel = name, finalized[name], finalized[name]
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, f)
	}
	resp.FinalizedFeaturesEpoch = int64(im.Offset)
}
