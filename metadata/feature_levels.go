package metadata

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FeatureLevelRecordType is Kafka's FeatureLevelRecord (metadata record api key 12).
const FeatureLevelRecordType RecordType = 12

// FeatureLevelRecord finalizes one feature at a level (KIP-584, KIP-1022; Kafka's
// FeatureLevelRecord). Level 0 removes the feature from the finalized set (disabled).
type FeatureLevelRecord struct {
	Name         string `json:"name"`
	FeatureLevel int16  `json:"featureLevel"`
}

// Type implements Record.
func (FeatureLevelRecord) Type() RecordType { return FeatureLevelRecordType }

// Version implements Record.
func (FeatureLevelRecord) Version() uint16 { return 0 }

// FeatureRange is the range of levels of one feature a node supports.
type FeatureRange struct {
	Min int16 `json:"min"`
	Max int16 `json:"max"`
}

// Contains reports whether level lies in the range.
func (r FeatureRange) Contains(level int16) bool { return level >= r.Min && level <= r.Max }

// BrokerFeature is one supported feature range a broker registered with (Kafka's
// BrokerRegistration Features).
type BrokerFeature struct {
	Name  string       `json:"name"`
	Range FeatureRange `json:"range"`
}

// Metadata versions this build knows (Kafka 4.2's MetadataVersion feature levels).
const (
	// MetadataVersionMinimum is 3.3-IV3, the oldest metadata.version Kafka 4 supports.
	MetadataVersionMinimum int16 = 7
	// MetadataVersion40IV0 is 4.0-IV0: group.version 1 needs at least it.
	MetadataVersion40IV0 int16 = 22
	// MetadataVersion40IV1 is 4.0-IV1: eligible.leader.replicas.version 1 needs at
	// least it.
	MetadataVersion40IV1 int16 = 23
	// MetadataVersionLatest is 4.2-IV1, Kafka 4.2's latest production level and the one
	// a new cluster is formed at.
	MetadataVersionLatest int16 = 29
)

// TransactionVersionServed is the highest transaction.version this build serves, the
// top of its supported range and a new cluster's level, as Kafka 4.2's: 2, Transactions
// V2 (Produce v12's implicit partition adds, EndTxn v5's epoch bump).
const TransactionVersionServed int16 = 2

// metadataVersionChanges are the metadata.version levels, among those supported, that
// changed the metadata records (Kafka's didMetadataChange): a safe downgrade may not
// cross one, since it could drop information.
var metadataVersionChanges = []int16{8, 10, 11, 14, 15, 17, 23}

// SupportedFeatures returns the feature ranges this build supports: Kafka 4.2's.
func SupportedFeatures() map[string]FeatureRange {
	return map[string]FeatureRange{
		FeatureMetadataVersion:               {MetadataVersionMinimum, MetadataVersionLatest},
		FeatureTransactionVersion:            {0, TransactionVersionServed},
		FeatureGroupVersion:                  {0, 1},
		FeatureEligibleLeaderReplicasVersion: {0, 1},
		FeatureShareVersion:                  {0, 1},
	}
}

// SupportedBrokerFeatures is SupportedFeatures as a registration carries it, sorted by
// name.
func SupportedBrokerFeatures() []BrokerFeature {
	sup := SupportedFeatures()
	out := make([]BrokerFeature, 0, len(sup))
	for _, name := range slices.Sorted(maps.Keys(sup)) {
		out = append(out, BrokerFeature{Name: name, Range: sup[name]})
	}
	return out
}

// bootstrapFeatureLevels are the levels a new cluster is formed at: Kafka 4.2's
// defaults for its latest production metadata.version, eligible leader replicas
// included (Kafka 4.1 and later form new clusters with eligible.leader.replicas.version
// 1; a partition whose only in-sync replica shut down uncleanly elects it again when it
// returns, elr_last_known.go). A cluster formed before keeps its recorded levels.
var bootstrapFeatureLevels = map[string]int16{
	FeatureMetadataVersion:               MetadataVersionLatest,
	FeatureTransactionVersion:            TransactionVersionServed,
	FeatureGroupVersion:                  1,
	FeatureEligibleLeaderReplicasVersion: 1,
	FeatureShareVersion:                  1,
}

