package broker

import (
	"testing"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAuthorize_MetadataV0EmptyListIsFiltered: in Metadata v0 an empty topic list means
// every topic (v0 has no null); alice, allowed only t, is shown only t (v0 returned
// every topic unfiltered).
func TestAuthorize_MetadataV0EmptyListIsFiltered(t *testing.T) {
	b := authzBroker(t)
	for _, v := range []int16{0, 1, 12} {
		all := kmsg.NewPtrMetadataResponse()
		for _, name := range []string{"t", "u"} {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = kmsg.StringPtr(name)
			all.Topics = append(all.Topics, mt)
		}
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		if v == 0 {
			req.Topics = []kmsg.MetadataRequestTopic{}
		}
		got := decide(b, as("User:alice", req), all).(*kmsg.MetadataResponse)
		if len(got.Topics) != 1 || *got.Topics[0].Topic != "t" {
			t.Errorf("v%d, every topic: alice sees %d topics", v, len(got.Topics))
		}
	}
}

// TestAuthorize_FindCoordinatorAllDeniedCreatesNothing: a batched FindCoordinator whose
// every key is denied is answered without running the handler, which would create
// __consumer_offsets.
func TestAuthorize_FindCoordinatorAllDeniedCreatesNothing(t *testing.T) {
	b := authzBroker(t)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorKeys = 4, []string{"g1", "g2"}
	d := b.checkRequest(as("User:alice", req))
	if d.answer == nil {
		t.Fatal("the request reaches the handler")
	}
	resp := d.answer.(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 2 || resp.Coordinators[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("answer %+v", resp.Coordinators)
	}
}

// TestACLsWithoutAuthorizer: with no authorizer configured, the ACL APIs answer
// SECURITY_DISABLED (they stored a DENY rule that nothing enforced), as in Kafka.
func TestACLsWithoutAuthorizer(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	ctx := testContext(t)
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Deny("User:mallory").DenyHosts("*").Topics("t").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range created {
		if r.Err != kerr.SecurityDisabled {
			t.Errorf("create: %v, want SECURITY_DISABLED", r.Err)
		}
	}
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	described, err := describe.RequestWith(ctx, newClient(t, b))
	if err != nil || described.ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("describe: %v, error code %d, want SECURITY_DISABLED", err, described.ErrorCode)
	}
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Operations(kadm.OpAny).Allow().Deny())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range deleted {
		if r.Err != kerr.SecurityDisabled {
			t.Errorf("delete: %v, want SECURITY_DISABLED", r.Err)
		}
	}
	if n := len(b.Image().ACLs); n != 0 {
		t.Errorf("%d ACLs stored", n)
	}
}

// TestAuthorize_AnonymousPrincipalAgrees: auth's unauthenticated principal (which
// IsClusterPrincipal never counts) is the one rpc gives an unauthenticated connection.
func TestAuthorize_AnonymousPrincipalAgrees(t *testing.T) {
	if auth.AnonymousPrincipal != rpc.AnonymousPrincipal {
		t.Fatalf("auth %q, rpc %q", auth.AnonymousPrincipal, rpc.AnonymousPrincipal)
	}
}
