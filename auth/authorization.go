package auth

import (
	"slices"
	"sync/atomic"
)

// AnonymousPrincipal is Kafka's principal for an unauthenticated connection (the
// value of rpc.AnonymousPrincipal).
const AnonymousPrincipal = "User:ANONYMOUS"

// Authorization is a node's authorization state: whether requests are authorized at
// all (authorizer.class.name is set), the authorizer's static configuration, and the
// authorizer of the ACL set it was last asked for, rebuilt the first time it is asked
// for a newer set. Safe for concurrent use.
type Authorization struct {
	enabled bool
	cfg     AuthorizerConfig
	// current is the authorizer of the ACL set it was built from.
	current atomic.Pointer[versionedAuthorizer]
}

type versionedAuthorizer struct {
	version uintptr
	a       *Authorizer
}

// NewAuthorization returns the authorization state; with enabled false every check
// passes.
func NewAuthorization(enabled bool, cfg AuthorizerConfig) *Authorization {
	return &Authorization{enabled: enabled, cfg: cfg}
}

// Enabled reports whether requests are authorized at all.
func (z *Authorization) Enabled() bool { return z.enabled }

// Authorizer returns the authorizer over the ACL set identified by version (any value
// that changes whenever the set does, such as the identity of an immutable map),
// built from acls() the first time it is asked for that version; nil when
// authorization is off.
func (z *Authorization) Authorizer(version uintptr, acls func() []ACL) *Authorizer {
	if !z.enabled {
		return nil
	}
	if cur := z.current.Load(); cur != nil && cur.version == version {
		return cur.a
	}
	a := NewAuthorizer(z.cfg, acls())
	z.current.Store(&versionedAuthorizer{version: version, a: a})
	return a
}

// Checks returns the checks of principal, connected from host, against a (nil when
// authorization is off).
func (z *Authorization) Checks(a *Authorizer, principal, host string) Checks {
	c := Checks{authorizer: a, superUsers: z.cfg.SuperUsers, Principal: principal, Host: host}
	c.isBroker = a != nil && a.Authorize(principal, host, OpClusterAction, ResourceCluster, ClusterName)
	return c
}

// Checks are the checks an API's authorization rule makes of one request's
// principal. Without an authorizer (authorization off) every check passes. A
// principal holding ClusterAction on the cluster (a super user, or one granted it:
// Kafka's broker operation) is another broker and passes every check: a request
// another broker forwards was authorized at the broker that received it. Only the
// authenticated principal counts, never a client id.
type Checks struct {
	authorizer *Authorizer
	superUsers []string
	// isBroker is IsBroker, asked of the authorizer once rather than before every
	// check.
	isBroker bool
	// Principal and Host are the request's principal ("User:alice") and client host.
	Principal, Host string
}

// Allowed reports whether the principal may perform op on the named resource.
func (c Checks) Allowed(op Operation, t ResourceType, name string) bool {
	a := c.authorizer
	if a == nil || c.isBroker {
		return true
	}
	return a.Authorize(c.Principal, c.Host, op, t, name)
}

// AllowedAny reports whether the principal may perform op on some resource of type t
// (idempotent producers holding Write on any topic).
func (c Checks) AllowedAny(op Operation, t ResourceType) bool {
	a := c.authorizer
	if a == nil || c.isBroker {
		return true
	}
	return a.AuthorizeAny(c.Principal, c.Host, op, t)
}

// IsBroker reports whether the principal holds ClusterAction on the cluster; false
// without an authorizer.
func (c Checks) IsBroker() bool { return c.isBroker }

// IsClusterPrincipal reports whether the principal is a broker's by the cluster's own
// word: with the authorizer on, one holding ClusterAction (super users included);
// without it, an authenticated super user. Quota exemptions and the creation of
// internal topics key on it, never on the client id.
func (c Checks) IsClusterPrincipal() bool {
	if c.authorizer != nil {
		return c.isBroker
	}
	return c.Principal != AnonymousPrincipal && slices.Contains(c.superUsers, c.Principal)
}

// Topic reports whether the principal may perform op on the named topic.
func (c Checks) Topic(op Operation, name string) bool { return c.Allowed(op, ResourceTopic, name) }

// Group reports whether the principal may perform op on the named consumer group.
func (c Checks) Group(op Operation, name string) bool { return c.Allowed(op, ResourceGroup, name) }

// TransactionalID reports whether the principal may perform op on the named
// transactional id.
func (c Checks) TransactionalID(op Operation, name string) bool {
	return c.Allowed(op, ResourceTransactionalID, name)
}

// Cluster reports whether the principal may perform op on the cluster.
func (c Checks) Cluster(op Operation) bool { return c.Allowed(op, ResourceCluster, ClusterName) }

// CanCreateTopic reports whether the principal may create the named topic: Create on
// the cluster or on the topic, as Kafka checks CreateTopics and auto-creation.
func (c Checks) CanCreateTopic(name string) bool {
	return c.Cluster(OpCreate) || c.Topic(OpCreate, name)
}

// TopicAccess is what a request naming a topic is answered about it.
type TopicAccess int8

const (
	// TopicAllowed lets the handler answer for the topic.
	TopicAllowed TopicAccess = iota
	// TopicAuthorizationFailed answers TOPIC_AUTHORIZATION_FAILED whether the topic
	// exists or not: a principal that may not describe it does not learn that.
	TopicAuthorizationFailed
	// TopicUnknown answers UNKNOWN_TOPIC_OR_PARTITION: an unknown topic the request
	// would auto-create, which the principal may not create, is not created.
	TopicUnknown
)

// MetadataTopic decides a topic a Metadata request names, as Kafka does: without
// Describe on it, TopicAuthorizationFailed; unknown (exists false) with auto-creation
// asked and no right to create it (CanCreateTopic), TopicUnknown; else TopicAllowed.
func (c Checks) MetadataTopic(name string, exists, autoCreate bool) TopicAccess {
	switch {
	case !c.Topic(OpDescribe, name):
		return TopicAuthorizationFailed
	case autoCreate && !exists && !c.CanCreateTopic(name):
		return TopicUnknown
	}
	return TopicAllowed
}

// ConfigResource reports whether the principal may perform op on a config resource:
// a topic (topic true) by the topic's ACLs; a broker, or its loggers, through the
// cluster resource.
func (c Checks) ConfigResource(op Operation, topic bool, name string) bool {
	if topic {
		return c.Topic(op, name)
	}
	return c.Cluster(op)
}
