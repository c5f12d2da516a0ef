package controller

import (
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// CreateACLs stores an entry once, however often it is asked for; DeleteACLs removes
// what a filter matches and reports it per filter, a nil filter matching nothing; a
// request that changes nothing still commits (a NoOp entry).
func TestACLsDecision(t *testing.T) {
	c, q := activeController(t, 0)
	ctx := testCtx(t)
	read := metadata.AccessControlEntryRecord{ResourceType: 2, ResourceName: "t", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3}
	write := read
	write.Operation = 4
	if err := c.CreateACLs(ctx, []metadata.AccessControlEntryRecord{read, read, write}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateACLs(ctx, []metadata.AccessControlEntryRecord{read}); err != nil {
		t.Fatal(err)
	}
	if n := len(q.Image().ACLs); n != 2 {
		t.Fatalf("%d ACLs stored, want 2", n)
	}
	offset := q.Image().Offset
	none := func(metadata.AccessControlEntryRecord) bool { return false }
	if matched, err := c.DeleteACLs(ctx, []func(metadata.AccessControlEntryRecord) bool{none}); err != nil || len(matched[0]) != 0 {
		t.Fatalf("a filter matching nothing: %v, %v", matched, err)
	}
	if q.Image().Offset == offset || len(q.Image().ACLs) != 2 {
		t.Fatal("a deletion of nothing did not commit a NoOp entry, or removed something")
	}
	reads := func(r metadata.AccessControlEntryRecord) bool { return r.Operation == 3 }
	matched, err := c.DeleteACLs(ctx, []func(metadata.AccessControlEntryRecord) bool{reads, nil, reads})
	if err != nil || len(matched[0]) != 1 || matched[0][0].Operation != 3 || len(matched[1]) != 0 || len(matched[2]) != 1 {
		t.Fatalf("matches %v, err %v", matched, err)
	}
	for _, r := range q.Image().ACLs {
		if r.Operation != 4 {
			t.Fatalf("ACL %+v left after its deletion", r)
		}
	}
	if len(q.Image().ACLs) != 1 {
		t.Fatalf("%d ACLs left, want 1", len(q.Image().ACLs))
	}
}
