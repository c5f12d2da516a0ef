package controller

// AlterPartitionReassignments' decision: per partition, start (or replace) a
// reassignment or cancel one, all in one entry; duties.go completes them.

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/metadata"
)

// Reassignment is one partition's requested replicas; nil Replicas cancels the
// partition's reassignment.
type Reassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// AlterPartitionReassignments plans every partition's reassignment or cancellation
// against the image its earlier siblings leave (so that a request naming one partition
// twice stays consistent) and commits the valid ones in one entry. It returns each
// partition's outcome, in order (a failed commit is every partition's), or refuses the
// request whole when it names more than MaxResourcesPerRequest partitions.
// allowRFChange false refuses a replica count other than the partition's.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []Reassignment, allowRFChange bool) ([]error, error) {
	if len(reqs) > MaxResourcesPerRequest {
		return nil, TooManyResources(len(reqs))
	}
	var results []error
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		var records []metadata.Record
		results = make([]error, len(reqs))
		for i, r := range reqs {
			recs, err := planReassignment(im, r, allowRFChange)
			if err == nil && len(recs) > 0 {
				var next *metadata.Image
				if next, err = im.Apply(im.Offset, recs); err == nil {
					im = next
					records = append(records, recs...)
				}
			}
			results[i] = err
		}
		return records, nil
	})
	if err == nil && results != nil {
		return results, nil
	}
	// Not planned, or not committed (the plan may still be running when ctx ended, so
	// its results are not read): every partition shares the outcome.
	shared := make([]error, len(reqs))
	for i := range shared {
		shared[i] = err
	}
	return shared, nil
}

// planReassignment plans one partition's reassignment or, with nil replicas, its
// cancellation.
func planReassignment(im *metadata.Image, r Reassignment, allowRFChange bool) ([]metadata.Record, error) {
	t := im.Topic(r.Topic)
	if t == nil {
		return nil, fmt.Errorf("%w: %s", metadata.ErrUnknownTopic, r.Topic)
	}
	if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return nil, fmt.Errorf("%w: %s-%d", metadata.ErrUnknownPartition, r.Topic, r.Partition)
	}
	p := t.Partitions[r.Partition]
	if r.Replicas == nil {
		return metadata.CancelReassignmentRecords(im, t, p)
	}
	if !allowRFChange && len(r.Replicas) != len(p.OriginalReplicas()) {
		return nil, fmt.Errorf("%w: the reassignment of %s-%d changes the replication factor from %d to %d",
			metadata.ErrInvalidReplicationFactor, r.Topic, r.Partition, len(p.OriginalReplicas()), len(r.Replicas))
	}
	return metadata.StartReassignmentRecords(im, t, p, r.Replicas)
}
