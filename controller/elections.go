package controller

// ElectLeaders' decision: preferred or unclean elections, planned against the current
// image in entries of at most MaxRecordsPerUserOp changes.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/petrel-broker/petrel/metadata"
)

// ElectionType is an ElectLeaders election type, with Kafka's numbers.
type ElectionType int8

// Kafka's election types.
const (
	// ElectPreferred moves a partition to its first replica if that one is in the ISR
	// and unfenced.
	ElectPreferred ElectionType = 0
	// ElectUnclean elects a leader for a partition that has none, from the ISR if a
	// member is live, else any live replica.
	ElectUnclean ElectionType = 1
)

// ElectionResult is one partition's election outcome (Err nil: elected).
type ElectionResult struct {
	Partition metadata.TopicPartitionID
	Err       error
}

// ElectLeaders runs elections of type typ for partitions, or for every partition of the
// image when partitions is nil (then, as in Kafka, partitions that need no election are
// left out of the result). Results are in the order of the partitions.
func (c *Controller) ElectLeaders(ctx context.Context, partitions []metadata.TopicPartitionID, typ ElectionType) []ElectionResult {
	all := partitions == nil
	if all {
		im := c.cfg.Image()
		for _, name := range im.TopicNames() {
			for _, p := range im.Topics[name].Partitions {
				partitions = append(partitions, metadata.TopicPartitionID{Topic: name, Partition: p.ID})
			}
		}
	}
	outcomes := c.runElections(ctx, partitions, typ)
	results := make([]ElectionResult, 0, len(partitions))
	for _, tp := range partitions {
		err := outcomes[tp]
		if all && errors.Is(err, metadata.ErrElectionNotNeeded) {
			continue
		}
		results = append(results, ElectionResult{Partition: tp, Err: err})
	}
	return results
}

// runElections elects leaders for partitions, in entries of at most
// MaxRecordsPerUserOp changes, and returns each partition's outcome (nil: elected).
func (c *Controller) runElections(ctx context.Context, partitions []metadata.TopicPartitionID, typ ElectionType) map[metadata.TopicPartitionID]error {
	results := make(map[metadata.TopicPartitionID]error, len(partitions))
	for start := 0; start < len(partitions); start += MaxRecordsPerUserOp {
		chunk := partitions[start:min(start+MaxRecordsPerUserOp, len(partitions))]
		// The plan runs on the controller goroutine, possibly after ctx ended here: it
		// hands its outcome over under mu.
		var mu sync.Mutex
		var before *metadata.Image
		var planned []metadata.Record
		outcome := map[metadata.TopicPartitionID]error{}
		_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
			var records []metadata.Record
			decided := map[metadata.TopicPartitionID]error{}
			for _, tp := range chunk {
				change, err := planElection(im, tp, typ)
				decided[tp] = err
				if err == nil {
					records = append(records, change)
				}
			}
			mu.Lock()
			before, planned, outcome = im, records, decided
			mu.Unlock()
			return records, nil
		})
		mu.Lock()
		for _, tp := range chunk {
			res, decided := outcome[tp]
			switch {
			case !decided || (res == nil && err != nil):
				results[tp] = err
			default:
				results[tp] = res
			}
		}
		if err == nil && before != nil {
			c.LogUncleanElections(before, planned)
		}
		mu.Unlock()
	}
	return results
}

// planElection decides one partition's election against im.
func planElection(im *metadata.Image, tp metadata.TopicPartitionID, typ ElectionType) (metadata.PartitionChangeRecord, error) {
	t := im.Topic(tp.Topic)
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return metadata.PartitionChangeRecord{}, fmt.Errorf("%w: %s-%d", metadata.ErrUnknownPartition, tp.Topic, tp.Partition)
	}
	p := t.Partitions[tp.Partition]
	if typ == ElectUnclean {
		return metadata.UncleanLeaderChange(im, t, p)
	}
	return metadata.PreferredLeaderChange(im, t, p)
}
