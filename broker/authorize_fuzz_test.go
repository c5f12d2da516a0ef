package broker

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzACLRequests decodes arbitrary bytes as DescribeAcls, CreateAcls, DeleteAcls,
// DescribeClientQuotas and AlterClientQuotas bodies and runs each decodable one
// through the authorization check (as User:fuzz) and its handler on a live one-node
// broker with authorization on: an answer, never a panic or a hang. AlterClientQuotas
// is made validate-only. Run with
//
//	go test -run XXX -fuzz FuzzACLRequests -fuzztime 2000x ./broker/
func FuzzACLRequests(f *testing.F) {
	name := "t"
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = append(create.Creations, aclCreation("User:a", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationRead))
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType, describe.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch, &name
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del := kmsg.NewPtrDeleteACLsRequest()
	df := kmsg.NewDeleteACLsRequestFilter()
	df.ResourceType, df.ResourcePatternType, df.Operation, df.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, df)
	dq := kmsg.NewPtrDescribeClientQuotasRequest()
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.MatchType = "user", 2
	dq.Components = append(dq.Components, comp)
	aq := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	en := kmsg.NewAlterClientQuotasRequestEntryEntity()
	en.Type = "client-id"
	entry.Entity = append(entry.Entity, en)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "producer_byte_rate", 1024
	entry.Ops = append(entry.Ops, op)
	aq.Entries = append(aq.Entries, entry)
	seeds := []kmsg.Request{describe, create, del, dq, aq}
	for i, s := range seeds {
		for _, v := range []int16{0, s.MaxVersion()} {
			s.SetVersion(v)
			f.Add(uint8(i), v, s.AppendTo(nil))
		}
	}
	// A silent broker: the fuzz target must not log through f.
	b, err := Start(Config{NodeID: 0, DataDir: f.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
		Properties: map[string]string{"authorizer.class.name": standardAuthorizer, "super.users": "User:fuzz;User:ANONYMOUS"}, Logger: hclog.NewNullLogger()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Shutdown(context.Background()) })
	ready, cancelReady := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelReady()
	if err := b.WaitReady(ready); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind uint8, version int16, body []byte) {
		var req kmsg.Request
		switch kind % 5 {
		case 0:
			req = kmsg.NewPtrDescribeACLsRequest()
		case 1:
			req = kmsg.NewPtrCreateACLsRequest()
		case 2:
			req = kmsg.NewPtrDeleteACLsRequest()
		case 3:
			req = kmsg.NewPtrDescribeClientQuotasRequest()
		default:
			req = kmsg.NewPtrAlterClientQuotasRequest()
		}
		if version < 0 || version > req.MaxVersion() {
			return
		}
		req.SetVersion(version)
		if err := req.ReadFrom(body); err != nil {
			return
		}
		if aq, ok := req.(*kmsg.AlterClientQuotasRequest); ok {
			aq.ValidateOnly = true
		}
		r := as("User:fuzz", req)
		_ = b.checkRequest(r)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		switch rq := req.(type) {
		case *kmsg.DescribeACLsRequest:
			_ = b.handleDescribeACLs(ctx, r)
		case *kmsg.CreateACLsRequest:
			if len(rq.Creations) > 100 {
				return
			}
			_ = b.createACLs(ctx, rq)
		case *kmsg.DeleteACLsRequest:
			_ = b.deleteACLs(ctx, rq)
		case *kmsg.DescribeClientQuotasRequest:
			_ = b.handleDescribeClientQuotas(ctx, r)
		case *kmsg.AlterClientQuotasRequest:
			_ = b.alterClientQuotas(ctx, rq)
		}
	})
}
