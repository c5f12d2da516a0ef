package broker

// Authorization: the one helper every handler asks (authorized, and the per-API
// rules, each in its API's file, built of authorize_apis.go's checks). Authorization is on when authorizer.class.name is
// set. The ACLs come from the metadata image (AccessControlEntryRecord); each broker
// builds an auth.Authorizer from its image the first time a request needs it after the
// ACLs changed, so a committed ACL change applies at the next request after this
// broker applied the entry.
//
// The checks themselves are auth.Checks: a principal that is a super user or holds
// ClusterAction on the cluster is a broker and has every right (forwarded requests were
// authorized at the broker that received them). The client id plays no part.

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
)

// authorization is the broker's auth.Authorization; the zero value reads the
// configuration on first use.
type authorization struct {
	once  sync.Once
	state *auth.Authorization
}

func (b *Broker) authzState() *auth.Authorization {
	z := &b.authz
	z.once.Do(func() {
		v, _ := b.cfg.brokerValue("authorizer.class.name")
		users, _ := b.cfg.brokerValue("super.users")
		z.state = auth.NewAuthorization(v != "", auth.AuthorizerConfig{SuperUsers: auth.ParseSuperUsers(users),
			AllowEveryoneIfNoACLFound: b.cfg.boolValue("allow.everyone.if.no.acl.found")})
	})
	return z.state
}

// authzEnabled reports whether requests are authorized at all.
func (b *Broker) authzEnabled() bool { return b.authzState().Enabled() }

// checks are the request's principal's checks against the authorizer over the current
// image's ACLs (identified by their map, replaced on every change).
func (b *Broker) checks(req *rpc.Request) auth.Checks {
	z := b.authzState()
	var a *auth.Authorizer
	if z.Enabled() {
		im := b.Image()
		a = z.Authorizer(reflect.ValueOf(im.ACLs).Pointer(), func() []auth.ACL { return imageACLs(im) })
	}
	principal, host := requestPrincipal(req)
	return z.Checks(a, principal, host)
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
// resource (always, with authorization off; a broker's principal always:
// auth.Checks).
func (b *Broker) authorized(req *rpc.Request, op auth.Operation, t auth.ResourceType, name string) bool {
	return b.checks(req).Allowed(op, t, name)
}

// authorizedCluster is authorized for an operation on the cluster resource.
func (b *Broker) authorizedCluster(req *rpc.Request, op auth.Operation) bool {
	return b.checks(req).Cluster(op)
}

// clusterPrincipal reports whether the request's authenticated principal is a broker's
// (auth.Checks.IsClusterPrincipal): quota exemptions and the creation of internal
// topics key on it, never on the client id.
func (b *Broker) clusterPrincipal(req *rpc.Request) bool { return b.checks(req).IsClusterPrincipal() }

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
