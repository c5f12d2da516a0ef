package metadata

import (
	"encoding/json"
	"fmt"
)

// RecordType numbers the replicated record types. The numbers are Kafka's metadata
// record api keys where Kafka has the record; Petrel's own start at 1000. They are
// append-only: never renumber or reuse one.
type RecordType uint16

// Record type numbers.
const (
	RegisterBrokerRecordType   RecordType = 0
	UnregisterBrokerRecordType RecordType = 1
	TopicRecordType            RecordType = 2
	PartitionRecordType        RecordType = 3
	ConfigRecordType           RecordType = 4
	PartitionChangeRecordType  RecordType = 5
	FenceBrokerRecordType      RecordType = 7
	UnfenceBrokerRecordType    RecordType = 8
	RemoveTopicRecordType      RecordType = 9
	ProducerIdsRecordType      RecordType = 15
	// UserScramCredentialRecordType and RemoveUserScramCredentialRecordType: scram.go.
	UserScramCredentialRecordType       RecordType = 11
	RemoveUserScramCredentialRecordType RecordType = 22
	NoOpRecordType                      RecordType = 20
	ClusterRecordType                   RecordType = 1000 // Petrel: the cluster id, first record of the log
	// RemoteLogSegmentRecordType (1001, Petrel's): remote_log.go.
)

// Record is one replicated metadata record.
type Record interface {
	// Type is the record's append-only type number.
	Type() RecordType
	// Version is the record's schema version; new fields bump it.
	Version() uint16
}

// Endpoint is a listener a broker advertises.
type Endpoint struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// ClusterRecord sets the cluster id. The first controller writes it once.
type ClusterRecord struct {
	ClusterID string `json:"clusterId"`
}

// RegisterBrokerRecord registers a broker or replaces its registration. The broker epoch
// is the metadata offset (Raft index) at which the record is applied.
type RegisterBrokerRecord struct {
	BrokerID      int32      `json:"brokerId"`
	IncarnationID Uuid       `json:"incarnationId"`
	Listeners     []Endpoint `json:"listeners"`
	Rack          string     `json:"rack,omitempty"`
	Fenced        bool       `json:"fenced"`
	// Features are the feature ranges the broker supports (feature_levels.go); nil in
	// a registration written before Petrel had features.
	Features []BrokerFeature `json:"features,omitempty"`
}

