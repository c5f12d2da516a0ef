package broker

// DescribeAcls (key 29), v0-3: the ACLs of this broker's image that the filter
// selects, grouped by resource (Kafka's filter rules, auth.Filter). v0 filters and
// answers literal patterns only. Needs Describe on the cluster (clusterOnly).
// Without an authorizer: SECURITY_DISABLED, as in Kafka.

import (
	"cmp"
	"context"
	"slices"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeACLs, 0, 3, (*Broker).handleDescribeACLs, apiOpts{
		authorize: clusterOnly(auth.OpDescribe),
		fillError: fillErrorDescribeACLs,
	})
}

func (b *Broker) handleDescribeACLs(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	if !b.authzEnabled() {
		resp.ErrorCode, resp.ErrorMessage = errorCode(ErrSecurityDisabled), errorMessage(ErrSecurityDisabled)
		return rpc.Respond(resp)
	}
	pattern := auth.PatternType(r.ResourcePatternType)
	if r.Version == 0 {
		pattern = auth.PatternLiteral
	}
	f := auth.Filter{ResourceType: auth.ResourceType(r.ResourceType), ResourceName: r.ResourceName, PatternType: pattern,
		Principal: r.Principal, Host: r.Host, Operation: auth.Operation(r.Operation), Permission: auth.Permission(r.PermissionType)}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return rpc.Respond(resp)
	}
	type resource struct {
		t       auth.ResourceType
		name    string
		pattern auth.PatternType
	}
	byResource := map[resource][]auth.ACL{}
	for _, a := range imageACLs(b.Image()) {
		if f.Matches(a) {
			k := resource{a.ResourceType, a.ResourceName, a.PatternType}
			byResource[k] = append(byResource[k], a)
		}
	}
	keys := make([]resource, 0, len(byResource))
	for k := range byResource {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y resource) int {
		return cmp.Or(cmp.Compare(x.t, y.t), cmp.Compare(x.name, y.name), cmp.Compare(x.pattern, y.pattern))
	})
	for _, k := range keys {
		rr := kmsg.NewDescribeACLsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ResourcePatternType = kmsg.ACLResourceType(k.t), k.name, kmsg.ACLResourcePatternType(k.pattern)
		acls := byResource[k]
		slices.SortFunc(acls, func(x, y auth.ACL) int {
			return cmp.Or(cmp.Compare(x.Principal, y.Principal), cmp.Compare(x.Host, y.Host), cmp.Compare(x.Operation, y.Operation), cmp.Compare(x.Permission, y.Permission))
		})
		for _, a := range acls {
			ra := kmsg.NewDescribeACLsResponseResourceACL()
			ra.Principal, ra.Host, ra.Operation, ra.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			rr.ACLs = append(rr.ACLs, ra)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return rpc.Respond(resp)
}

// fillErrorDescribeACLs is DescribeACLs's apiOpts.fillError.
func fillErrorDescribeACLs(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	out := resp.(*kmsg.DescribeACLsResponse)
	out.ErrorCode, out.ErrorMessage = code, errorMessage(cause)
}
