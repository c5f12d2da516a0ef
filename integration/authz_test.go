package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authzJAAS holds the SASL/PLAIN users of authzCluster: the brokers' own (broker) and
// an administrator; both are super users.
const authzJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" ` +
	`user_broker="broker-secret" user_admin="admin-secret";`

// authzCluster is n brokers with the authorizer on that authenticate each other over
// SASL_PLAINTEXT (the inter-broker listener) and serve anonymous clients on PLAINTEXT.
func authzCluster(t *testing.T, n int) *Cluster {
	return StartCluster(t, n,
		WithProperty("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
		WithProperty("inter.broker.listener.name", "SASL_PLAINTEXT"),
		WithProperty("sasl.enabled.mechanisms", "PLAIN"),
		WithProperty("sasl.mechanism.inter.broker.protocol", "PLAIN"),
		WithProperty("listener.name.sasl_plaintext.plain.sasl.jaas.config", authzJAAS),
		WithProperty("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		WithProperty("super.users", "User:broker;User:admin"),
		WithProperty("petrel.raft.security.protocol", "PLAINTEXT")) // a test's loopback quorum
}

// aclAdminClient is a client authenticated as authzCluster's administrator.
func aclAdminClient(t testing.TB, c *Cluster) *kgo.Client {
	var seeds []string
	for i := range c.nodes {
		seeds = append(seeds, c.Node(i).ListenerAddr("SASL_PLAINTEXT").String())
	}
	return newClient(t, seeds, saslOpt("PLAIN", "admin", "admin-secret"))
}

// aclAdmin is an admin client for authzCluster's administrator.
func aclAdmin(t testing.TB, c *Cluster) *kadm.Client { return kadm.NewClient(aclAdminClient(t, c)) }

// createACLs creates ACLs as the administrator.
func createACLs(ctx context.Context, t testing.TB, c *Cluster, creations ...kmsg.CreateACLsRequestCreation) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = creations
	resp, err := req.RequestWith(ctx, aclAdminClient(t, c))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatal(err)
		}
	}
}

// aclEntry is one ACL creation for host "*".
func aclEntry(principal string, perm kmsg.ACLPermissionType, rt kmsg.ACLResourceType, name string,
	pattern kmsg.ACLResourcePatternType, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	a := kmsg.NewCreateACLsRequestCreation()
	a.Principal, a.Host, a.PermissionType, a.ResourceType, a.ResourceName, a.ResourcePatternType, a.Operation =
		principal, "*", perm, rt, name, pattern, op
	return a
}

// visibleTopics is what an anonymous Metadata request for all topics shows at node i.
func visibleTopics(ctx context.Context, t testing.TB, c *Cluster, i int) (map[string]int16, error) {
	req := kmsg.NewPtrMetadataRequest()
	resp, err := c.RequestTo(ctx, t, i, req)
	if err != nil {
		return nil, err
	}
	out := map[string]int16{}
	for _, tp := range resp.(*kmsg.MetadataResponse).Topics {
		out[*tp.Topic] = tp.ErrorCode
	}
	return out, nil
}

// produce writes one record to topic as an anonymous, non-idempotent kgo producer and
// returns the record's error.
func produce(ctx context.Context, t testing.TB, c *Cluster, topic string) error {
	t.Helper()
	cl := c.Client(t, kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(5*time.Second), kgo.RequestRetries(2))
	defer cl.Close()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// TestAuthz_ACLsOnEveryBroker: with authorizer.class.name set and no ACLs, an
// anonymous client sees no topic and may write nowhere; an ACL created through one
// broker takes effect on every broker of three within a second; Read on one topic
// neither lets it write there nor see another topic; a prefixed Write ACL lets it
// write to matching topics until a literal deny overrides it; joining a group needs
// Read on the group.
func TestAuthz_ACLsOnEveryBroker(t *testing.T) {
	c := authzCluster(t, 3)
	ctx := testContext(t)
	adm := aclAdmin(t, c)
	for _, topic := range []string{"readable", "hidden", "pre-x", "pre-y"} {
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		testwait.For(t, 10*time.Second, func() error {
			got, err := visibleTopics(ctx, t, c, i)
			if err != nil {
				return err
			}
			if len(got) != 0 {
				return fmt.Errorf("node %d shows %v to an anonymous client without ACLs", i, got)
			}
			return nil
		})
	}

	const anon = "User:ANONYMOUS"
	allow, deny := kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
	topic, group := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup
	literal, prefixed := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	create := func(a kmsg.CreateACLsRequestCreation) {
		t.Helper()
		createACLs(ctx, t, c, a)
	}
	within := func(what string, f func(i int) error) {
		t.Helper()
		start := time.Now()
		for i := range 3 {
			testwait.For(t, time.Second-time.Since(start)+50*time.Millisecond, func() error { return f(i) })
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s took %s to reach every broker", what, d)
		}
	}

	create(aclEntry(anon, allow, topic, "readable", literal, kmsg.ACLOperationRead))
	within("Read on readable", func(i int) error {
		got, err := visibleTopics(ctx, t, c, i)
		if err != nil {
			return err
		}
		if _, ok := got["readable"]; !ok || len(got) != 1 {
			return fmt.Errorf("node %d shows %v, want only readable", i, got)
		}
		return nil
	})
	if err := produce(ctx, t, c, "readable"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce with Read only: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produce(ctx, t, c, "hidden"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce to hidden: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Prefixed ACL.
	create(aclEntry(anon, allow, topic, "pre-", prefixed, kmsg.ACLOperationWrite))
	testwait.For(t, 5*time.Second, func() error {
		if err := produce(ctx, t, c, "pre-x"); err != nil {
			return fmt.Errorf("produce to pre-x: %w", err)
		}
		return nil
	})
	// Deny overrides allow.
	create(aclEntry(anon, deny, topic, "pre-x", literal, kmsg.ACLOperationWrite))
	testwait.For(t, 5*time.Second, func() error {
		if err := produce(ctx, t, c, "pre-x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			return fmt.Errorf("produce to denied pre-x: %v", err)
		}
		return nil
	})
	if err := produce(ctx, t, c, "pre-y"); err != nil {
		t.Errorf("produce to pre-y: %v", err)
	}

	// Listing ACLs: every one for the administrator, refused for anonymous.
	describe := func(cl *kgo.Client) (*kmsg.DescribeACLsResponse, error) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return req.RequestWith(ctx, cl)
	}
	listed, err := describe(aclAdminClient(t, c))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range listed.Resources {
		n += len(r.ACLs)
	}
	if listed.ErrorCode != 0 || n != 3 {
		t.Errorf("DescribeAcls: error %d, %d ACLs, want 3", listed.ErrorCode, n)
	}
	if listed, err := describe(c.Client(t)); err != nil {
		t.Error(err)
	} else if listed.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("anonymous DescribeAcls: code %d, want CLUSTER_AUTHORIZATION_FAILED", listed.ErrorCode)
	}

	// Group Read is needed to join.
	cl := c.Client(t, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("readable"))
	join := func() error {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "g", 10000, 10000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	if err := join(); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("join without group Read: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	create(aclEntry(anon, allow, group, "g", literal, kmsg.ACLOperationRead))
	testwait.For(t, 10*time.Second, func() error {
		err := join()
		if errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotCoordinator) {
			return fmt.Errorf("join: %w", err)
		}
		return nil // MEMBER_ID_REQUIRED or success: authorized
	})
}
