package broker

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
)

// topicSpec is a topic to create, as CreateTopics or auto-creation asks for it.
type topicSpec struct {
	name              string
	partitions        int32     // -1: num.partitions
	replicationFactor int16     // -1: default.replication.factor
	assignment        [][]int32 // explicit replicas per partition, or nil
	configs           map[string]string
	// internal allows an internal topic name and its settings (cleanup.policy=compact);
	// only the broker's own creation of __consumer_offsets sets it.
	internal bool
	// collisions, when set, is the image's topic names by colliding form
	// (collisionIndex), built once for many topics planned on one image.
	collisions map[string]string
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

// plannedTopic is a validated topic with its records.
type plannedTopic struct {
	id                metadata.Uuid
	partitions        int32
	replicationFactor int16
	records           []metadata.Record
}

// planTopic validates spec against im and returns the records that create it. Replica
// placement uses Kafka's rack-unaware rule with a random start, decided here, before
// proposing (the records carry the outcome).
func (b *Broker) planTopic(im *metadata.Image, spec topicSpec) (*plannedTopic, error) {
	if err := metadata.ValidateTopicName(spec.name); err != nil {
		return nil, err
	}
	if isInternalTopic(spec.name) && !spec.internal {
		return nil, internalTopicError("create", spec.name)
	}
	if im.Topic(spec.name) != nil {
		return nil, fmt.Errorf("%w: topic '%s' already exists", metadata.ErrTopicExists, spec.name)
	}
	if spec.collisions != nil {
		if existing, ok := spec.collisions[metadata.CollidingTopicName(spec.name)]; ok && existing != spec.name {
			return nil, fmt.Errorf("%w: topic '%s' collides with existing topic '%s' ('.' and '_' are treated alike)", metadata.ErrInvalidTopic, spec.name, existing)
		}
	} else {
		for _, existing := range im.TopicNames() {
			if existing != spec.name && metadata.CollidingTopicName(existing) == metadata.CollidingTopicName(spec.name) {
				return nil, fmt.Errorf("%w: topic '%s' collides with existing topic '%s' ('.' and '_' are treated alike)", metadata.ErrInvalidTopic, spec.name, existing)
			}
		}
	}
	for _, name := range sortedKeys(spec.configs) {
		if spec.internal && name == "cleanup.policy" {
			continue // compact is refused for users, set for internal topics
		}
		if err := config.ValidateTopicConfig(name, spec.configs[name]); err != nil {
			return nil, err
		}
		def, _ := config.TopicDef(name)
		if w := config.LimitWarning(def, spec.configs[name]); w != "" {
			b.logger.Warn(w+"; the value is accepted but not acted on", "topic", spec.name)
		}
	}
	var assignment [][]int32
	if err := checkRecordsPerUserOp(1 + max(len(spec.assignment), int(spec.partitions)) + len(spec.configs)); err != nil {
		return nil, err // before placing replicas: the bound is there to spare that work
	}
	if spec.assignment != nil {
		if spec.partitions != -1 || spec.replicationFactor != -1 {
			return nil, fmt.Errorf("%w: both a replica assignment and partitions or replication factor were given", metadata.ErrInvalidReplicaAssignment)
		}
		assignment = spec.assignment
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
		partitions, rf := int(spec.partitions), int(spec.replicationFactor)
		if partitions == -1 {
			partitions = int(b.cfg.int64Value("num.partitions"))
		}
		if rf == -1 {
			rf = int(b.cfg.int64Value("default.replication.factor"))
		}
		brokers := im.PlacementBrokerIDs() // unfenced and not cordoned (KIP-1066)
		if partitions <= 0 {
			return nil, fmt.Errorf("%w: number of partitions must be larger than 0", metadata.ErrInvalidPartitions)
		}
		if partitions > maxPartitionsPerRequest {
			return nil, tooManyPartitions(int64(partitions))
		}
		if err := im.PlacementShortfall(rf); err != nil {
			return nil, err
		}
		n := max(len(brokers), 1)
		var err error
		assignment, err = metadata.AssignReplicas(brokers, partitions, rf, mrand.IntN(n), mrand.IntN(n))
		if err != nil {
			return nil, err
		}
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	plan := &plannedTopic{id: metadata.UuidFromBytes(raw), partitions: int32(len(assignment)), replicationFactor: int16(len(assignment[0]))}
	plan.records = append(plan.records, metadata.TopicRecord{Name: spec.name, TopicID: plan.id})
	for i, replicas := range assignment {
		isr := slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { br := im.Brokers[r]; return br == nil || br.Fenced })
		leader := int32(-1)
		if len(isr) > 0 {
			leader = isr[0]
		} else {
			isr = []int32{replicas[0]}
		}
		plan.records = append(plan.records, metadata.PartitionRecord{TopicID: plan.id, PartitionID: int32(i), Replicas: replicas, ISR: isr, Leader: leader})
	}
	for _, name := range sortedKeys(spec.configs) {
		v := spec.configs[name]
		plan.records = append(plan.records, metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: spec.name, Name: name, Value: &v})
	}
	if err := checkRecordsPerUserOp(len(plan.records)); err != nil {
		return nil, err
	}
	return plan, nil
}

