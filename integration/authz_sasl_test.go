package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAuthz_SASLPrincipals is authorization end to end with authenticated principals:
// over SASL_PLAINTEXT with PLAIN, admin (a super user) creates a topic and an ACL
// allowing User:alice to write and read it; alice produces and reads back, bob is
// refused with TOPIC_AUTHORIZATION_FAILED and sees no topic in Metadata.
func TestAuthz_SASLPrincipals(t *testing.T) {
	t.Parallel()
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" ` +
		`user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
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

	admin := kadm.NewClient(as("admin", "admin-secret"))
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("t").
		Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}

	alice := as("alice", "alice-secret")
	if err := roundTrip(t, alice, "t", "from alice"); err != nil {
		t.Fatalf("alice: %v", err)
	}

	bob := as("bob", "bob-secret", kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(5*time.Second))
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("from bob")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Topics) != 0 {
		t.Errorf("bob sees %d topics in Metadata", len(meta.Topics))
	}
	// A wrong password is refused before any authorization.
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, as("alice", "wrong")); err == nil {
		t.Error("a wrong password was served")
	}
}
