package broker

// CreateAcls (key 30), v0-3: forwarded to the controller, which validates each
// creation (INVALID_REQUEST with Kafka's reasons), gives each new ACL a random id and
// commits them as AccessControlEntryRecords in one entry; an ACL already stored is
// answered as created without a second copy; more than 10,000 creations are refused
// with POLICY_VIOLATION (controller/limits.go). v0 creates literal ACLs. Needs Alter on
// the cluster (clusterOnly). Every broker applies the entry and authorizes by
// it from its next request. Without an authorizer (authorizer.class.name unset) every
// creation is SECURITY_DISABLED, as in Kafka.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.CreateACLs, 0, 3, (*Broker).handleCreateACLs, apiOpts{
		authorize:  clusterOnly(auth.OpAlter),
		controller: onController((*Broker).createACLs),
		fillError:  fillErrorCreateACLs,
		isNotController: func(resp kmsg.Response) bool {
			return allNotController(resp.(*kmsg.CreateACLsResponse).Results, func(r kmsg.CreateACLsResponseResult) int16 { return r.ErrorCode })
		},
		adminChange: true,
	})
}

func (b *Broker) handleCreateACLs(ctx context.Context, req *rpc.Request) rpc.Result {
	if !b.authzEnabled() {
		return rpc.Respond(errorResponse(req.Body, errorCode(ErrSecurityDisabled), ErrSecurityDisabled))
	}
	return b.respondFromController(ctx, req)
}

// createACLs runs on the controller: it validates the ACLs (auth) and asks the
// controller to store the valid ones (controller/acls.go).
func (b *Broker) createACLs(ctx context.Context, r *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse {
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	if len(r.Creations) > controller.MaxResourcesPerRequest {
		err := controller.TooManyResources(len(r.Creations))
		fillErrorCreateACLs(r, resp, errorCode(err), err)
		return resp
	}
	errs := make([]error, len(r.Creations))
	acls := make([]auth.ACL, len(r.Creations))
	for i, c := range r.Creations {
		pattern := auth.PatternType(c.ResourcePatternType)
		if r.Version == 0 {
			pattern = auth.PatternLiteral
		}
		acls[i] = auth.ACL{ResourceType: auth.ResourceType(c.ResourceType), ResourceName: c.ResourceName, PatternType: pattern,
			Principal: c.Principal, Host: c.Host, Operation: auth.Operation(c.Operation), Permission: auth.Permission(c.PermissionType)}
		errs[i] = acls[i].Validate()
	}
	var entries []metadata.AccessControlEntryRecord
	for i, a := range acls {
		if errs[i] == nil {
			entries = append(entries, metadata.AccessControlEntryRecord{ResourceType: int8(a.ResourceType),
				ResourceName: a.ResourceName, PatternType: int8(a.PatternType), Principal: a.Principal, Host: a.Host,
				Operation: int8(a.Operation), PermissionType: int8(a.Permission)})
		}
	}
	err := b.ctrl.CreateACLs(ctx, entries)
	for i := range r.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		e := errs[i]
		if e == nil {
			e = err
		}
		if e != nil {
			res.ErrorCode, res.ErrorMessage = b.errorCodeLogged(e, "create acls"), errorMessage(e)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// fillErrorCreateACLs is CreateACLs's apiOpts.fillError.
func fillErrorCreateACLs(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.CreateACLsResponse)
	for range req.(*kmsg.CreateACLsRequest).Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, errorMessage(cause)
		r.Results = append(r.Results, res)
	}
}
