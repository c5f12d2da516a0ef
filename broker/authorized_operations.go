package broker

// Authorized operations (KIP-430): Metadata v8+ (topics; the cluster in v8-10),
// DescribeGroups v3+ and DescribeCluster answer, when asked, a 32-bit field with bit n
// set when operation code n is allowed to the request's principal on the resource. The
// operations are those Kafka's AclEntry.supportedOperations lists for the resource type;
// without an authorizer every one of them is set, as Kafka answers then. Fields not asked
// for keep the protocol's default, -2147483648 (Integer.MIN_VALUE).

import (
	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
)

// authorizedOperationsNotRequested is the protocol's value for a field not asked for.
const authorizedOperationsNotRequested int32 = -2147483648

// supportedOperations are the operations each resource type supports (Kafka's
// AclEntry.supportedOperations).
var supportedOperations = map[auth.ResourceType][]auth.Operation{
	auth.ResourceTopic: {auth.OpRead, auth.OpWrite, auth.OpCreate, auth.OpDescribe, auth.OpDelete,
		auth.OpAlter, auth.OpDescribeConfigs, auth.OpAlterConfigs},
	auth.ResourceGroup: {auth.OpRead, auth.OpDescribe, auth.OpDelete},
	auth.ResourceCluster: {auth.OpCreate, auth.OpClusterAction, auth.OpDescribeConfigs, auth.OpAlterConfigs,
		auth.OpIdempotentWrite, auth.OpAlter, auth.OpDescribe},
	auth.ResourceTransactionalID: {auth.OpDescribe, auth.OpWrite},
}

// authorizedOperations is the bit field of the operations the request's principal may
// perform on the named resource.
func (b *Broker) authorizedOperations(req *rpc.Request, t auth.ResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOperations[t] {
		if b.authorized(req, op, t, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}
