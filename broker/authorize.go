package broker

// Authorization: the one helper every handler asks (authorized, and the per-API
// rules, each in its API's file, built of authorize_apis.go's checks). Authorization is on when authorizer.class.name is
// set. The ACLs come from the metadata image (AccessControlEntryRecord); each broker
// builds an auth.Authorizer from its image the first time a request needs it after the
// ACLs changed, so a committed ACL change applies at the next request after this
// broker applied the entry.
//
// Requests from other brokers: a principal that is a super user or holds ClusterAction
// on the cluster is a broker and has every right (forwarded requests were authorized at
// the broker that received them). The client id plays no part (brokerRequest).

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
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

// brokerRequest reports whether req comes from another broker: its principal holds
// ClusterAction on the cluster (a super user, or a principal granted it — Kafka's
// broker operation). Such a principal has every right: a request another broker
// forwards was authorized at the broker that received it. Only the authenticated
// principal counts, never the client id: on an inter-broker listener that does not
// authenticate, brokers are User:ANONYMOUS, which must then be a super user
// (checkInterBrokerIdentity).
func (b *Broker) brokerRequest(req *rpc.Request, a *auth.Authorizer, principal, host string) bool {
	return a.Authorize(principal, host, auth.OpClusterAction, auth.ResourceCluster, auth.ClusterName)
}

// clusterPrincipal reports whether the request's authenticated principal is a broker's
// by the cluster's own word: with the authorizer on, a principal holding ClusterAction
// (super users included); without it, an authenticated super user. Quota exemptions and
// the creation of internal topics key on it, never on the client id.
func (b *Broker) clusterPrincipal(req *rpc.Request) bool {
	principal, host := requestPrincipal(req)
	if a := b.authorizer(); a != nil {
		return a.Authorize(principal, host, auth.OpClusterAction, auth.ResourceCluster, auth.ClusterName)
	}
	return principal != rpc.AnonymousPrincipal && slices.Contains(b.authzState().cfg.SuperUsers, principal)
}

// checkInterBrokerIdentity refuses a start where brokers could not work with each other
// under the authorizer: their requests are authorized by the principal they
// authenticate as on the inter-broker listener, and on a listener that does not
// authenticate (PLAINTEXT, or SSL without ssl.client.auth=required) that is
// User:ANONYMOUS, which then needs to be in super.users (Kafka requires the same, and
// its brokers silently fail to replicate without it). Every client of that listener
// then has every right: authenticate the inter-broker listener to keep them apart.
func (c *Config) checkInterBrokerIdentity() error {
	if v, _ := c.brokerValue("authorizer.class.name"); v == "" {
		return nil
	}
	specs, err := c.listenerSpecs()
	if err != nil {
		return nil // reported by the listeners' own checks
	}
	name := c.interBrokerListenerName()
	for _, s := range specs {
		if !strings.EqualFold(s.Name, name) {
			continue
		}
		authenticated := s.SASL() || s.TLS() && strings.EqualFold(c.listenerProperty(s.Name, "ssl.client.auth"), "required")
		users, _ := c.brokerValue("super.users")
		if authenticated || slices.Contains(auth.ParseSuperUsers(users), rpc.AnonymousPrincipal) {
			return nil
		}
		return fmt.Errorf("%w: authorizer.class.name is set and the inter-broker listener %s does not authenticate, so brokers "+
			"would connect to each other as %s, without the rights they need: authenticate that listener (SASL, or SSL with "+
			"ssl.client.auth=required), or add %s to super.users (every client of that listener then has every right)",
			config.ErrInvalidBrokerConfig, s.Name, rpc.AnonymousPrincipal, rpc.AnonymousPrincipal)
	}
	return nil
}

// Authorization failures, mapped to Kafka's codes in errors.go.
var (
	ErrTopicAuthorizationFailed           = errors.New("broker: topic authorization failed")
	ErrGroupAuthorizationFailed           = errors.New("broker: group authorization failed")
	ErrClusterAuthorizationFailed         = errors.New("broker: cluster authorization failed")
	ErrTransactionalIDAuthorizationFailed = errors.New("broker: transactional id authorization failed")
	ErrOperationNotAttempted              = errors.New("broker: operation not attempted")
	// ErrSecurityDisabled answers the ACL APIs when no authorizer is configured
	// (Kafka's "No Authorizer is configured on the broker"): an ACL stored then would
	// not be enforced, and an operator would believe it is.
	ErrSecurityDisabled = errors.New("broker: no authorizer is configured on the broker (authorizer.class.name)")
)
