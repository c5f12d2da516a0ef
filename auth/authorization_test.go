package auth

import "testing"

// Kafka's bit fields (KIP-430) for the operations each resource type supports.
const (
	opsTopicAll   int32 = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11 // Read Write Create Delete Alter Describe DescribeConfigs AlterConfigs
	opsGroupAll   int32 = 1<<3 | 1<<6 | 1<<8                                      // Read Delete Describe
	opsClusterAll int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12       // Create Alter Describe ClusterAction DescribeConfigs AlterConfigs IdempotentWrite
	opsTxnAll     int32 = 1<<4 | 1<<8                                             // Write Describe
	opsReadOnly   int32 = 1<<3 | 1<<8                                             // Read, and the Describe it implies
)

// authorizationOver is authorization on, User:admin a super user, over acls.
func authorizationOver(acls ...ACL) (*Authorization, *Authorizer) {
	z := NewAuthorization(true, AuthorizerConfig{SuperUsers: []string{"User:admin"}})
	return z, z.Authorizer(1, func() []ACL { return acls })
}

func testAuthorization() (*Authorization, *Authorizer) {
	return authorizationOver(
		allow("User:alice", OpRead, ResourceTopic, "t", PatternLiteral),
		allow("User:alice", OpRead, ResourceGroup, "g", PatternLiteral),
		allow("User:alice", OpWrite, ResourceTransactionalID, "tx", PatternLiteral),
		allow("User:broker", OpClusterAction, ResourceCluster, ClusterName, PatternLiteral),
		allow("User:producer", OpWrite, ResourceTopic, "p", PatternPrefixed),
		allow("User:ops", OpDescribeConfigs, ResourceCluster, ClusterName, PatternLiteral),
		allow("User:ops", OpAlterConfigs, ResourceTopic, "c", PatternLiteral),
	)
}

