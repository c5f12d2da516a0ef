package auth

// Authorized operations (KIP-430): Metadata v8+ (topics; the cluster in v8-10),
// DescribeGroups v3+ and DescribeCluster answer, when asked, a 32-bit field with bit n
// set when operation code n is allowed to the request's principal on the resource. The
// operations are those Kafka's AclEntry.supportedOperations lists for the resource type;
// without an authorizer every one of them is set, as Kafka answers then. Fields not asked
// for keep the protocol's default, AuthorizedOperationsNotRequested.

// AuthorizedOperationsNotRequested is the protocol's value for a field not asked for
// (Integer.MIN_VALUE).
const AuthorizedOperationsNotRequested int32 = -2147483648

// supportedOperations are the operations each resource type supports (Kafka's
// AclEntry.supportedOperations).
var supportedOperations = map[ResourceType][]Operation{
	ResourceTopic: {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete,
		OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup: {OpRead, OpDescribe, OpDelete},
	ResourceCluster: {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs,
		OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite},
}

// AuthorizedOperations is the bit field of the operations the principal may perform
// on the named resource: bit n for operation code n.
func (c Checks) AuthorizedOperations(t ResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOperations[t] {
		if c.Allowed(op, t, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}
