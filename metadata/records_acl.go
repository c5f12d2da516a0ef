package metadata

// Security record types: Kafka's KRaft metadata record numbers.
const (
	ClientQuotaRecordType              RecordType = 14
	AccessControlEntryRecordType       RecordType = 23
	RemoveAccessControlEntryRecordType RecordType = 24
)

// AccessControlEntryRecord stores one ACL (KRaft's record of the same number and
// fields). The numbers are Kafka's: resource type (2 topic, 3 group, 4 cluster, 5
// transactional id), pattern type (3 literal, 4 prefixed), operation (2 All ... 12
// IdempotentWrite) and permission type (2 deny, 3 allow). The controller validates
// the values; the image stores them as given.
type AccessControlEntryRecord struct {
	ID             Uuid   `json:"id"`
	ResourceType   int8   `json:"resourceType"`
	ResourceName   string `json:"resourceName"`
	PatternType    int8   `json:"patternType"`
	Principal      string `json:"principal"`
	Host           string `json:"host"`
	Operation      int8   `json:"operation"`
	PermissionType int8   `json:"permissionType"`
}

// RemoveAccessControlEntryRecord deletes the ACL with the id.
type RemoveAccessControlEntryRecord struct {
	ID Uuid `json:"id"`
}

// ClientQuotaEntityData is one part of a quota entity: its type ("user", "client-id")
// and name, nil for the type's default entity.
type ClientQuotaEntityData struct {
	EntityType string  `json:"entityType"`
	EntityName *string `json:"entityName"`
}

// ClientQuotaRecord sets (or with Remove, deletes) one quota value of an entity
// (KRaft's record of the same number and fields).
type ClientQuotaRecord struct {
	Entity []ClientQuotaEntityData `json:"entity"`
	Key    string                  `json:"key"`
	Value  float64                 `json:"value"`
	Remove bool                    `json:"remove,omitempty"`
}

func (AccessControlEntryRecord) Type() RecordType       { return AccessControlEntryRecordType }
func (RemoveAccessControlEntryRecord) Type() RecordType { return RemoveAccessControlEntryRecordType }
func (ClientQuotaRecord) Type() RecordType              { return ClientQuotaRecordType }

func (AccessControlEntryRecord) Version() uint16       { return 0 }
func (RemoveAccessControlEntryRecord) Version() uint16 { return 0 }
func (ClientQuotaRecord) Version() uint16              { return 0 }

// newSecurityRecord returns an empty record of a security type, or nil.
func newSecurityRecord(t RecordType) Record {
	switch t {
	case AccessControlEntryRecordType:
		return &AccessControlEntryRecord{}
	case RemoveAccessControlEntryRecordType:
		return &RemoveAccessControlEntryRecord{}
	case ClientQuotaRecordType:
		return &ClientQuotaRecord{}
	}
	return nil
}

// derefSecurityRecord returns the value a pointer from newSecurityRecord points to.
func derefSecurityRecord(r Record) (Record, bool) {
	switch v := r.(type) {
	case *AccessControlEntryRecord:
		return *v, true
	case *RemoveAccessControlEntryRecord:
		return *v, true
	case *ClientQuotaRecord:
		return *v, true
	}
	return nil, false
}
