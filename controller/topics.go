package controller

// Topic creation: validation against the image, Kafka's rack-aware replica placement
// with a random start, and the records, shared by CreateTopics and auto-creation.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"sync"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
)

const (
	// OffsetsTopic holds committed offsets and group metadata (Kafka's name).
	OffsetsTopic = "__consumer_offsets"
	// TransactionStateTopic holds the transaction coordinator's state (Kafka's name).
	TransactionStateTopic = "__transaction_state"
	// ShareGroupStateTopic holds the share coordinator's share-partition state
	// (KIP-932, Kafka's name).
	ShareGroupStateTopic = "__share_group_state"
)

// IsInternalTopic reports whether name is one of Kafka's internal topics, which only
// the brokers create.
func IsInternalTopic(name string) bool {
	return name == OffsetsTopic || name == TransactionStateTopic || name == ShareGroupStateTopic
}

// InternalTopicError refuses a user operation on an internal topic.
func InternalTopicError(op, name string) error {
	return fmt.Errorf("%w: cannot %s internal topic %s", ErrInternalTopic, op, name)
}

// TopicDefaults are the broker properties a topic creation falls back on.
type TopicDefaults struct {
	// NumPartitions is num.partitions, for a spec asking -1 partitions.
	NumPartitions int32
	// ReplicationFactor is default.replication.factor, for a spec asking -1.
	ReplicationFactor int16
}

// TopicSpec is a topic to create, as CreateTopics or auto-creation asks for it.
type TopicSpec struct {
	Name              string
	Partitions        int32     // -1: num.partitions
	ReplicationFactor int16     // -1: default.replication.factor
	Assignment        [][]int32 // explicit replicas per partition, or nil
	Configs           map[string]string
	// Internal allows an internal topic name and its settings (cleanup.policy=compact);
	// only the brokers' own creation of __consumer_offsets and __transaction_state
	// sets it.
	Internal bool
}

// CreatedTopic is a validated topic with its records.
type CreatedTopic struct {
	ID                metadata.Uuid
	Partitions        int32
	ReplicationFactor int16
	Records           []metadata.Record
}

// TopicResult is one spec's outcome: the topic, or why it is refused.
type TopicResult struct {
	Topic *CreatedTopic
	Err   error
}

// collisionIndex maps the colliding form ('.' as '_') of every topic of im to its name
// (the smallest name where several share a form).
func collisionIndex(im *metadata.Image) map[string]string {
	out := make(map[string]string, len(im.Topics))
	for name := range im.Topics {
		form := metadata.CollidingTopicName(name)
		if prev, ok := out[form]; !ok || name < prev {
			out[form] = name
		}
	}
	return out
}

func collisionError(name, existing string) error {
	return fmt.Errorf("%w: topic '%s' collides with existing topic '%s' ('.' and '_' are treated alike)", metadata.ErrInvalidTopic, name, existing)
}

