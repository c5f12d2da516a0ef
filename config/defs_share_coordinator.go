package config

// shareCoordinatorConfigDefs are the share coordinator's properties (Kafka 4.2
// ShareCoordinatorConfig, KIP-932): the __share_group_state topic it keeps the share
// groups' durable state in, and its writes.
var shareCoordinatorConfigDefs = []Def{
	{Name: "share.coordinator.state.topic.num.partitions", Type: TypeInt, Default: "50", Validator: atLeast(1), ReadOnly: true,
		Doc: "Partitions of __share_group_state, fixed when it is created."},
	{Name: "share.coordinator.state.topic.replication.factor", Type: TypeShortOrInt, Default: "3", Validator: atLeast(1), ReadOnly: true,
		Doc: "Replication factor of __share_group_state; it is not created while fewer brokers are unfenced. Unset, it is min(3, number of --voters), 1 without --voters."},
	{Name: "share.coordinator.state.topic.min.isr", Type: TypeShortOrInt, Default: "2", Validator: atLeast(1), ReadOnly: true,
		Doc: "min.insync.replicas of __share_group_state (capped at its replication factor)."},
	{Name: "share.coordinator.state.topic.segment.bytes", Type: TypeInt, Default: "104857600", Validator: atLeast(1), ReadOnly: true,
		Doc: "Segment size of __share_group_state."},
	{Name: "share.coordinator.snapshot.update.records.per.snapshot", Type: TypeInt, Default: "500", Validator: atLeast(0), ReadOnly: true,
		Doc: "ShareUpdate records written for a share partition before its next write is a whole ShareSnapshot."},
	{Name: "share.coordinator.write.timeout.ms", Type: TypeInt, Default: "5000", Validator: atLeast(1), ReadOnly: true,
		Doc: "A share coordinator write not replicated by then is answered COORDINATOR_NOT_AVAILABLE (the leader tries again)."},
	{Name: "share.coordinator.load.buffer.size", Type: TypeInt, Default: "5242880", Validator: atLeast(1), ReadOnly: true,
		Doc: "Bytes read at a time while loading a __share_group_state partition."},
}

func init() {
	BrokerDefs = append(BrokerDefs, shareCoordinatorConfigDefs...)
	for _, d := range shareCoordinatorConfigDefs {
		brokerByName[d.Name] = d
	}
}
