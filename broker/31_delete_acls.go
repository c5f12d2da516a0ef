package broker

// DeleteAcls (key 31), v0-3: forwarded to the controller, which removes every ACL a
// filter selects (auth.Filter) in one entry of RemoveAccessControlEntryRecords and
// answers, per filter, the ACLs it matched. v0 filters literal patterns only. Needs
// Alter on the cluster (clusterOnly). Without an authorizer every filter is
// SECURITY_DISABLED, as in Kafka.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DeleteACLs, 0, 3, (*Broker).handleDeleteACLs, apiOpts{
		authorize:  clusterOnly(auth.OpAlter),
		controller: onController((*Broker).deleteACLs),
		fillError:  fillErrorDeleteACLs,
		isNotController: func(resp kmsg.Response) bool {
			return allNotController(resp.(*kmsg.DeleteACLsResponse).Results, func(r kmsg.DeleteACLsResponseResult) int16 { return r.ErrorCode })
		},
		adminChange: true,
	})
}

func (b *Broker) handleDeleteACLs(ctx context.Context, req *rpc.Request) rpc.Result {
	if !b.authzEnabled() {
		return rpc.Respond(errorResponse(req.Body, errorCode(ErrSecurityDisabled), ErrSecurityDisabled))
	}
	return b.respondFromController(ctx, req)
}

// deleteACLs runs on the controller: it validates the filters (auth) and asks the
// controller to remove what they match (controller/acls.go).
func (b *Broker) deleteACLs(ctx context.Context, r *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse {
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	if len(r.Filters) > controller.MaxResourcesPerRequest {
		err := controller.TooManyResources(len(r.Filters))
		fillErrorDeleteACLs(r, resp, errorCode(err), err)
		return resp
	}
	filters := make([]auth.Filter, len(r.Filters))
	errs := make([]error, len(r.Filters))
	for i, f := range r.Filters {
		pattern := auth.PatternType(f.ResourcePatternType)
		if r.Version == 0 {
			pattern = auth.PatternLiteral
		}
		filters[i] = auth.Filter{ResourceType: auth.ResourceType(f.ResourceType), ResourceName: f.ResourceName, PatternType: pattern,
			Principal: f.Principal, Host: f.Host, Operation: auth.Operation(f.Operation), Permission: auth.Permission(f.PermissionType)}
		errs[i] = filters[i].Validate()
	}
	preds := make([]func(metadata.AccessControlEntryRecord) bool, len(filters))
	for i, f := range filters {
		if errs[i] == nil {
			preds[i] = func(rec metadata.AccessControlEntryRecord) bool { return f.Matches(aclFromRecord(rec)) }
		}
	}
	matched, err := b.ctrl.DeleteACLs(ctx, preds)
	for i := range filters {
		res := kmsg.NewDeleteACLsResponseResult()
		e := errs[i]
		if e == nil {
			e = err
		}
		if e != nil {
			res.ErrorCode, res.ErrorMessage = b.errorCodeLogged(e, "delete acls"), errorMessage(e)
		} else {
			for _, rec := range matched[i] {
				a := aclFromRecord(rec)
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
				m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
				res.MatchingACLs = append(res.MatchingACLs, m)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// fillErrorDeleteACLs is DeleteACLs's apiOpts.fillError.
func fillErrorDeleteACLs(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.DeleteACLsResponse)
	for range req.(*kmsg.DeleteACLsRequest).Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, errorMessage(cause)
		r.Results = append(r.Results, res)
	}
}