// planTopic validates spec against im and returns the records that create it. Replica
// placement uses Kafka's rack-aware rule (rack-unaware when no broker has a rack) with
// a random start, decided here, before proposing (the records carry the outcome).
// collisions, when not nil, is collisionIndex(im), built once for many topics planned
// on one image.
func (c *Controller) planTopic(im *metadata.Image, spec TopicSpec, collisions map[string]string) (*CreatedTopic, error) {
	if err := metadata.ValidateTopicName(spec.Name); err != nil {
		return nil, err
	}
	if IsInternalTopic(spec.Name) && !spec.Internal {
		return nil, InternalTopicError("create", spec.Name)
	}
	if im.Topic(spec.Name) != nil {
		return nil, fmt.Errorf("%w: topic '%s' already exists", metadata.ErrTopicExists, spec.Name)
	}
	if collisions != nil {
		if existing, ok := collisions[metadata.CollidingTopicName(spec.Name)]; ok && existing != spec.Name {
			return nil, collisionError(spec.Name, existing)
		}
	} else {
		for _, existing := range im.TopicNames() {
			if existing != spec.Name && metadata.CollidingTopicName(existing) == metadata.CollidingTopicName(spec.Name) {
				return nil, collisionError(spec.Name, existing)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Configs)) {
		if spec.Internal && name == "cleanup.policy" {
			continue // compact is refused for users, set for internal topics
		}
		if err := config.ValidateTopicConfig(name, spec.Configs[name]); err != nil {
			return nil, err
		}
		def, _ := config.TopicDef(name)
		if w := config.LimitWarning(def, spec.Configs[name]); w != "" {
			c.log.Warn(w+"; the value is accepted but not acted on", "topic", spec.Name)
		}
	}
	if err := config.ValidateTopicConfigs(spec.Configs, c.cfg.Properties); err != nil {
		return nil, err
	}
	var assignment [][]int32
	if err := CheckRecordsPerUserOp(1 + max(len(spec.Assignment), int(spec.Partitions)) + len(spec.Configs)); err != nil {
		return nil, err // before placing replicas: the bound is there to spare that work
	}
	if spec.Assignment != nil {
		if spec.Partitions != -1 || spec.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: both a replica assignment and partitions or replication factor were given", metadata.ErrInvalidReplicaAssignment)
		}
		assignment = spec.Assignment
		for i, replicas := range assignment {
			if len(replicas) == 0 || len(replicas) != len(assignment[0]) {
				return nil, fmt.Errorf("%w: partition %d has %d replicas", metadata.ErrInvalidReplicaAssignment, i, len(replicas))
			}
			for j, r := range replicas {
				if _, ok := im.Brokers[r]; !ok || slices.Contains(replicas[:j], r) {
					return nil, fmt.Errorf("%w: partition %d: broker %d is unknown or repeated", metadata.ErrInvalidReplicaAssignment, i, r)
				}
			}
		}
	} else {
		partitions, rf := int(spec.Partitions), int(spec.ReplicationFactor)
		if partitions == -1 {
			partitions = int(c.cfg.TopicDefaults.NumPartitions)
		}
		if rf == -1 {
			rf = int(c.cfg.TopicDefaults.ReplicationFactor)
		}
		brokers := im.PlacementBrokerIDs() // unfenced and not cordoned (KIP-1066)
		if partitions <= 0 {
			return nil, fmt.Errorf("%w: number of partitions must be larger than 0", metadata.ErrInvalidPartitions)
		}
		if partitions > MaxPartitionsPerRequest {
			return nil, TooManyPartitions(int64(partitions))
		}
		if err := im.PlacementShortfall(rf); err != nil {
			return nil, err
		}
		n := max(len(brokers), 1)
		var err error
		assignment, err = metadata.AssignReplicasRackAware(brokers, im.BrokerRacks(), partitions, rf, mrand.IntN(n), mrand.IntN(n))
		if err != nil {
			return nil, err
		}
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	plan := &CreatedTopic{ID: metadata.UuidFromBytes(raw), Partitions: int32(len(assignment)), ReplicationFactor: int16(len(assignment[0]))}
	plan.Records = append(plan.Records, metadata.TopicRecord{Name: spec.Name, TopicID: plan.ID})
	for i, replicas := range assignment {
		isr := slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { br := im.Brokers[r]; return br == nil || br.Fenced })
		leader := int32(-1)
		if len(isr) > 0 {
			leader = isr[0]
		} else {
			isr = []int32{replicas[0]}
		}
		plan.Records = append(plan.Records, metadata.PartitionRecord{TopicID: plan.ID, PartitionID: int32(i), Replicas: replicas, ISR: isr, Leader: leader})
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Configs)) {
		v := spec.Configs[name]
		plan.Records = append(plan.Records, metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: spec.Name, Name: name, Value: &v})
	}
	if err := CheckRecordsPerUserOp(len(plan.Records)); err != nil {
		return nil, err
	}
	return plan, nil
}

// ErrDuplicateTopic refuses a topic that one request names more than once.
var ErrDuplicateTopic = errors.New("the topic is listed more than once")

// checkCreateTopicsBounds applies limits.go's bounds to a whole CreateTopics: the
// topics it names and the partitions it would create (an explicit assignment counts
// its entries, -1 counts num.partitions).
func (c *Controller) checkCreateTopicsBounds(specs []TopicSpec) error {
	if len(specs) > MaxResourcesPerRequest {
		return TooManyResources(len(specs))
	}
	var total int64
	for _, s := range specs {
		total += int64(c.partitionsOf(s))
	}
	if total > MaxPartitionsPerRequest {
		return TooManyPartitions(total)
	}
	return nil
}

