package auth

import (
	"strings"
)

// Authorizer decides requests the way Kafka's StandardAuthorizer does, over one
// immutable set of ACLs. Build a new one when the ACLs change; it is safe for
// concurrent use.
type Authorizer struct {
	superUsers map[string]bool
	// allowIfNoACL is allow.everyone.if.no.acl.found.
	allowIfNoACL bool
	// literal holds literal ACLs by type and name (the wildcard under "*"); prefixed
	// holds the prefixed ACLs by type and prefix.
	literal  map[ResourceType]map[string][]ACL
	prefixed map[ResourceType]map[string][]ACL
	count    int
}

// AuthorizerConfig is the authorizer's static configuration.
type AuthorizerConfig struct {
	// SuperUsers are principals allowed everything (super.users).
	SuperUsers []string
	// AllowEveryoneIfNoACLFound allows a request on a resource no ACL matches.
	AllowEveryoneIfNoACLFound bool
}

// ParseSuperUsers splits super.users: semicolon-separated principals, blanks ignored.
func ParseSuperUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// NewAuthorizer returns an authorizer over acls.
func NewAuthorizer(cfg AuthorizerConfig, acls []ACL) *Authorizer {
	a := &Authorizer{superUsers: map[string]bool{}, allowIfNoACL: cfg.AllowEveryoneIfNoACLFound,
		literal: map[ResourceType]map[string][]ACL{}, prefixed: map[ResourceType]map[string][]ACL{}, count: len(acls)}
	for _, u := range cfg.SuperUsers {
		a.superUsers[u] = true
	}
	for _, acl := range acls {
		byName := a.literal
		if acl.PatternType == PatternPrefixed {
			byName = a.prefixed
		} else if acl.PatternType != PatternLiteral {
			continue
		}
		m := byName[acl.ResourceType]
		if m == nil {
			m = map[string][]ACL{}
			byName[acl.ResourceType] = m
		}
		m[acl.ResourceName] = append(m[acl.ResourceName], acl)
	}
	return a
}

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize reports whether principal, connected from host, may perform op on the
// named resource: a super user may do anything; a resource no ACL matches is allowed
// only with allow.everyone.if.no.acl.found; otherwise a matching deny wins over any
// allow, and without a matching allow the answer is no.
func (a *Authorizer) Authorize(principal, host string, op Operation, t ResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	found, allowed := false, false
	check := func(acls []ACL) bool { // false: a deny matched
		for _, acl := range acls {
			if !acl.matchesResource(t, name) {
				continue
			}
			found = true
			if !acl.matchesPrincipal(principal) || !acl.matchesHost(host) || !acl.matchesOperation(op) {
				continue
			}
			if acl.Permission == PermissionDeny {
				return false
			}
			allowed = true
		}
		return true
	}
	lit := a.literal[t]
	if !check(lit[name]) {
		return false
	}
	if name != Wildcard && !check(lit[Wildcard]) {
		return false
	}
	// Prefixed ACLs: look up every prefix of name, or scan the prefixes when there are
	// fewer of them than characters in name.
	if pre := a.prefixed[t]; len(pre) > 0 {
		if len(pre) < len(name) {
			for p, acls := range pre {
				if strings.HasPrefix(name, p) && !check(acls) {
					return false
				}
			}
		} else {
			for i := 1; i <= len(name); i++ {
				if !check(pre[name[:i]]) {
					return false
				}
			}
		}
	}
	if !found {
		return a.allowIfNoACL
	}
	return allowed
}

// AuthorizeAny reports whether principal may perform op on some resource of type t
// (Kafka's authorizeByResourceType, used for idempotent producers that hold Write on
// any topic): an allow for it on some resource that no matching deny covers.
func (a *Authorizer) AuthorizeAny(principal, host string, op Operation, t ResourceType) bool {
	if a.superUsers[principal] {
		return true
	}
	var all []ACL
	for _, acls := range a.literal[t] {
		all = append(all, acls...)
	}
	for _, acls := range a.prefixed[t] {
		all = append(all, acls...)
	}
	if len(all) == 0 {
		return a.allowIfNoACL
	}
	applies := func(acl ACL) bool {
		return acl.matchesPrincipal(principal) && acl.matchesHost(host) && acl.matchesOperation(op)
	}
	for _, allow := range all {
		if allow.Permission != PermissionAllow || !applies(allow) {
			continue
		}
		denied := false
		for _, deny := range all {
			if deny.Permission == PermissionDeny && applies(deny) && covers(deny, allow) {
				denied = true
				break
			}
		}
		if !denied {
			return true
		}
	}
	return false
}

// covers reports whether the deny ACL d applies to every resource the allow ACL al
// names.
func covers(d, al ACL) bool {
	switch {
	case d.PatternType == PatternLiteral && d.ResourceName == Wildcard:
		return true
	case d.PatternType == PatternLiteral:
		return al.PatternType == PatternLiteral && al.ResourceName == d.ResourceName
	default:
		return strings.HasPrefix(al.ResourceName, d.ResourceName)
	}
}

// Len is the number of ACLs.
func (a *Authorizer) Len() int { return a.count }
