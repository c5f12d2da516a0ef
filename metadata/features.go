package metadata

// The finalized feature levels of KIP-584/KIP-1022, as Kafka 4.2 names them: what the
// whole cluster agreed to use, so that behaviour that old brokers or the metadata log
// of an older release cannot follow is switched on only once every node can.
const (
	// FeatureMetadataVersion is metadata.version: the metadata records' level.
	FeatureMetadataVersion = "metadata.version"
	// FeatureTransactionVersion is transaction.version: 2 enables Transactions V2
	// (KIP-890 part 2: an epoch bump per transaction, implicit partition adds by
	// Produce v12, EndTxn v5).
	FeatureTransactionVersion = "transaction.version"
	// FeatureGroupVersion is group.version: 1 enables the KIP-848 consumer protocol.
	FeatureGroupVersion = "group.version"
	// FeatureEligibleLeaderReplicasVersion is eligible.leader.replicas.version: 1
	// enables KIP-966's eligible leader replicas.
	FeatureEligibleLeaderReplicasVersion = "eligible.leader.replicas.version"
	// FeatureShareVersion is share.version: 1 enables KIP-932 share groups.
	FeatureShareVersion = "share.version"
)

// FeatureLevel returns the finalized level of feature name, 0 when none is finalized.
// An image without any feature record (a cluster formed before Petrel had them) reads
// its legacy levels (feature_levels.go).
func (im *Image) FeatureLevel(name string) int16 {
	if im == nil || im.Features == nil {
		return legacyFeatureLevels[name]
	}
	return im.Features[name]
}
