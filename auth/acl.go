// Package auth holds listeners' security decisions as pure logic: the ACL authorizer
// over the metadata log's access control entries (acl.go, authorizer.go) and client
// quotas (quota*.go). It does no I/O and keeps no goroutines; time is a parameter.
package auth

import (
	"fmt"
	"net/netip"
	"strings"
)

// ResourceType is Kafka's ACL resource type, with Kafka's numbers.
type ResourceType int8

// Kafka's resource types (delegation tokens and users are not authorized by Petrel).
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
)

// PatternType is how an ACL's resource name matches, with Kafka's numbers. Any and
// Match appear only in filters.
type PatternType int8

// Kafka's pattern types.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is Kafka's ACL operation, with Kafka's numbers.
type Operation int8

// Kafka's operations.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
)

// Permission is allow or deny, with Kafka's numbers.
type Permission int8

// Kafka's permission types.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3
)

// Wildcard is the resource name, principal ("User:*") and host that match everything.
const Wildcard = "*"

// WildcardPrincipal matches every user principal.
const WildcardPrincipal = "User:*"

// ClusterName is the one cluster resource's name.
const ClusterName = "kafka-cluster"

// ACL is one access control entry: KRaft's AccessControlEntryRecord without its id.
type ACL struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string
	Host         string
	Operation    Operation
	Permission   Permission
}

// Validate reports whether the ACL may be stored, with Kafka's messages: a concrete
// resource type, pattern type, operation and permission, a "Type:Name" principal, a
// non-empty resource name and host, and the cluster resource named kafka-cluster.
func (a ACL) Validate() error {
	switch {
	case a.ResourceType < ResourceTopic || a.ResourceType > ResourceTransactionalID:
		return fmt.Errorf("%w: invalid resource type %d", ErrInvalidACL, a.ResourceType)
	case a.PatternType != PatternLiteral && a.PatternType != PatternPrefixed:
		return fmt.Errorf("%w: invalid pattern type %d", ErrInvalidACL, a.PatternType)
	case a.Operation < OpAll || a.Operation > OpIdempotentWrite:
		return fmt.Errorf("%w: invalid operation %d", ErrInvalidACL, a.Operation)
	case a.Permission != PermissionAllow && a.Permission != PermissionDeny:
		return fmt.Errorf("%w: invalid permission type %d", ErrInvalidACL, a.Permission)
	case a.ResourceName == "":
		return fmt.Errorf("%w: resource name must not be empty", ErrInvalidACL)
	case a.Host == "":
		return fmt.Errorf("%w: host must not be empty", ErrInvalidACL)
	case strings.Contains(a.Host, "/") && !validCIDR(a.Host):
		return fmt.Errorf("%w: host %q is not a valid CIDR block (such as 10.0.0.0/8)", ErrInvalidACL, a.Host)
	case a.ResourceType == ResourceCluster && (a.ResourceName != ClusterName || a.PatternType != PatternLiteral):
		return fmt.Errorf("%w: the cluster resource is the literal %s", ErrInvalidACL, ClusterName)
	case a.PatternType == PatternPrefixed && a.ResourceName == Wildcard:
		return fmt.Errorf("%w: a prefixed ACL cannot be on the wildcard resource", ErrInvalidACL)
	}
	typ, name, ok := strings.Cut(a.Principal, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q is not of the form Type:Name", ErrInvalidACL, a.Principal)
	}
	return nil
}

// matchesResource reports whether the ACL applies to the named resource of type t.
func (a ACL) matchesResource(t ResourceType, name string) bool {
	if a.ResourceType != t {
		return false
	}
	switch a.PatternType {
	case PatternLiteral:
		return a.ResourceName == name || a.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, a.ResourceName)
	}
	return false
}

// matchesPrincipal reports whether the ACL names principal, itself or by wildcard.
func (a ACL) matchesPrincipal(principal string) bool {
	if a.Principal == principal {
		return true
	}
	return a.Principal == WildcardPrincipal && strings.HasPrefix(principal, "User:")
}

// matchesHost reports whether the ACL applies to a client at host: every host (*), the
// host itself, or a CIDR block holding it (KIP-1276: 10.0.0.0/8, 2001:db8::/32).
func (a ACL) matchesHost(host string) bool {
	if a.Host == Wildcard || a.Host == host {
		return true
	}
	if !strings.Contains(a.Host, "/") {
		return false
	}
	block, err := netip.ParsePrefix(a.Host)
	if err != nil {
		return false
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && block.Masked().Contains(addr.Unmap())
}

// validCIDR reports whether host is a CIDR block.
func validCIDR(host string) bool {
	_, err := netip.ParsePrefix(host)
	return err == nil
}

// matchesOperation reports whether the ACL covers op: the same operation or All, and
// for an allow, an operation that implies op (Read, Write, Delete and Alter imply
// Describe; AlterConfigs implies DescribeConfigs), as in Kafka.
func (a ACL) matchesOperation(op Operation) bool {
	if a.Operation == op || a.Operation == OpAll {
		return true
	}
	if a.Permission != PermissionAllow {
		return false
	}
	switch op {
	case OpDescribe:
		switch a.Operation {
		case OpRead, OpWrite, OpDelete, OpAlter:
			return true
		}
	case OpDescribeConfigs:
		return a.Operation == OpAlterConfigs
	}
	return false
}

// Filter selects ACLs (DescribeAcls, DeleteAcls). Nil strings match anything;
// ResourceAny, PatternAny, OpAny and PermissionAny match any value; PatternMatch
// selects the ACLs that would apply to the named resource (literal, wildcard and
// prefixes of it).
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate refuses filters no ACL could be compared with (unknown values).
func (f Filter) Validate() error {
	switch {
	case f.ResourceType < ResourceAny || f.ResourceType > ResourceTransactionalID:
		return fmt.Errorf("%w: invalid resource type %d", ErrInvalidACL, f.ResourceType)
	case f.PatternType < PatternAny || f.PatternType > PatternPrefixed:
		return fmt.Errorf("%w: invalid pattern type %d", ErrInvalidACL, f.PatternType)
	case f.Operation < OpAny || f.Operation > OpIdempotentWrite:
		return fmt.Errorf("%w: invalid operation %d", ErrInvalidACL, f.Operation)
	case f.Permission < PermissionAny || f.Permission > PermissionAllow:
		return fmt.Errorf("%w: invalid permission type %d", ErrInvalidACL, f.Permission)
	}
	return nil
}

// Matches reports whether the filter selects a.
func (f Filter) Matches(a ACL) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	if f.Principal != nil && *f.Principal != a.Principal {
		return false
	}
	if f.Host != nil && *f.Host != a.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != a.Operation {
		return false
	}
	if f.Permission != PermissionAny && f.Permission != a.Permission {
		return false
	}
	switch f.PatternType {
	case PatternAny:
		return f.ResourceName == nil || *f.ResourceName == a.ResourceName
	case PatternMatch:
		if f.ResourceName == nil {
			return true
		}
		return a.matchesResource(a.ResourceType, *f.ResourceName)
	default:
		return f.PatternType == a.PatternType && (f.ResourceName == nil || *f.ResourceName == a.ResourceName)
	}
}