// TestChecks: a principal passes what its ACLs allow and what those imply; a super
// user or a principal holding ClusterAction (another broker) passes everything; with
// authorization off everything passes.
func TestChecks(t *testing.T) {
	z, a := testAuthorization()
	alice := z.Checks(a, "User:alice", "10.0.0.1")
	cases := []struct {
		name string
		got  bool
		want bool
	}{
		{"read topic", alice.Topic(OpRead, "t"), true},
		{"read implies describe", alice.Topic(OpDescribe, "t"), true},
		{"read gives no write", alice.Topic(OpWrite, "t"), false},
		{"other topic", alice.Topic(OpDescribe, "u"), false},
		{"group read", alice.Group(OpRead, "g"), true},
		{"group delete", alice.Group(OpDelete, "g"), false},
		{"transactional id write", alice.TransactionalID(OpWrite, "tx"), true},
		{"write implies describe", alice.TransactionalID(OpDescribe, "tx"), true},
		{"other transactional id", alice.TransactionalID(OpWrite, "ty"), false},
		{"cluster", alice.Cluster(OpCreate), false},
		{"topic config, read implies no describe configs", alice.ConfigResource(OpDescribeConfigs, true, "t"), false},
		{"topic config, super user", z.Checks(a, "User:admin", "h").ConfigResource(OpAlterConfigs, true, "t"), true},
		{"broker config through the cluster", z.Checks(a, "User:ops", "h").ConfigResource(OpDescribeConfigs, false, "1"), true},
		{"topic config is not the cluster's", z.Checks(a, "User:ops", "h").ConfigResource(OpDescribeConfigs, true, "t"), false},
		{"alter configs implies describe configs", z.Checks(a, "User:ops", "h").ConfigResource(OpDescribeConfigs, true, "c"), true},
		{"any topic write", alice.AllowedAny(OpWrite, ResourceTopic), false},
		{"producer any topic write", z.Checks(a, "User:producer", "h").AllowedAny(OpWrite, ResourceTopic), true},
		{"alice is no broker", alice.IsBroker(), false},
		{"broker principal", z.Checks(a, "User:broker", "h").IsBroker(), true},
		{"broker passes everything", z.Checks(a, "User:broker", "h").Topic(OpDelete, "t"), true},
		{"broker passes any", z.Checks(a, "User:broker", "h").AllowedAny(OpWrite, ResourceTopic), true},
		{"super user passes everything", z.Checks(a, "User:admin", "h").Cluster(OpAlter), true},
		{"super user is a broker", z.Checks(a, "User:admin", "h").IsBroker(), true},
		{"authorization off", z.Checks(nil, "User:alice", "h").Topic(OpDelete, "u"), true},
		{"authorization off, any", z.Checks(nil, "User:alice", "h").AllowedAny(OpWrite, ResourceTopic), true},
		{"authorization off, no broker", z.Checks(nil, "User:admin", "h").IsBroker(), false},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestChecks_ClusterPrincipal: with the authorizer, a principal holding ClusterAction
// (super users included); without it, an authenticated super user — never
// User:ANONYMOUS, even listed in super.users.
func TestChecks_ClusterPrincipal(t *testing.T) {
	z, a := testAuthorization()
	off := NewAuthorization(false, AuthorizerConfig{SuperUsers: []string{"User:admin", AnonymousPrincipal}})
	cases := []struct {
		name string
		c    Checks
		want bool
	}{
		{"ClusterAction", z.Checks(a, "User:broker", "h"), true},
		{"super user", z.Checks(a, "User:admin", "h"), true},
		{"other", z.Checks(a, "User:alice", "h"), false},
		{"off: super user", off.Checks(nil, "User:admin", "h"), true},
		{"off: anonymous super user", off.Checks(nil, AnonymousPrincipal, "h"), false},
		{"off: other", off.Checks(nil, "User:broker", "h"), false},
	}
	for _, c := range cases {
		if got := c.c.IsClusterPrincipal(); got != c.want {
			t.Errorf("%s: IsClusterPrincipal = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAuthorization_RebuildsOnNewACLs: the authorizer is built once per ACL version,
// rebuilt for a new one, and nil when authorization is off.
func TestAuthorization_RebuildsOnNewACLs(t *testing.T) {
	z := NewAuthorization(true, AuthorizerConfig{})
	builds := 0
	acls := func(list ...ACL) func() []ACL { return func() []ACL { builds++; return list } }
	a1 := z.Authorizer(1, acls(allow("User:alice", OpRead, ResourceTopic, "t", PatternLiteral)))
	if again := z.Authorizer(1, acls()); again != a1 || builds != 1 {
		t.Fatalf("same version: rebuilt (builds %d)", builds)
	}
	a2 := z.Authorizer(2, acls())
	if a2 == a1 || builds != 2 {
		t.Fatalf("new version: not rebuilt (builds %d)", builds)
	}
	if z.Checks(a2, "User:alice", "h").Topic(OpRead, "t") {
		t.Error("an ACL removed in the new version still allows")
	}
	if !z.Checks(a1, "User:alice", "h").Topic(OpRead, "t") {
		t.Error("the first version's ACL does not allow")
	}
	if off := NewAuthorization(false, AuthorizerConfig{}); off.Enabled() || off.Authorizer(1, acls()) != nil {
		t.Error("authorization off: enabled, or an authorizer built")
	}
}

// TestAuthorizedOperations: the KIP-430 bit field has a bit per supported operation
// allowed (Describe implied by Read and Write); everything supported for a super user
// and without an authorizer.
func TestAuthorizedOperations(t *testing.T) {
	z, a := testAuthorization()
	alice, admin, off := z.Checks(a, "User:alice", "h"), z.Checks(a, "User:admin", "h"), z.Checks(nil, "User:alice", "h")
	cases := []struct {
		name string
		c    Checks
		t    ResourceType
		res  string
		want int32
	}{
		{"alice topic", alice, ResourceTopic, "t", opsReadOnly},
		{"alice group", alice, ResourceGroup, "g", opsReadOnly},
		{"alice transactional id", alice, ResourceTransactionalID, "tx", opsTxnAll},
		{"alice cluster", alice, ResourceCluster, ClusterName, 0},
		{"alice other topic", alice, ResourceTopic, "u", 0},
		{"admin topic", admin, ResourceTopic, "u", opsTopicAll},
		{"admin group", admin, ResourceGroup, "g", opsGroupAll},
		{"admin cluster", admin, ResourceCluster, ClusterName, opsClusterAll},
		{"off topic", off, ResourceTopic, "t", opsTopicAll},
		{"off cluster", off, ResourceCluster, ClusterName, opsClusterAll},
	}
	for _, c := range cases {
		if got := c.c.AuthorizedOperations(c.t, c.res); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
	if AuthorizedOperationsNotRequested != -1<<31 {
		t.Errorf("not requested: %d", AuthorizedOperationsNotRequested)
	}
}

// TestChecks_MetadataTopic: a topic the principal may not describe is
// TOPIC_AUTHORIZATION_FAILED whether it exists or not; an unknown one it may describe
// but not create is UNKNOWN_TOPIC_OR_PARTITION when it would be auto-created, and
// allowed (the handler's answer) when auto-creation is not asked; Create on the topic
// or on the cluster lets it be created.
func TestChecks_MetadataTopic(t *testing.T) {
	z, a := authorizationOver(
		allow("User:alice", OpDescribe, ResourceTopic, "*", PatternLiteral),
		allow("User:alice", OpCreate, ResourceTopic, "new-", PatternPrefixed),
		allow("User:carol", OpDescribe, ResourceTopic, "*", PatternLiteral),
		allow("User:carol", OpCreate, ResourceCluster, ClusterName, PatternLiteral),
		allow("User:bob", OpRead, ResourceTopic, "t", PatternLiteral),
	)
	alice, bob, carol := z.Checks(a, "User:alice", "h"), z.Checks(a, "User:bob", "h"), z.Checks(a, "User:carol", "h")
	cases := []struct {
		name               string
		c                  Checks
		topic              string
		exists, autoCreate bool
		want               TopicAccess
	}{
		{"describe, exists", alice, "t", true, true, TopicAllowed},
		{"describe, unknown, no create", alice, "x", false, true, TopicUnknown},
		{"describe, unknown, no auto-creation", alice, "x", false, false, TopicAllowed},
		{"create on the topic", alice, "new-x", false, true, TopicAllowed},
		{"create on the cluster", carol, "x", false, true, TopicAllowed},
		{"read implies describe", bob, "t", true, true, TopicAllowed},
		{"no describe, exists", bob, "u", true, true, TopicAuthorizationFailed},
		{"no describe, unknown", bob, "x", false, true, TopicAuthorizationFailed},
		{"no describe, unknown, no auto-creation", bob, "x", false, false, TopicAuthorizationFailed},
	}
	for _, c := range cases {
		if got := c.c.MetadataTopic(c.topic, c.exists, c.autoCreate); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if !carol.CanCreateTopic("any") || alice.CanCreateTopic("x") || !alice.CanCreateTopic("new-y") {
		t.Error("CanCreateTopic: Create on the cluster or the topic")
	}
}
