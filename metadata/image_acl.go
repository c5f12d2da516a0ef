package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ClientQuota is the quota values of one entity.
type ClientQuota struct {
	Entity []ClientQuotaEntityData `json:"entity"` // sorted by entity type
	Values map[string]float64      `json:"values"`
}

// QuotaEntityKey is the canonical form of an entity (sorted by type; a default name
// is written <default>), the key of Image.ClientQuotas.
func QuotaEntityKey(entity []ClientQuotaEntityData) string {
	parts := make([]string, 0, len(entity))
	for _, e := range sortedEntity(entity) {
		name := "<default>"
		if e.EntityName != nil {
			name = "=" + *e.EntityName
		}
		parts = append(parts, e.EntityType+name)
	}
	return strings.Join(parts, "\x00")
}

func sortedEntity(entity []ClientQuotaEntityData) []ClientQuotaEntityData {
	out := slices.Clone(entity)
	slices.SortFunc(out, func(a, b ClientQuotaEntityData) int { return strings.Compare(a.EntityType, b.EntityType) })
	return out
}

// applySecurity applies the ACL and quota records. The maps are copied on the first
// change of an entry, so earlier images keep theirs.
func (im *Image) applySecurity(r Record) error {
	switch r := r.(type) {
	case AccessControlEntryRecord:
		if r.ID == ZeroUuid {
			return fmt.Errorf("%w: ACL id is zero", ErrInvalidRecord)
		}
		if _, ok := im.ACLs[r.ID]; ok {
			return fmt.Errorf("%w: ACL id %s is in use", ErrInvalidRecord, r.ID)
		}
		im.ownACLs()
		im.ACLs[r.ID] = r
	case RemoveAccessControlEntryRecord:
		if _, ok := im.ACLs[r.ID]; !ok {
			return fmt.Errorf("%w: no ACL with id %s", ErrInvalidRecord, r.ID)
		}
		im.ownACLs()
		delete(im.ACLs, r.ID)
	case ClientQuotaRecord:
		if len(r.Entity) == 0 || r.Key == "" {
			return fmt.Errorf("%w: client quota without entity or key", ErrInvalidRecord)
		}
		key := QuotaEntityKey(r.Entity)
		if !im.quotasOwned {
			im.ClientQuotas = maps.Clone(im.ClientQuotas)
			if im.ClientQuotas == nil {
				im.ClientQuotas = map[string]*ClientQuota{}
			}
			im.quotasOwned = true
		}
		q := &ClientQuota{Entity: sortedEntity(r.Entity), Values: map[string]float64{}}
		if old := im.ClientQuotas[key]; old != nil {
			q.Values = maps.Clone(old.Values)
		}
		if r.Remove {
			delete(q.Values, r.Key)
		} else {
			q.Values[r.Key] = r.Value
		}
		if len(q.Values) == 0 {
			delete(im.ClientQuotas, key)
		} else {
			im.ClientQuotas[key] = q
		}
	default:
		return fmt.Errorf("%w: cannot apply %T", ErrInvalidRecord, r)
	}
	return nil
}

// ownACLs makes the ACL map this entry's own copy, once per entry.
func (im *Image) ownACLs() {
	if im.aclsOwned {
		return
	}
	im.ACLs = maps.Clone(im.ACLs)
	if im.ACLs == nil {
		im.ACLs = map[Uuid]AccessControlEntryRecord{}
	}
	im.aclsOwned = true
}