// UnregisterBrokerRecord removes a broker (decommissioning only).
type UnregisterBrokerRecord struct {
	BrokerID    int32 `json:"brokerId"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// FenceBrokerRecord fences a broker: it may lead nothing.
type FenceBrokerRecord struct {
	BrokerID    int32 `json:"brokerId"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// UnfenceBrokerRecord lifts a broker's fence.
type UnfenceBrokerRecord struct {
	BrokerID    int32 `json:"brokerId"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// TopicRecord creates a topic; its PartitionRecords follow in the same batch.
type TopicRecord struct {
	Name    string `json:"name"`
	TopicID Uuid   `json:"topicId"`
}

// PartitionRecord creates a partition (both epochs start at 0).
type PartitionRecord struct {
	TopicID     Uuid    `json:"topicId"`
	PartitionID int32   `json:"partitionId"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Leader      int32   `json:"leader"`
	// ELR and LastKnownELR are Kafka's fields of the same names (KIP-966, elr.go);
	// absent in records written before them.
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"lastKnownElr,omitempty"`
}

// PartitionChangeRecord changes a partition. Nil fields are unchanged. Every applied
// change bumps the partition epoch; a present Leader bumps the leader epoch, even when it
// names the same broker.
type PartitionChangeRecord struct {
	TopicID     Uuid    `json:"topicId"`
	PartitionID int32   `json:"partitionId"`
	Leader      *int32  `json:"leader,omitempty"`
	ISR         []int32 `json:"isr,omitempty"`
	Replicas    []int32 `json:"replicas,omitempty"`
	Adding      []int32 `json:"adding,omitempty"`
	Removing    []int32 `json:"removing,omitempty"`
	// ClearReassignment empties Adding and Removing.
	ClearReassignment bool `json:"clearReassignment,omitempty"`
	// Unclean marks a leader elected from outside the ISR (possible data loss); it is
	// carried for the log and for the new leader, and changes nothing else.
	Unclean bool `json:"unclean,omitempty"`
	// EmptyISR empties the ISR (KIP-966: the last ISR member left it for the ELR); it
	// is written only with eligible leader replicas enabled (elr.go).
	EmptyISR bool `json:"emptyIsr,omitempty"`
	// ELR and LastKnownELR, when present, replace the partition's (an empty list
	// clears it), as Kafka's null-or-list fields do (elr.go).
	ELR          *[]int32 `json:"elr,omitempty"`
	LastKnownELR *[]int32 `json:"lastKnownElr,omitempty"`
}

// RemoveTopicRecord deletes a topic, its partitions and its configs.
type RemoveTopicRecord struct {
	TopicID Uuid `json:"topicId"`
}

// ConfigResourceType is Kafka's resource type number for configs.
type ConfigResourceType int8

// Config resource types (Kafka's numbers).
const (
	TopicResource  ConfigResourceType = 2
	BrokerResource ConfigResourceType = 4
	// GroupResource is a consumer group's configs (KIP-848), named by group id; they
	// outlive the group, as in Kafka.
	GroupResource ConfigResourceType = 32
	// ClientMetricsResource is a client metrics subscription (KIP-714), named by the
	// operator.
	ClientMetricsResource ConfigResourceType = 16
)

// ConfigRecord sets or (with a nil Value) deletes one config of a resource. An empty
// broker ResourceName is the cluster-wide default.
type ConfigRecord struct {
	ResourceType ConfigResourceType `json:"resourceType"`
	ResourceName string             `json:"resourceName"`
	Name         string             `json:"name"`
	Value        *string            `json:"value"`
}

// ProducerIdsRecord allocates the block of producer ids below NextProducerID, from the
// previous NextProducerID, to a broker (AllocateProducerIds). Kafka's record of the same
// number and fields.
type ProducerIdsRecord struct {
	BrokerID       int32 `json:"brokerId"`
	BrokerEpoch    int64 `json:"brokerEpoch"`
	NextProducerID int64 `json:"nextProducerId"`
}

// NoOpRecord advances the log (a new controller commits one in its term).
type NoOpRecord struct{}

func (ClusterRecord) Type() RecordType          { return ClusterRecordType }
func (RegisterBrokerRecord) Type() RecordType   { return RegisterBrokerRecordType }
func (UnregisterBrokerRecord) Type() RecordType { return UnregisterBrokerRecordType }
func (FenceBrokerRecord) Type() RecordType      { return FenceBrokerRecordType }
func (UnfenceBrokerRecord) Type() RecordType    { return UnfenceBrokerRecordType }
func (TopicRecord) Type() RecordType            { return TopicRecordType }
func (PartitionRecord) Type() RecordType        { return PartitionRecordType }
func (PartitionChangeRecord) Type() RecordType  { return PartitionChangeRecordType }
func (RemoveTopicRecord) Type() RecordType      { return RemoveTopicRecordType }
func (ConfigRecord) Type() RecordType           { return ConfigRecordType }
func (NoOpRecord) Type() RecordType             { return NoOpRecordType }
func (ProducerIdsRecord) Type() RecordType      { return ProducerIdsRecordType }

func (ClusterRecord) Version() uint16          { return 0 }
func (RegisterBrokerRecord) Version() uint16   { return 0 }
func (UnregisterBrokerRecord) Version() uint16 { return 0 }
func (FenceBrokerRecord) Version() uint16      { return 0 }
func (UnfenceBrokerRecord) Version() uint16    { return 0 }
func (TopicRecord) Version() uint16            { return 0 }
func (PartitionRecord) Version() uint16        { return 0 }
func (PartitionChangeRecord) Version() uint16  { return 0 }
func (RemoveTopicRecord) Version() uint16      { return 0 }
func (ConfigRecord) Version() uint16           { return 0 }
func (NoOpRecord) Version() uint16             { return 0 }
func (ProducerIdsRecord) Version() uint16      { return 0 }

// envelope is a record on the wire: type, version and the JSON body.
type envelope struct {
	Type    RecordType      `json:"t"`
	Version uint16          `json:"v"`
	Data    json.RawMessage `json:"d"`
}

// EncodeRecords encodes records as one Raft log entry; they are applied atomically.
func EncodeRecords(records ...Record) ([]byte, error) {
	if len(records) >= parallelRecords {
		return encodeRecordsParallel(records)
	}
	envs := make([]envelope, len(records))
	for i, r := range records {
		data, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		envs[i] = envelope{Type: r.Type(), Version: r.Version(), Data: data}
	}
	return json.Marshal(envs)
}

// DecodeRecords decodes an entry written by EncodeRecords. An unknown type or a newer
// version than this build knows is an error: the node must not guess.
func DecodeRecords(b []byte) ([]Record, error) {
	var envs []envelope
	if err := json.Unmarshal(b, &envs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRecord, err)
	}
	return decodeEnvelopes(envs)
}

func newRecord(t RecordType) (Record, error) {
	switch t {
	case ClusterRecordType:
		return &ClusterRecord{}, nil
	case RegisterBrokerRecordType:
		return &RegisterBrokerRecord{}, nil
	case UnregisterBrokerRecordType:
		return &UnregisterBrokerRecord{}, nil
	case FenceBrokerRecordType:
		return &FenceBrokerRecord{}, nil
	case UnfenceBrokerRecordType:
		return &UnfenceBrokerRecord{}, nil
	case TopicRecordType:
		return &TopicRecord{}, nil
	case PartitionRecordType:
		return &PartitionRecord{}, nil
	case PartitionChangeRecordType:
		return &PartitionChangeRecord{}, nil
	case RemoveTopicRecordType:
		return &RemoveTopicRecord{}, nil
	case ConfigRecordType:
		return &ConfigRecord{}, nil
	case NoOpRecordType:
		return &NoOpRecord{}, nil
	case ProducerIdsRecordType:
		return &ProducerIdsRecord{}, nil
	case UserScramCredentialRecordType:
		return &UserScramCredentialRecord{}, nil
	case RemoveUserScramCredentialRecordType:
		return &RemoveUserScramCredentialRecord{}, nil
	case FeatureLevelRecordType:
		return &FeatureLevelRecord{}, nil
	case RemoteLogSegmentRecordType:
		return &RemoteLogSegmentRecord{}, nil
	}
	if r := newSecurityRecord(t); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("%w: unknown record type %d", ErrInvalidRecord, t)
}

func derefRecord(r Record) Record {
	switch v := r.(type) {
	case *ClusterRecord:
		return *v
	case *RegisterBrokerRecord:
		return *v
	case *UnregisterBrokerRecord:
		return *v
	case *FenceBrokerRecord:
		return *v
	case *UnfenceBrokerRecord:
		return *v
	case *TopicRecord:
		return *v
	case *PartitionRecord:
		return *v
	case *PartitionChangeRecord:
		return *v
	case *RemoveTopicRecord:
		return *v
	case *ConfigRecord:
		return *v
	case *NoOpRecord:
		return *v
	case *ProducerIdsRecord:
		return *v
	case *UserScramCredentialRecord:
		return *v
	case *RemoveUserScramCredentialRecord:
		return *v
	case *FeatureLevelRecord:
		return *v
	case *RemoteLogSegmentRecord:
		return *v
	}
	if v, ok := derefSecurityRecord(r); ok {
		return v
	}
	return r
}
