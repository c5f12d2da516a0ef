package auth

import "testing"

func allow(p string, op Operation, t ResourceType, name string, pat PatternType) ACL {
	return ACL{ResourceType: t, ResourceName: name, PatternType: pat, Principal: p, Host: "*", Operation: op, Permission: PermissionAllow}
}

func TestAuthorize(t *testing.T) {
	deny := allow("User:alice", OpWrite, ResourceTopic, "secret", PatternLiteral)
	deny.Permission = PermissionDeny
	hostOnly := allow("User:carol", OpRead, ResourceTopic, "t", PatternLiteral)
	hostOnly.Host = "10.0.0.1"
	acls := []ACL{
		allow("User:alice", OpRead, ResourceTopic, "t", PatternLiteral),
		allow("User:alice", OpAll, ResourceTopic, "sec", PatternPrefixed),
		deny,
		allow("User:*", OpDescribe, ResourceGroup, "*", PatternLiteral),
		allow("User:bob", OpAlterConfigs, ResourceCluster, ClusterName, PatternLiteral),
		hostOnly,
	}
	a := NewAuthorizer(AuthorizerConfig{SuperUsers: ParseSuperUsers(" User:admin ; ;User:root")}, acls)
	cases := []struct {
		name      string
		principal string
		host      string
		op        Operation
		t         ResourceType
		res       string
		want      bool
	}{
		{"literal read", "User:alice", "1.2.3.4", OpRead, ResourceTopic, "t", true},
		{"read does not give write", "User:alice", "1.2.3.4", OpWrite, ResourceTopic, "t", false},
		{"read implies describe", "User:alice", "1.2.3.4", OpDescribe, ResourceTopic, "t", true},
		{"other topic", "User:alice", "1.2.3.4", OpRead, ResourceTopic, "u", false},
		{"prefixed all", "User:alice", "1.2.3.4", OpRead, ResourceTopic, "second", true},
		{"deny wins over prefixed all", "User:alice", "1.2.3.4", OpWrite, ResourceTopic, "secret", false},
		{"deny write leaves read", "User:alice", "1.2.3.4", OpRead, ResourceTopic, "secret", true},
		{"other principal", "User:bob", "1.2.3.4", OpRead, ResourceTopic, "t", false},
		{"wildcard principal and resource", "User:bob", "1.2.3.4", OpDescribe, ResourceGroup, "g", true},
		{"describe does not give read", "User:bob", "1.2.3.4", OpRead, ResourceGroup, "g", false},
		{"alterconfigs implies describeconfigs", "User:bob", "1.2.3.4", OpDescribeConfigs, ResourceCluster, ClusterName, true},
		{"alterconfigs does not imply describe", "User:bob", "1.2.3.4", OpDescribe, ResourceCluster, ClusterName, false},
		{"host matches", "User:carol", "10.0.0.1", OpRead, ResourceTopic, "t", true},
		{"host differs", "User:carol", "10.0.0.2", OpRead, ResourceTopic, "t", false},
		{"super user", "User:root", "1.2.3.4", OpDelete, ResourceCluster, ClusterName, true},
		{"no acl found, default deny", "User:bob", "1.2.3.4", OpRead, ResourceTransactionalID, "x", false},
	}
	for _, c := range cases {
		if got := a.Authorize(c.principal, c.host, c.op, c.t, c.res); got != c.want {
			t.Errorf("%s: Authorize(%s, %v, %q) = %v, want %v", c.name, c.principal, c.op, c.res, got, c.want)
		}
	}
	open := NewAuthorizer(AuthorizerConfig{AllowEveryoneIfNoACLFound: true}, acls)
	if !open.Authorize("User:bob", "h", OpWrite, ResourceTransactionalID, "x") {
		t.Error("allow.everyone.if.no.acl.found: a resource without ACLs is refused")
	}
	if open.Authorize("User:bob", "h", OpRead, ResourceTopic, "t") {
		t.Error("allow.everyone.if.no.acl.found: a resource with ACLs for others is allowed")
	}
}