// partitionsOf is how many partitions spec asks for (0 for an invalid count).
func (c *Controller) partitionsOf(s TopicSpec) int {
	switch {
	case len(s.Assignment) > 0:
		return len(s.Assignment)
	case s.Partitions == -1:
		return int(c.cfg.TopicDefaults.NumPartitions)
	case s.Partitions > 0:
		return int(s.Partitions)
	}
	return 0
}

// CreateTopics decides one CreateTopics request: each spec's outcome, in order, and
// the offset of the last entry committed (0 for none). A request past the bounds
// (checkCreateTopicsBounds) is refused whole with that error before anything is
// planned, as Kafka refuses it. A name listed twice is refused (ErrDuplicateTopic);
// every other topic is validated on its own (a bad one does not stop the others).
// validateOnly plans against the current image and commits nothing.
func (c *Controller) CreateTopics(ctx context.Context, specs []TopicSpec, validateOnly bool) ([]TopicResult, uint64, error) {
	if err := c.checkCreateTopicsBounds(specs); err != nil {
		return nil, 0, err
	}
	seen := map[string]int{}
	for _, s := range specs {
		seen[s.Name]++
	}
	results := make([]TopicResult, len(specs))
	var kept []TopicSpec
	var index []int // specs index of each kept spec
	for i, s := range specs {
		if seen[s.Name] > 1 {
			results[i].Err = ErrDuplicateTopic
			continue
		}
		kept = append(kept, s)
		index = append(index, i)
	}
	var out []TopicResult
	var committed uint64
	if validateOnly {
		im := c.cfg.Image()
		out = make([]TopicResult, len(kept))
		for j, s := range kept {
			out[j].Topic, out[j].Err = c.planTopic(im, s, nil)
		}
	} else if len(kept) > 0 {
		out, committed = c.createTopicsBatched(ctx, kept)
	}
	for j, r := range out {
		results[index[j]] = r
	}
	return results, committed, nil
}

// createTopicsBatched plans and commits specs in as few Raft entries as
// MaxRecordsPerUserOp allows (Kafka writes one request's topics as one batch): one
// entry per topic made every topic pay a copy of the image's topic maps, quadratic in
// the number of topics (10,000 small topics took seconds in the state machine alone).
// Each topic is planned on its own and fails on its own; the topics of one entry are
// committed together. It returns each topic's outcome and the offset of the last entry
// committed (0 for none).
func (c *Controller) createTopicsBatched(ctx context.Context, specs []TopicSpec) ([]TopicResult, uint64) {
	results := make([]TopicResult, len(specs))
	var committed uint64
	commit := func(chunk []int) {
		// The plan runs on the controller goroutine, possibly after ctx ended here: it
		// hands its outcome over under mu.
		var mu sync.Mutex
		var outcome []TopicResult
		im, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
			var records []metadata.Record
			decided := make([]TopicResult, len(chunk))
			planned := map[string]string{} // colliding form -> name, of this entry's topics
			collisions := collisionIndex(im)
			for j, i := range chunk {
				r := &decided[j]
				r.Topic, r.Err = c.planTopic(im, specs[i], collisions)
				if r.Err != nil {
					continue
				}
				form := metadata.CollidingTopicName(specs[i].Name)
				if other, ok := planned[form]; ok {
					r.Topic, r.Err = nil, collisionError(specs[i].Name, other)
					continue
				}
				planned[form] = specs[i].Name
				records = append(records, r.Topic.Records...)
			}
			mu.Lock()
			outcome = decided
			mu.Unlock()
			return records, nil
		})
		mu.Lock()
		for j, i := range chunk {
			switch {
			case outcome == nil:
				results[i] = TopicResult{Err: err}
			case err != nil && outcome[j].Err == nil:
				results[i] = TopicResult{Err: err}
			default:
				results[i] = outcome[j]
			}
		}
		mu.Unlock()
		if err == nil && im != nil {
			committed = max(committed, im.Offset)
		}
	}
	var chunk []int
	size := 0
	for i, spec := range specs {
		n := 1 + len(spec.Configs) + c.partitionsOf(spec)
		if len(chunk) > 0 && size+n > MaxRecordsPerUserOp {
			commit(chunk)
			chunk, size = nil, 0
		}
		chunk, size = append(chunk, i), size+n
	}
	if len(chunk) > 0 {
		commit(chunk)
	}
	return results, committed
}
