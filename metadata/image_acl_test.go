package metadata

import (
	"encoding/json"
	"testing"
)

// TestImage_ACLsAndQuotas: ACL and quota records change a copy of the image (the old
// one keeps its maps), refuse a reused or unknown id, and survive the snapshot form.
func TestImage_ACLsAndQuotas(t *testing.T) {
	id1, id2 := UuidFromBytes([16]byte{1}), UuidFromBytes([16]byte{2})
	ace := func(id Uuid, name string) AccessControlEntryRecord {
		return AccessControlEntryRecord{ID: id, ResourceType: 2, ResourceName: name, PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3}
	}
	user := "alice"
	quota := ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: "user", EntityName: &user}, {EntityType: "client-id"}}, Key: "producer_byte_rate", Value: 1024}
	im0 := NewImage()
	im1, err := im0.Apply(1, []Record{ace(id1, "t"), ace(id2, "u"), quota})
	if err != nil {
		t.Fatal(err)
	}
	if len(im0.ACLs) != 0 || len(im0.ClientQuotas) != 0 || len(im1.ACLs) != 2 || len(im1.ClientQuotas) != 1 {
		t.Fatalf("acls %d/%d, quotas %d/%d", len(im0.ACLs), len(im1.ACLs), len(im0.ClientQuotas), len(im1.ClientQuotas))
	}
	if _, err := im1.Apply(2, []Record{ace(id1, "again")}); err == nil {
		t.Error("a reused ACL id was accepted")
	}
	if _, err := im1.Apply(2, []Record{RemoveAccessControlEntryRecord{ID: UuidFromBytes([16]byte{9})}}); err == nil {
		t.Error("removing an unknown ACL was accepted")
	}
	im2, err := im1.Apply(3, []Record{RemoveAccessControlEntryRecord{ID: id1}, ClientQuotaRecord{Entity: quota.Entity, Key: "producer_byte_rate", Remove: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(im1.ACLs) != 2 || len(im2.ACLs) != 1 || len(im2.ClientQuotas) != 0 || len(im1.ClientQuotas) != 1 {
		t.Fatalf("after removal: acls %d/%d, quotas %d/%d", len(im1.ACLs), len(im2.ACLs), len(im1.ClientQuotas), len(im2.ClientQuotas))
	}
	// Records round-trip, and so does the image's snapshot form.
	enc, err := EncodeRecords(ace(id1, "t"), quota, RemoveAccessControlEntryRecord{ID: id2})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeRecords(enc)
	if err != nil || len(recs) != 3 || recs[0].(AccessControlEntryRecord).ResourceName != "t" || *recs[1].(ClientQuotaRecord).Entity[0].EntityName != "alice" {
		t.Fatalf("decoded %v, %v", recs, err)
	}
	raw, err := json.Marshal(im1.SnapshotForm())
	if err != nil {
		t.Fatal(err)
	}
	var back Image
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	restored := back.FromSnapshotForm()
	key := QuotaEntityKey(quota.Entity)
	if len(restored.ACLs) != 2 || restored.ACLs[id2].ResourceName != "u" || restored.ClientQuotas[key].Values["producer_byte_rate"] != 1024 {
		t.Fatalf("restored acls %v quotas %v", restored.ACLs, restored.ClientQuotas)
	}
}
