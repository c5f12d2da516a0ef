package metadata

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Broker is a registered broker.
type Broker struct {
	ID            int32      `json:"id"`
	IncarnationID Uuid       `json:"incarnationId"`
	Epoch         int64      `json:"epoch"` // metadata offset of its registration
	Listeners     []Endpoint `json:"listeners"`
	Rack          string     `json:"rack,omitempty"`
	Fenced        bool       `json:"fenced"`
	// Features are the feature ranges it registered with (feature_levels.go); nil for
	// a registration of a Petrel without features.
	Features []BrokerFeature `json:"features,omitempty"`
}

// Partition is one partition's replica assignment and leadership.
type Partition struct {
	ID             int32   `json:"id"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Leader         int32   `json:"leader"` // -1: none
	LeaderEpoch    int32   `json:"leaderEpoch"`
	PartitionEpoch int32   `json:"partitionEpoch"`
	Adding         []int32 `json:"adding,omitempty"`
	Removing       []int32 `json:"removing,omitempty"`
	// ELR are the eligible leader replicas (KIP-966, elr.go): replicas that left the
	// ISR while it was below min.insync.replicas and may still lead cleanly.
	ELR []int32 `json:"elr,omitempty"`
	// LastKnownELR are the ELR members last known before the ELR emptied (elr.go).
	LastKnownELR []int32 `json:"lastKnownElr,omitempty"`
}

// Topic is a topic and its partitions, indexed by partition id.
type Topic struct {
	Name       string       `json:"name"`
	ID         Uuid         `json:"id"`
	Partitions []*Partition `json:"partitions"`
}

// ConfigResource names a config holder: a topic, a broker, or ("", broker) the cluster
// default.
type ConfigResource struct {
	Type ConfigResourceType `json:"type"`
	Name string             `json:"name"`
}

// Image is the whole cluster state, as every node's FSM holds it. Images are values
// shared between goroutines: never modify one in place. Apply works on a copy that shares
// everything it does not change.
type Image struct {
	ClusterID string                               `json:"clusterId"`
	Brokers   map[int32]*Broker                    `json:"brokers"`
	Topics    map[string]*Topic                    `json:"topics"`
	TopicIDs  map[Uuid]string                      `json:"topicIds"`
	Configs   map[ConfigResource]map[string]string `json:"-"`
	// ConfigList is Configs in a JSON-friendly form, used only by snapshots.
	ConfigList []ConfigEntry `json:"configs"`
	// Offset is the metadata offset (Raft index) of the last applied entry.
	Offset uint64 `json:"offset"`
	// NextProducerID is the first producer id not yet allocated to any broker
	// (ProducerIdsRecord); it only grows.
	NextProducerID int64 `json:"nextProducerId"`
	// ACLs are the access control entries by id (image_acl.go).
	ACLs map[Uuid]AccessControlEntryRecord `json:"acls,omitempty"`
	// ClientQuotas are the client quotas by QuotaEntityKey (image_acl.go).
	ClientQuotas map[string]*ClientQuota `json:"clientQuotas,omitempty"`
	// ScramCredentials are the SCRAM credentials by user and mechanism type (scram.go);
	// the inner maps are replaced, never modified.
	ScramCredentials map[string]map[int8]ScramCredential `json:"scramCredentials,omitempty"`
	// Features are the finalized feature levels by name (features.go); the map is
	// replaced, never modified.
	Features map[string]int16 `json:"features,omitempty"`
	// RemoteLogs are the remote log segments (KIP-405) by topic id, deleted topics'
	// included until their segments are deleted (remote_log.go); the map is copied once
	// per entry that changes it, its values replaced, never modified.
	RemoteLogs map[Uuid]*RemoteTopicLog `json:"remoteLogs,omitempty"`

	// fresh, only while Apply builds this image, holds the topics this entry created or
	// copied: no reader has seen them, so their Partitions slices may change in place.
	// Without it an entry of n partition records of one topic would copy the slice n
	// times (quadratic: seconds for 10,000 partitions).
	fresh map[*Topic]bool
	// aclsOwned and quotasOwned, only while Apply builds this image, say that its ACLs
	// and ClientQuotas maps are this entry's own copies (image_acl.go): copied once per
	// entry, not once per record.
	aclsOwned, quotasOwned bool
	// remoteLogsOwned, only while Apply builds this image, says that RemoteLogs is this
	// entry's own copy (remote_log.go).
	remoteLogsOwned bool
}

// ownTopic returns a topic of this entry's own for t, copying t (and its partitions
// slice) the first time the entry changes it.
func (im *Image) ownTopic(t *Topic) *Topic {
	if im.fresh[t] {
		return t
	}
	nt := *t
	nt.Partitions = slices.Clone(t.Partitions)
	im.Topics[t.Name] = &nt
	if im.fresh != nil {
		im.fresh[&nt] = true
	}
	return &nt
}

// ConfigEntry is one config value of one resource.
type ConfigEntry struct {
	Resource ConfigResource `json:"resource"`
	Name     string         `json:"name"`
	Value    string         `json:"value"`
}

// NewImage returns the empty image.
func NewImage() *Image {
	return &Image{
		Brokers:  map[int32]*Broker{},
		Topics:   map[string]*Topic{},
		TopicIDs: map[Uuid]string{},
		Configs:  map[ConfigResource]map[string]string{},
	}
}

// Topic returns the named topic, or nil.
func (im *Image) Topic(name string) *Topic { return im.Topics[name] }

// TopicByID returns the topic with the id, or nil.
func (im *Image) TopicByID(id Uuid) *Topic {
	if name, ok := im.TopicIDs[id]; ok {
		return im.Topics[name]
	}
	return nil
}

// TopicNames returns every topic name, sorted.
func (im *Image) TopicNames() []string {
	return slices.Sorted(maps.Keys(im.Topics))
}

// BrokerIDs returns every registered broker id, sorted.
func (im *Image) BrokerIDs() []int32 {
	return slices.Sorted(maps.Keys(im.Brokers))
}

// UnfencedBrokerIDs returns the ids of registered, unfenced brokers, sorted.
func (im *Image) UnfencedBrokerIDs() []int32 {
	var out []int32
	for _, id := range im.BrokerIDs() {
		if !im.Brokers[id].Fenced {
			out = append(out, id)
		}
	}
	return out
}

// Config returns a resource's config value.
func (im *Image) Config(res ConfigResource, name string) (string, bool) {
	v, ok := im.Configs[res][name]
	return v, ok
}

// ResourceConfigs returns a copy of a resource's configs.
func (im *Image) ResourceConfigs(res ConfigResource) map[string]string {
	return maps.Clone(im.Configs[res])
}

// clone copies the top-level maps; values are shared and replaced, never modified.
func (im *Image) clone() *Image {
	c := *im
	c.Brokers = maps.Clone(im.Brokers)
	c.Topics = maps.Clone(im.Topics)
	c.TopicIDs = maps.Clone(im.TopicIDs)
	c.Configs = maps.Clone(im.Configs)
	c.ConfigList = nil
	c.aclsOwned, c.quotasOwned, c.remoteLogsOwned = false, false, false
	return &c
}

// Apply applies records (one log entry) at metadata offset and returns the new image.
// The receiver is not modified. A record the image refuses (a domain error) fails the
// whole entry: Apply returns the error and the image is unchanged.
func (im *Image) Apply(offset uint64, records []Record) (*Image, error) {
	next := im.clone()
	next.fresh = map[*Topic]bool{}
	for _, r := range records {
		if err := next.apply(offset, r); err != nil {
			return im, err
		}
	}
	next.fresh = nil
	next.Offset = offset
	return next, nil
}

func (im *Image) apply(offset uint64, r Record) error {
	switch r := r.(type) {
	case ClusterRecord:
		if im.ClusterID != "" && im.ClusterID != r.ClusterID {
			return fmt.Errorf("%w: cluster id is already %q", ErrInvalidRecord, im.ClusterID)
		}
		im.ClusterID = r.ClusterID
	case RegisterBrokerRecord:
		im.Brokers[r.BrokerID] = &Broker{ID: r.BrokerID, IncarnationID: r.IncarnationID, Epoch: int64(offset),
			Listeners: slices.Clone(r.Listeners), Rack: r.Rack, Fenced: r.Fenced, Features: slices.Clone(r.Features)}
	case UnregisterBrokerRecord:
		if _, ok := im.Brokers[r.BrokerID]; !ok {
			return fmt.Errorf("%w: %d", ErrUnknownBroker, r.BrokerID)
		}
		delete(im.Brokers, r.BrokerID)
	case FenceBrokerRecord, UnfenceBrokerRecord:
		id, fenced := brokerFence(r)
		b, ok := im.Brokers[id]
		if !ok {
			return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
		}
		nb := *b
		nb.Fenced = fenced
		im.Brokers[id] = &nb
	case TopicRecord:
		if err := ValidateTopicName(r.Name); err != nil {
			return err
		}
		if _, ok := im.Topics[r.Name]; ok {
			return fmt.Errorf("%w: %s", ErrTopicExists, r.Name)
		}
		if _, ok := im.TopicIDs[r.TopicID]; ok || r.TopicID == ZeroUuid {
			return fmt.Errorf("%w: topic id %s is zero or in use", ErrInvalidRecord, r.TopicID)
		}
		t := &Topic{Name: r.Name, ID: r.TopicID}
		im.Topics[r.Name] = t
		if im.fresh != nil {
			im.fresh[t] = true
		}
		im.TopicIDs[r.TopicID] = r.Name
	case PartitionRecord:
		t := im.TopicByID(r.TopicID)
		if t == nil {
			return fmt.Errorf("%w: %s", ErrUnknownTopicID, r.TopicID)
		}
		if int(r.PartitionID) != len(t.Partitions) {
			return fmt.Errorf("%w: partition %d of %s, expected %d", ErrInvalidRecord, r.PartitionID, t.Name, len(t.Partitions))
		}
		if err := checkReplicas(r.Replicas, r.ISR, r.Leader); err != nil {
			return err
		}
		nt := im.ownTopic(t)
		nt.Partitions = append(nt.Partitions, &Partition{ID: r.PartitionID,
			Replicas: slices.Clone(r.Replicas), ISR: slices.Clone(r.ISR), Leader: r.Leader,
			ELR: slices.Clone(r.ELR), LastKnownELR: slices.Clone(r.LastKnownELR)})
	case PartitionChangeRecord:
		return im.applyPartitionChange(r)
	case RemoveTopicRecord:
		t := im.TopicByID(r.TopicID)
		if t == nil {
			return fmt.Errorf("%w: %s", ErrUnknownTopicID, r.TopicID)
		}
		delete(im.Topics, t.Name)
		delete(im.TopicIDs, t.ID)
		delete(im.Configs, ConfigResource{TopicResource, t.Name})
		im.removeTopicRemoteLog(t.ID)
	case ConfigRecord:
		res := ConfigResource{r.ResourceType, r.ResourceName}
		if r.ResourceType == TopicResource && im.Topics[r.ResourceName] == nil {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, r.ResourceName)
		}
		cfg := maps.Clone(im.Configs[res])
		if cfg == nil {
			cfg = map[string]string{}
		}
		if r.Value == nil {
			delete(cfg, r.Name)
		} else {
			cfg[r.Name] = *r.Value
		}
		if len(cfg) == 0 {
			delete(im.Configs, res)
		} else {
			im.Configs[res] = cfg
		}
	case ProducerIdsRecord:
		if r.NextProducerID <= im.NextProducerID {
			return fmt.Errorf("%w: next producer id %d is not above %d", ErrInvalidRecord, r.NextProducerID, im.NextProducerID)
		}
		if _, ok := im.Brokers[r.BrokerID]; !ok {
			return fmt.Errorf("%w: %d", ErrUnknownBroker, r.BrokerID)
		}
		im.NextProducerID = r.NextProducerID
	case AccessControlEntryRecord, RemoveAccessControlEntryRecord, ClientQuotaRecord:
		return im.applySecurity(r)
	case NoOpRecord:
	case UserScramCredentialRecord, RemoveUserScramCredentialRecord:
		return im.applyScram(r)
	case FeatureLevelRecord:
		return im.applyFeatureLevel(r)
	case RemoteLogSegmentRecord:
		return im.applyRemoteLogSegment(r)
	default:
		return fmt.Errorf("%w: cannot apply %T", ErrInvalidRecord, r)
	}
	return nil
}

func brokerFence(r Record) (int32, bool) {
	if f, ok := r.(FenceBrokerRecord); ok {
		return f.BrokerID, true
	}
	return r.(UnfenceBrokerRecord).BrokerID, false
}

func (im *Image) applyPartitionChange(r PartitionChangeRecord) error {
	t := im.TopicByID(r.TopicID)
	if t == nil {
		return fmt.Errorf("%w: %s", ErrUnknownTopicID, r.TopicID)
	}
	if r.PartitionID < 0 || int(r.PartitionID) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s-%d", ErrUnknownPartition, t.Name, r.PartitionID)
	}
	p := *t.Partitions[r.PartitionID]
	if r.Replicas != nil {
		p.Replicas = slices.Clone(r.Replicas)
	}
	if r.ISR != nil {
		p.ISR = slices.Clone(r.ISR)
	}
	if r.Leader != nil {
		p.Leader = *r.Leader
		p.LeaderEpoch++
	}
	if r.Adding != nil {
		p.Adding = slices.Clone(r.Adding)
	}
	if r.Removing != nil {
		p.Removing = slices.Clone(r.Removing)
	}
	if r.ClearReassignment {
		p.Adding, p.Removing = nil, nil
	}
	applyELRChange(&p, r)
	if err := checkReplicas(p.Replicas, p.ISR, p.Leader); err != nil {
		return err
	}
	if err := checkELR(&p); err != nil {
		return err
	}
	p.PartitionEpoch++
	im.ownTopic(t).Partitions[r.PartitionID] = &p
	return nil
}

// checkReplicas checks a partition's shape: replicas unique and non-empty, the ISR a
// subset of them, non-empty unless the partition has no leader (KIP-966: with eligible
// leader replicas the last ISR member leaves too), the leader -1 or an ISR member.
func checkReplicas(replicas, isr []int32, leader int32) error {
	if len(replicas) == 0 || (len(isr) == 0 && leader != -1) {
		return fmt.Errorf("%w: replicas %v, isr %v", ErrInvalidReplicaAssignment, replicas, isr)
	}
	seen := map[int32]bool{}
	for _, r := range replicas {
		if seen[r] || r < 0 {
			return fmt.Errorf("%w: replicas %v", ErrInvalidReplicaAssignment, replicas)
		}
		seen[r] = true
	}
	for _, r := range isr {
		if !seen[r] {
			return fmt.Errorf("%w: isr %v is not a subset of replicas %v", ErrInvalidReplicaAssignment, isr, replicas)
		}
	}
	if leader != -1 && !slices.Contains(isr, leader) {
		return fmt.Errorf("%w: leader %d is not in isr %v", ErrInvalidReplicaAssignment, leader, isr)
	}
	return nil
}

// SnapshotForm returns the image with ConfigList filled from Configs, sorted, for
// serialisation.
func (im *Image) SnapshotForm() *Image {
	c := im.clone()
	for res, cfg := range im.Configs {
		for name, value := range cfg {
			c.ConfigList = append(c.ConfigList, ConfigEntry{res, name, value})
		}
	}
	sort.Slice(c.ConfigList, func(i, j int) bool {
		a, b := c.ConfigList[i], c.ConfigList[j]
		if a.Resource != b.Resource {
			if a.Resource.Type != b.Resource.Type {
				return a.Resource.Type < b.Resource.Type
			}
			return a.Resource.Name < b.Resource.Name
		}
		return a.Name < b.Name
	})
	return c
}

// FromSnapshotForm rebuilds Configs (and empty maps) after deserialisation.
func (im *Image) FromSnapshotForm() *Image {
	c := im.clone()
	if c.Brokers == nil {
		c.Brokers = map[int32]*Broker{}
	}
	if c.Topics == nil {
		c.Topics = map[string]*Topic{}
	}
	if c.TopicIDs == nil {
		c.TopicIDs = map[Uuid]string{}
	}
	c.Configs = map[ConfigResource]map[string]string{}
	for _, e := range im.ConfigList {
		if c.Configs[e.Resource] == nil {
			c.Configs[e.Resource] = map[string]string{}
		}
		c.Configs[e.Resource][e.Name] = e.Value
	}
	return c
}