// createTopic plans and commits one topic on the controller.
func (b *Broker) createTopic(ctx context.Context, spec topicSpec) (*plannedTopic, *metadata.Image, error) {
	var plan *plannedTopic
	im, err := b.ctrl.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		var err error
		if plan, err = b.planTopic(im, spec); err != nil {
			return nil, err
		}
		return plan.records, nil
	})
	return plan, im, err
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// createTopicsBatched plans and commits the topics of one CreateTopics on the
// controller in as few Raft entries as maxRecordsPerUserOp allows (Kafka writes one
// request's topics as one batch): one entry per topic made every topic pay a copy of
// the image's topic maps, quadratic in the number of topics (10,000 small topics took
// seconds in the state machine alone). Each topic is planned on its own and fails on
// its own; the topics of one entry are committed together. It returns each topic's plan
// or error and the offset of the last entry committed (0 for none).
func (b *Broker) createTopicsBatched(ctx context.Context, specs []topicSpec) ([]*plannedTopic, []error, uint64) {
	plans := make([]*plannedTopic, len(specs))
	errs := make([]error, len(specs))
	var committed uint64
	commit := func(chunk []int) {
		im, err := b.ctrl.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
			var records []metadata.Record
			planned := map[string]string{} // colliding form -> name, of this entry's topics
			collisions := collisionIndex(im)
			for _, i := range chunk {
				spec := specs[i]
				spec.collisions = collisions
				plans[i], errs[i] = b.planTopic(im, spec)
				if errs[i] != nil {
					continue
				}
				form := metadata.CollidingTopicName(specs[i].name)
				if other, ok := planned[form]; ok {
					plans[i], errs[i] = nil, fmt.Errorf("%w: topic '%s' collides with existing topic '%s' ('.' and '_' are treated alike)",
						metadata.ErrInvalidTopic, specs[i].name, other)
					continue
				}
				planned[form] = specs[i].name
				records = append(records, plans[i].records...)
			}
			return records, nil
		})
		for _, i := range chunk {
			if err != nil && errs[i] == nil {
				plans[i], errs[i] = nil, err
			}
		}
		if err == nil && im != nil {
			committed = max(committed, im.Offset)
		}
	}
	var chunk []int
	size := 0
	for i, spec := range specs {
		n := 1 + len(spec.configs) + len(spec.assignment)
		switch {
		case len(spec.assignment) > 0:
		case spec.partitions == -1:
			n += int(b.cfg.int64Value("num.partitions"))
		case spec.partitions > 0:
			n += int(spec.partitions)
		}
		if len(chunk) > 0 && size+n > maxRecordsPerUserOp {
			commit(chunk)
			chunk, size = nil, 0
		}
		chunk, size = append(chunk, i), size+n
	}
	if len(chunk) > 0 {
		commit(chunk)
	}
	return plans, errs, committed
}