func TestAuthorizeAny(t *testing.T) {
	acls := []ACL{allow("User:alice", OpWrite, ResourceTopic, "t", PatternLiteral)}
	a := NewAuthorizer(AuthorizerConfig{}, acls)
	if !a.AuthorizeAny("User:alice", "h", OpWrite, ResourceTopic) {
		t.Error("Write on one topic is not Write on some topic")
	}
	if a.AuthorizeAny("User:bob", "h", OpWrite, ResourceTopic) {
		t.Error("bob may write somewhere")
	}
	deny := allow("User:alice", OpWrite, ResourceTopic, "*", PatternLiteral)
	deny.Permission = PermissionDeny
	if NewAuthorizer(AuthorizerConfig{}, append(acls, deny)).AuthorizeAny("User:alice", "h", OpWrite, ResourceTopic) {
		t.Error("a wildcard deny does not cover the allow")
	}
}

func TestFilter(t *testing.T) {
	lit := allow("User:alice", OpRead, ResourceTopic, "orders", PatternLiteral)
	pre := allow("User:alice", OpRead, ResourceTopic, "ord", PatternPrefixed)
	wild := allow("User:alice", OpRead, ResourceTopic, "*", PatternLiteral)
	name := "orders"
	alice := "User:alice"
	cases := []struct {
		f    Filter
		want [3]bool
	}{
		{Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, [3]bool{true, true, true}},
		{Filter{ResourceType: ResourceTopic, ResourceName: &name, PatternType: PatternMatch, Operation: OpAny, Permission: PermissionAny}, [3]bool{true, true, true}},
		{Filter{ResourceType: ResourceTopic, ResourceName: &name, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, [3]bool{true, false, false}},
		{Filter{ResourceType: ResourceTopic, PatternType: PatternPrefixed, Principal: &alice, Operation: OpRead, Permission: PermissionAllow}, [3]bool{false, true, false}},
		{Filter{ResourceType: ResourceGroup, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, [3]bool{false, false, false}},
	}
	for i, c := range cases {
		for j, a := range []ACL{lit, pre, wild} {
			if got := c.f.Matches(a); got != c.want[j] {
				t.Errorf("filter %d, acl %d: %v, want %v", i, j, got, c.want[j])
			}
		}
	}
}

func TestValidateACL(t *testing.T) {
	good := allow("User:alice", OpRead, ResourceTopic, "t", PatternLiteral)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []ACL{good, good, good, good, good, good}
	bad[0].Principal = "alice"
	bad[1].PatternType = PatternMatch
	bad[2].Operation = OpAny
	bad[3].ResourceType = ResourceCluster
	bad[4].Host = ""
	bad[5].Permission = PermissionAny
	for i, a := range bad {
		if a.Validate() == nil {
			t.Errorf("bad ACL %d accepted: %+v", i, a)
		}
	}
}

func TestResolveQuota(t *testing.T) {
	s := func(v string) *string { return &v }
	type ent struct {
		u, c   *string
		hu, hc bool
	}
	stored := map[ent]float64{
		{u: s("alice"), hu: true, c: s("app"), hc: true}: 1,
		{u: s("alice"), hu: true}:                        3,
		{hu: true}:                                       6,
		{c: s("app"), hc: true}:                          7,
	}
	lookup := func(e QuotaEntity, key string) (float64, bool) {
		for k, v := range stored {
			eq := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
			if k.hu == e.HasUser && k.hc == e.HasClientID && eq(k.u, e.User) && eq(k.c, e.ClientID) {
				return v, true
			}
		}
		return 0, false
	}
	for _, c := range []struct {
		user, client string
		want         float64
	}{{"alice", "app", 1}, {"alice", "other", 3}, {"bob", "app", 6}} {
		if got, _, _ := ResolveQuota(lookup, c.user, c.client, ProducerByteRate); got != c.want {
			t.Errorf("%s/%s: %v, want %v", c.user, c.client, got, c.want)
		}
	}
	delete(stored, ent{hu: true})
	if got, e, _ := ResolveQuota(lookup, "bob", "app", ProducerByteRate); got != 7 || e.HasUser {
		t.Errorf("client-id quota: %v %+v", got, e)
	}
}

func TestRateThrottle(t *testing.T) {
	r := NewRate(2, 1000)
	// 3000 bytes in the first 500 ms: measured over the minimum one window, 3000/s.
	r.Record(0, 1000)
	r.Record(500, 2000)
	rate, window := r.Measure(500)
	if window != 1500 || rate != 2000 {
		t.Fatalf("rate %v over %d ms", rate, window)
	}
	if got := r.ThrottleMs(500, 1000, 1000); got != 1000 {
		t.Errorf("throttle %d, want 1000 (capped)", got)
	}
	if got := r.ThrottleMs(500, 4000, 1000); got != 0 {
		t.Errorf("throttle within quota %d", got)
	}
	// Long after, the samples are obsolete.
	if rate, _ := r.Measure(10_000); rate != 0 {
		t.Errorf("obsolete samples counted: %v", rate)
	}
}

// TestAuthorize_ManyPrefixes takes the prefix-lookup path (more prefixes than
// characters in the name).
func TestAuthorize_ManyPrefixes(t *testing.T) {
	var acls []ACL
	for _, p := range []string{"a", "ab", "abc", "x", "y", "z", "zz"} {
		acls = append(acls, allow("User:u", OpRead, ResourceTopic, p, PatternPrefixed))
	}
	deny := allow("User:u", OpRead, ResourceTopic, "abc", PatternPrefixed)
	deny.Permission = PermissionDeny
	a := NewAuthorizer(AuthorizerConfig{}, append(acls, deny))
	for name, want := range map[string]bool{"ab": true, "abd": true, "abcd": false, "q": false, "zzz": true} {
		if got := a.Authorize("User:u", "h", OpRead, ResourceTopic, name); got != want {
			t.Errorf("%q: %v, want %v", name, got, want)
		}
	}
}

// TestAuthorize_CIDRHosts: an ACL's host may be a CIDR block (KIP-1276), IPv4 or IPv6;
// a deny for a block wins over an allow for every host; an invalid block is refused.
func TestAuthorize_CIDRHosts(t *testing.T) {
	inside := allow("User:dave", OpRead, ResourceTopic, "t", PatternLiteral)
	inside.Host = "10.0.0.0/8"
	v6 := allow("User:dave", OpRead, ResourceTopic, "v6", PatternLiteral)
	v6.Host = "2001:db8::/32"
	denyBlock := allow("User:erin", OpRead, ResourceTopic, "t", PatternLiteral)
	denyBlock.Host, denyBlock.Permission = "192.168.0.0/16", PermissionDeny
	acls := []ACL{inside, v6, denyBlock, allow("User:erin", OpRead, ResourceTopic, "t", PatternLiteral)}
	for _, a := range acls {
		if err := a.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	a := NewAuthorizer(AuthorizerConfig{}, acls)
	for _, c := range []struct {
		principal, host, topic string
		want                   bool
	}{
		{"User:dave", "10.1.2.3", "t", true},
		{"User:dave", "::ffff:10.1.2.3", "t", true},
		{"User:dave", "11.0.0.1", "t", false},
		{"User:dave", "not-an-ip", "t", false},
		{"User:dave", "2001:db8:1::5", "v6", true},
		{"User:dave", "2001:db9::5", "v6", false},
		{"User:erin", "192.168.4.4", "t", false},
		{"User:erin", "172.16.0.1", "t", true},
	} {
		if got := a.Authorize(c.principal, c.host, OpRead, ResourceTopic, c.topic); got != c.want {
			t.Errorf("%s at %s reading %s: %v, want %v", c.principal, c.host, c.topic, got, c.want)
		}
	}
	bad := inside
	bad.Host = "10.0.0.0/33"
	if err := bad.Validate(); err == nil {
		t.Error("an invalid CIDR block was accepted")
	}
}
