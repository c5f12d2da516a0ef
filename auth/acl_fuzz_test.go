package auth

import "testing"

// FuzzAuthorize builds an ACL and a filter from arbitrary values and checks the
// invariants: validation and matching never panic, a super user is always allowed,
// and a matching deny always wins over an allow of the same ACL otherwise.
func FuzzAuthorize(f *testing.F) {
	f.Add(int8(2), "t", int8(3), "User:a", "*", int8(3), int8(3), "t", int8(3), "1.2.3.4")
	f.Add(int8(3), "g-", int8(4), "User:*", "h", int8(2), int8(2), "g-1", int8(8), "h")
	f.Fuzz(func(t *testing.T, rt int8, name string, pt int8, principal, host string, op, perm int8, resource string, reqOp int8, reqHost string) {
		acl := ACL{ResourceType: ResourceType(rt), ResourceName: name, PatternType: PatternType(pt), Principal: principal,
			Host: host, Operation: Operation(op), Permission: Permission(perm)}
		valid := acl.Validate() == nil
		filter := Filter{ResourceType: ResourceType(rt), ResourceName: &name, PatternType: PatternType(pt), Principal: &principal,
			Host: &host, Operation: Operation(op), Permission: Permission(perm)}
		if valid && filter.Validate() == nil && !filter.Matches(acl) {
			t.Fatalf("the exact filter does not match its ACL %+v", acl)
		}
		a := NewAuthorizer(AuthorizerConfig{SuperUsers: []string{"User:root"}}, []ACL{acl})
		if !a.Authorize("User:root", reqHost, Operation(reqOp), ResourceType(rt), resource) {
			t.Fatal("a super user was refused")
		}
		allowed := a.Authorize(principal, reqHost, Operation(reqOp), ResourceType(rt), resource)
		if allowed && acl.Permission == PermissionDeny {
			t.Fatalf("a lone deny ACL allowed %+v", acl)
		}
		deny := acl
		deny.Permission = PermissionDeny
		both := NewAuthorizer(AuthorizerConfig{}, []ACL{acl, deny})
		if acl.Operation == Operation(reqOp) && both.Authorize(principal, reqHost, Operation(reqOp), ResourceType(rt), resource) {
			t.Fatalf("allow beat deny for %+v", acl)
		}
		_ = a.AuthorizeAny(principal, reqHost, Operation(reqOp), ResourceType(rt))
	})
}