// legacyFeatureLevels are the levels of a cluster whose metadata log holds no
// FeatureLevelRecord (formed before Petrel had them): what it already served. KIP-848
// and share groups were served, so group.version and share.version read 1;
// Transactions V1 and no eligible leader replicas, so transaction.version and
// eligible.leader.replicas.version read 0; metadata.version reads 4.0-IV0, the lowest
// level at which group.version 1 is valid.
var legacyFeatureLevels = map[string]int16{
	FeatureMetadataVersion: MetadataVersion40IV0,
	FeatureGroupVersion:    1,
	FeatureShareVersion:    1,
}

// BootstrapFeatureRecords are the FeatureLevelRecords a new cluster's first controller
// writes with the cluster id, sorted by name.
func BootstrapFeatureRecords() []Record {
	return levelRecords(bootstrapFeatureLevels)
}

func levelRecords(levels map[string]int16) []Record {
	out := make([]Record, 0, len(levels))
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		out = append(out, FeatureLevelRecord{Name: name, FeatureLevel: levels[name]})
	}
	return out
}

// FinalizedFeatures returns the finalized levels above 0 by name: the recorded ones, or
// the legacy levels of a cluster without feature records. The map is the caller's.
func (im *Image) FinalizedFeatures() map[string]int16 {
	if im == nil || im.Features == nil {
		return maps.Clone(legacyFeatureLevels)
	}
	return maps.Clone(im.Features)
}

// applyFeatureLevel applies a FeatureLevelRecord, replacing the Features map.
func (im *Image) applyFeatureLevel(r FeatureLevelRecord) error {
	if r.Name == "" || r.FeatureLevel < 0 || (r.Name == FeatureMetadataVersion && r.FeatureLevel < MetadataVersionMinimum) {
		return fmt.Errorf("%w: feature %q at level %d", ErrInvalidRecord, r.Name, r.FeatureLevel)
	}
	next := maps.Clone(im.Features)
	if next == nil {
		next = map[string]int16{}
	}
	if r.FeatureLevel == 0 {
		delete(next, r.Name)
	} else {
		next[r.Name] = r.FeatureLevel
	}
	im.Features = next
	return nil
}

// UpgradeType is UpdateFeatures' upgrade type (Kafka's FeatureUpdate.UpgradeType).
type UpgradeType int8

// Kafka's upgrade types.
const (
	Upgrade         UpgradeType = 1
	SafeDowngrade   UpgradeType = 2
	UnsafeDowngrade UpgradeType = 3
)

// FeatureUpdate is one requested change of UpdateFeatures.
type FeatureUpdate struct {
	Name  string
	Level int16
	Type  UpgradeType
}

// ErrInvalidUpdateVersion refuses a feature update (Kafka's INVALID_UPDATE_VERSION).
var ErrInvalidUpdateVersion = errors.New("metadata: invalid update version")

// PlanFeatureUpdates validates updates against the image, the controller's own
// supported ranges and every registered broker's, Kafka's way, and returns the records
// that apply them: all or nothing. A cluster without feature records gets its legacy
// levels written too, so that its other features keep their levels. No change at all
// is no records.
func PlanFeatureUpdates(im *Image, controllerID int32, supported map[string]FeatureRange, updates []FeatureUpdate) ([]Record, error) {
	current := im.FinalizedFeatures()
	next := maps.Clone(current)
	for _, u := range updates {
		if err := checkFeatureUpdate(im, controllerID, supported, current[u.Name], u); err != nil {
			return nil, err
		}
		if u.Level == 0 {
			delete(next, u.Name)
		} else {
			next[u.Name] = u.Level
		}
	}
	if err := checkFeatureDependencies(next); err != nil {
		return nil, err
	}
	if im.Features != nil && maps.Equal(next, current) {
		return nil, nil
	}
	if im.Features == nil {
		return levelRecords(next), nil // the whole set, so no legacy level is lost
	}
	var out []Record
	for _, u := range updates {
		if u.Level != current[u.Name] {
			out = append(out, FeatureLevelRecord{Name: u.Name, FeatureLevel: u.Level})
		}
	}
	return out, nil
}

