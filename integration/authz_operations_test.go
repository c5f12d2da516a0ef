package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Kafka's operation codes as bits (KIP-430): bit n set when operation code n is allowed.
const (
	opsTopicAll   int32 = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11 // Read Write Create Delete Alter Describe DescribeConfigs AlterConfigs
	opsGroupAll   int32 = 1<<3 | 1<<6 | 1<<8                                      // Read Delete Describe
	opsClusterAll int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12       // Create Alter Describe ClusterAction DescribeConfigs AlterConfigs IdempotentWrite
	opsReadOnly   int32 = 1<<3 | 1<<8                                             // Read, and the Describe it implies
	opsNotAsked   int32 = -2147483648
)

// authorizedOps asks Metadata (the newest version for topics; v10, the last with the
// cluster's field, through cl10), DescribeCluster and DescribeGroups for their
// authorized-operations fields as the clients' principal.
func authorizedOps(ctx context.Context, t *testing.T, cl, cl10 *kgo.Client, topic, group string) (topicOps, metaClusterOps, clusterOps, groupOps int32) {
	t.Helper()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	meta.IncludeTopicAuthorizedOperations = true
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata for %s: %+v", topic, mresp.Topics)
	}
	topicOps = mresp.Topics[0].AuthorizedOperations

	meta10 := kmsg.NewPtrMetadataRequest()
	meta10.Topics = []kmsg.MetadataRequestTopic{}
	meta10.IncludeClusterAuthorizedOperations = true
	m10, err := meta10.RequestWith(ctx, cl10)
	if err != nil {
		t.Fatal(err)
	}
	if m10.Version != 10 {
		t.Fatalf("Metadata answered as v%d, want v10", m10.Version)
	}
	metaClusterOps = m10.AuthorizedOperations

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	dresp, err := dc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	clusterOps = dresp.ClusterAuthorizedOperations

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	dg.IncludeAuthorizedOperations = true
	gresp, err := dg.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	// The group does not exist: DescribeGroups v6 says so (GROUP_ID_NOT_FOUND, as Kafka
	// 4.x) and still carries the principal's operations on it.
	if len(gresp.Groups) != 1 || (gresp.Groups[0].ErrorCode != 0 && gresp.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code) {
		t.Fatalf("describe group %s: %+v", group, gresp.Groups)
	}
	groupOps = gresp.Groups[0].AuthorizedOperations
	return
}

// metadataV10 caps Metadata at v10, the last version with the cluster's field.
func metadataV10() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.Metadata.Int16(), 10)
	return kgo.MaxVersions(v)
}

// TestAuthz_AuthorizedOperations: the KIP-430 bit fields follow the ACLs — a principal
// with Read on a topic and a group gets Read and Describe, nothing on the cluster; a
// super user gets every operation the resource supports; without an authorizer every
// supported operation is set, as in Kafka; a field not asked for is -2147483648.
func TestAuthz_AuthorizedOperations(t *testing.T) {
	t.Parallel()
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`user_admin="admin-secret" user_alice="alice-secret";`
	c := StartCluster(t, 1,
		WithProperty("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
		WithProperty("petrel.raft.security.protocol", "PLAINTEXT"), // one node: no Raft peer
		WithProperty("sasl.enabled.mechanisms", "PLAIN"),
		WithProperty("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
		WithProperty("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		WithProperty("super.users", "User:admin;User:ANONYMOUS"))
	addr := c.Node(0).ListenerAddr("SASL_PLAINTEXT").String()
	as := func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, []string{addr}, append([]kgo.Opt{saslOpt("PLAIN", user, pass)}, opts...)...)
	}
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	admin := as("admin", "admin-secret")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "ops"); err != nil {
		t.Fatal(err)
	}
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("ops").Groups("ops-group").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}

	check := func(who string, got, want [4]int32) {
		t.Helper()
		names := []string{"Metadata topic", "Metadata v10 cluster", "DescribeCluster", "DescribeGroups"}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: %s authorized operations %#x, want %#x", who, names[i], got[i], want[i])
			}
		}
	}
	a, b, cl, g := authorizedOps(ctx, t, as("alice", "alice-secret"), as("alice", "alice-secret", metadataV10()), "ops", "ops-group")
	check("alice", [4]int32{a, b, cl, g}, [4]int32{opsReadOnly, 0, 0, opsReadOnly})
	a, b, cl, g = authorizedOps(ctx, t, admin, as("admin", "admin-secret", metadataV10()), "ops", "ops-group")
	check("admin", [4]int32{a, b, cl, g}, [4]int32{opsTopicAll, opsClusterAll, opsClusterAll, opsGroupAll})

	// Not asked for: the protocol's default.
	mresp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, as("admin", "admin-secret", metadataV10()))
	if err != nil {
		t.Fatal(err)
	}
	if mresp.AuthorizedOperations != opsNotAsked {
		t.Errorf("cluster authorized operations not asked for: %#x", mresp.AuthorizedOperations)
	}
	for _, mt := range mresp.Topics {
		if mt.AuthorizedOperations != opsNotAsked {
			t.Errorf("topic %v authorized operations not asked for: %#x", mt.Topic, mt.AuthorizedOperations)
		}
	}

	// Without an authorizer: everything each resource supports.
	open := StartCluster(t, 1)
	ocl := newClient(t, open.Addrs())
	if _, err := kadm.NewClient(ocl).CreateTopic(ctx, 1, 1, nil, "ops"); err != nil {
		t.Fatal(err)
	}
	a, b, cl, g = authorizedOps(ctx, t, ocl, newClient(t, open.Addrs(), metadataV10()), "ops", "ops-group")
	check("no authorizer", [4]int32{a, b, cl, g}, [4]int32{opsTopicAll, opsClusterAll, opsClusterAll, opsGroupAll})
}
