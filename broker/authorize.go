package broker

// Authorization: the one helper every handler asks (authorized, and the per-API
// filters in authorize_apis.go). Authorization is on when authorizer.class.name is
// set. The ACLs come from the metadata image (AccessControlEntryRecord); each broker
// builds an auth.Authorizer from its image the first time a request needs it after the
// ACLs changed, so a committed ACL change applies at the next request after this
// broker applied the entry.
//
// Requests from other brokers: a request fromBroker recognises on an anonymous
// connection of the inter-broker listener is cluster-authorized, as is any request whose principal is a super user or holds
// ClusterAction on the cluster and that fromBroker recognises (forwarded requests were
// authorized at the broker that received them).

import (
	"errors"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
)

// authorization is the broker's authorizer state; the zero value reads the
// configuration on first use.
type authorization struct {
	once    sync.Once
	enabled bool
	cfg     auth.AuthorizerConfig
	// current is the authorizer of the ACL map it was built from.
	current atomic.Pointer[builtAuthorizer]
}

type builtAuthorizer struct {
	acls uintptr // identity of the image's ACL map (replaced on every change)
	a    *auth.Authorizer
}

func (b *Broker) authzState() *authorization {
	z := &b.authz
	z.once.Do(func() {
		v, _ := b.cfg.brokerValue("authorizer.class.name")
		z.enabled = v != ""
		users, _ := b.cfg.brokerValue("super.users")
		z.cfg = auth.AuthorizerConfig{SuperUsers: auth.ParseSuperUsers(users),
			AllowEveryoneIfNoACLFound: b.cfg.boolValue("allow.everyone.if.no.acl.found")}
	})
	return z
}

// authzEnabled reports whether requests are authorized at all.
func (b *Broker) authzEnabled() bool { return b.authzState().enabled }

// authorizer returns the authorizer over the current image's ACLs, or nil when
// authorization is off.
func (b *Broker) authorizer() *auth.Authorizer {
	z := b.authzState()
	if !z.enabled {
		return nil
	}
	im := b.Image()
	id := reflect.ValueOf(im.ACLs).Pointer()
	if cur := z.current.Load(); cur != nil && cur.acls == id {
		return cur.a
	}
	a := auth.NewAuthorizer(z.cfg, imageACLs(im))
	z.current.Store(&builtAuthorizer{acls: id, a: a})
	return a
}

// imageACLs converts the image's ACL records.
func imageACLs(im *metadata.Image) []auth.ACL {
	out := make([]auth.ACL, 0, len(im.ACLs))
	for _, r := range im.ACLs {
		out = append(out, aclFromRecord(r))
	}
	return out
}

func aclFromRecord(r metadata.AccessControlEntryRecord) auth.ACL {
	return auth.ACL{ResourceType: auth.ResourceType(r.ResourceType), ResourceName: r.ResourceName,
		PatternType: auth.PatternType(r.PatternType), Principal: r.Principal, Host: r.Host,
		Operation: auth.Operation(r.Operation), Permission: auth.Permission(r.PermissionType)}
}

// requestPrincipal is the request's principal and client host.
func requestPrincipal(req *rpc.Request) (principal, host string) {
	principal = rpc.AnonymousPrincipal
	if req.Conn == nil {
		return principal, ""
	}
	if req.Conn.Principal != "" {
		principal = req.Conn.Principal
	}
	if req.Conn.RemoteAddr != nil {
		if h, _, err := net.SplitHostPort(req.Conn.RemoteAddr.String()); err == nil {
			host = h
		}
	}
	return principal, host
}

// authorized reports whether the request's principal may perform op on the named
// resource (always, with authorization off). This is the one check handlers call.
func (b *Broker) authorized(req *rpc.Request, op auth.Operation, t auth.ResourceType, name string) bool {
	a := b.authorizer()
	if a == nil {
		return true
	}
	principal, host := requestPrincipal(req)
	if b.brokerRequest(req, a, principal, host) {
		return true
	}
	return a.Authorize(principal, host, op, t, name)
}

// authorizedAny reports whether the principal may perform op on some resource of
// type t (idempotent producers holding Write on any topic).
func (b *Broker) authorizedAny(req *rpc.Request, op auth.Operation, t auth.ResourceType) bool {
	a := b.authorizer()
	if a == nil {
		return true
	}
	principal, host := requestPrincipal(req)
	if b.brokerRequest(req, a, principal, host) {
		return true
	}
	return a.AuthorizeAny(principal, host, op, t)
}

// authorizedCluster is authorized for an operation on the cluster resource.
func (b *Broker) authorizedCluster(req *rpc.Request, op auth.Operation) bool {
	return b.authorized(req, op, auth.ResourceCluster, auth.ClusterName)
}

// brokerRequest reports whether req comes from another broker with the cluster rights
// that inter-broker requests need: ClusterAction on the cluster (or super user). An
// anonymous connection is trusted on fromBroker's word only on the inter-broker
// listener (a PLAINTEXT cluster's brokers have no other name); on any other listener
// an anonymous client claiming a broker's client id gets no cluster rights.
func (b *Broker) brokerRequest(req *rpc.Request, a *auth.Authorizer, principal, host string) bool {
	if !fromBroker(req) {
		return false
	}
	if principal == rpc.AnonymousPrincipal {
		return req.Conn == nil || strings.EqualFold(req.Conn.ListenerName, b.cfg.interBrokerListenerName())
	}
	return a.Authorize(principal, host, auth.OpClusterAction, auth.ResourceCluster, auth.ClusterName)
}

// Authorization failures, mapped to Kafka's codes in errors.go.
var (
	ErrTopicAuthorizationFailed           = errors.New("broker: topic authorization failed")
	ErrGroupAuthorizationFailed           = errors.New("broker: group authorization failed")
	ErrClusterAuthorizationFailed         = errors.New("broker: cluster authorization failed")
	ErrTransactionalIDAuthorizationFailed = errors.New("broker: transactional id authorization failed")
	ErrOperationNotAttempted              = errors.New("broker: operation not attempted")
)