func checkFeatureUpdate(im *Image, controllerID int32, supported map[string]FeatureRange, current int16, u FeatureUpdate) error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: Invalid update version %d for feature %s. %s", ErrInvalidUpdateVersion, u.Level, u.Name, fmt.Sprintf(format, args...))
	}
	local, ok := supported[u.Name]
	if !ok {
		return invalid("The controller does not support this feature.")
	}
	if u.Level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	switch {
	case u.Type != Upgrade && u.Type != SafeDowngrade && u.Type != UnsafeDowngrade:
		return invalid("Unknown upgrade type %d.", u.Type)
	case u.Level < current && u.Type == Upgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case u.Level > current && u.Type != Upgrade:
		return invalid("Can't downgrade to a newer version.")
	}
	if u.Level == current {
		return nil
	}
	if !local.Contains(u.Level) && !(u.Level == 0 && u.Name != FeatureMetadataVersion) {
		return invalid("Local controller %d only supports versions %d-%d", controllerID, local.Min, local.Max)
	}
	for _, id := range slices.Sorted(maps.Keys(im.Brokers)) {
		b := im.Brokers[id]
		if b.Features == nil {
			return invalid("Broker %d registered without supported features (an older Petrel); restart it on this release first.", id)
		}
		r, ok := b.featureRange(u.Name)
		if u.Level != 0 && (!ok || !r.Contains(u.Level)) {
			return invalid("Broker %d does not support this feature at this level (supports %d-%d).", id, r.Min, r.Max)
		}
	}
	if u.Name == FeatureMetadataVersion && u.Level < current {
		if u.Type == UnsafeDowngrade {
			return invalid("Unsafe metadata downgrade is not supported in this version.")
		}
		for _, v := range metadataVersionChanges {
			if v > u.Level && v <= current {
				return invalid("Refusing to perform the requested downgrade because it might delete metadata information.")
			}
		}
	}
	return nil
}

// featureDependencies are Kafka's hard UpdateFeatures dependencies: a feature at a
// level needs metadata.version at least so high.
var featureDependencies = map[string]int16{
	FeatureGroupVersion:                  MetadataVersion40IV0,
	FeatureEligibleLeaderReplicasVersion: MetadataVersion40IV1,
}

func checkFeatureDependencies(levels map[string]int16) error {
	mv := levels[FeatureMetadataVersion]
	for _, name := range slices.Sorted(maps.Keys(featureDependencies)) {
		if levels[name] >= 1 && mv < featureDependencies[name] {
			return fmt.Errorf("%w: Invalid update version %d for feature %s. %s %d requires %s to be at least %d, but it would be %d.",
				ErrInvalidUpdateVersion, levels[name], name, name, levels[name], FeatureMetadataVersion, featureDependencies[name], mv)
		}
	}
	return nil
}

// featureRange returns the broker's registered range of the feature.
func (b *Broker) featureRange(name string) (FeatureRange, bool) {
	for _, f := range b.Features {
		if f.Name == name {
			return f.Range, true
		}
	}
	return FeatureRange{}, false
}

// UnsupportedFinalized returns an error naming the first finalized feature level the
// ranges do not cover: a broker registering with them could not follow the cluster.
func UnsupportedFinalized(im *Image, ranges []BrokerFeature) error {
	b := &Broker{Features: ranges}
	finalized := im.FinalizedFeatures()
	for _, name := range slices.Sorted(maps.Keys(finalized)) {
		if r, ok := b.featureRange(name); !ok || !r.Contains(finalized[name]) {
			return fmt.Errorf("Unable to register because the broker does not support finalized version %d of %s. The broker supports versions %d-%d",
				finalized[name], name, r.Min, r.Max)
		}
	}
	return nil
}

// metadataVersionNames are Kafka's release names of the metadata.version levels this
// build supports (MetadataVersionMinimum to MetadataVersionLatest).
var metadataVersionNames = []string{"3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1",
	"3.6-IV2", "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0", "4.0-IV0", "4.0-IV1",
	"4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1", "4.2-IV0", "4.2-IV1"}

// MetadataVersionName returns Kafka's name of a metadata.version level ("4.2-IV1"), or
// the number for one this build does not know.
func MetadataVersionName(level int16) string {
	if i := int(level - MetadataVersionMinimum); i >= 0 && i < len(metadataVersionNames) {
		return metadataVersionNames[i]
	}
	return fmt.Sprint(level)
}

// ParseMetadataVersion reads a metadata.version as kafka-features.sh takes it: a
// release with its IV ("3.7-IV0") or a release alone ("4.2": its latest IV).
func ParseMetadataVersion(s string) (int16, bool) {
	found := int16(-1)
	for i, name := range metadataVersionNames {
		if name == s || strings.HasPrefix(name, s+"-IV") {
			found = MetadataVersionMinimum + int16(i)
		}
	}
	return found, found >= 0
}
