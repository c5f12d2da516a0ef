package metadata

import (
	"errors"
	"fmt"
	"slices"
)

// Reassignment errors, mapped to Kafka codes in broker/errors.go.
var (
	// ErrNoReassignmentInProgress means a cancellation named a partition that is not
	// being reassigned (NO_REASSIGNMENT_IN_PROGRESS).
	ErrNoReassignmentInProgress = errors.New("metadata: no reassignment in progress")
)

// Reassignment is the state of a partition's reassignment, all read from the image:
// Kafka's OAR (original replicas) and RAR (target replicas). Replicas = RAR followed by
// the members of OAR not in RAR while it runs.
type Reassignment struct {
	Replicas []int32 // the current replica set, OAR ∪ RAR
	Adding   []int32 // RAR − OAR
	Removing []int32 // OAR − RAR
}

// Reassigning reports whether the partition is being reassigned.
func (p *Partition) Reassigning() bool { return len(p.Adding) > 0 || len(p.Removing) > 0 }

// OriginalReplicas returns OAR: the replicas without those being added.
func (p *Partition) OriginalReplicas() []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.Adding, r) })
}

// TargetReplicas returns RAR: the replicas without those being removed.
func (p *Partition) TargetReplicas() []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.Removing, r) })
}

// ValidateReassignmentTarget checks a target replica list: non-empty, unique,
// non-negative broker ids that are all registered.
func ValidateReassignmentTarget(im *Image, target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: the target replica list is empty", ErrInvalidReplicaAssignment)
	}
	seen := map[int32]bool{}
	for _, r := range target {
		if r < 0 || seen[r] {
			return fmt.Errorf("%w: the target replica list %v has a duplicate or negative broker id", ErrInvalidReplicaAssignment, target)
		}
		seen[r] = true
		if _, ok := im.Brokers[r]; !ok {
			return fmt.Errorf("%w: the target replica list %v names broker %d, which is not registered", ErrInvalidReplicaAssignment, target, r)
		}
	}
	return nil
}

// StartReassignmentRecords plans the move of a partition to target (RAR), Kafka's
// OAR+RAR procedure: one PartitionChange with replicas = RAR + (OAR − RAR), adding =
// RAR − OAR, removing = OAR − RAR. OAR is the partition's original replicas, so a new
// target replaces a running reassignment. When nothing needs to be added the move
// completes in the same record (CompleteReassignment). A target equal to OAR cancels a
// running reassignment, and is nothing to do otherwise.
func StartReassignmentRecords(im *Image, t *Topic, p *Partition, target []int32) ([]Record, error) {
	if err := ValidateReassignmentTarget(im, target); err != nil {
		return nil, err
	}
	oar := p.OriginalReplicas()
	if slices.Equal(oar, target) {
		if !p.Reassigning() {
			return nil, nil
		}
		return CancelReassignmentRecords(im, t, p)
	}
	replicas := slices.Clone(target)
	var adding, removing []int32
	for _, r := range target {
		if !slices.Contains(oar, r) {
			adding = append(adding, r)
		}
	}
	for _, r := range oar {
		if !slices.Contains(target, r) {
			replicas = append(replicas, r)
			removing = append(removing, r)
		}
	}
	// The ISR keeps only members of the new replica set (a replica dropped by a
	// replaced reassignment leaves it).
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(replicas, r) })
	next := *p
	next.Replicas, next.Adding, next.Removing = replicas, adding, removing
	change := PartitionChangeRecord{TopicID: t.ID, PartitionID: p.ID, Replicas: replicas, Adding: adding, Removing: removing}
	var records []Record
	if p.Reassigning() {
		// A new target replaces the running one: clear its adding and removing lists
		// first (an empty list cannot be carried by the record).
		records = append(records, PartitionChangeRecord{TopicID: t.ID, PartitionID: p.ID, ClearReassignment: true})
	}
	if len(isr) == 0 {
		return nil, fmt.Errorf("%w: no in-sync replica of %s-%d would remain", ErrInvalidReplicaAssignment, t.Name, p.ID)
	}
	if !slices.Equal(isr, p.ISR) {
		change.ISR, next.ISR = isr, isr
		if !slices.Contains(isr, p.Leader) {
			leader, _ := ElectLeader(&next, isr, func(r int32) bool { return im.Acceptable(r) }, false)
			change.Leader, next.Leader = &leader, leader
		}
	}
	records = append(records, change)
	if done := completeRecord(im, t, &next); done != nil {
		records = append(records, *done)
	}
	return records, nil
}

// CancelReassignmentRecords plans the cancellation of a running reassignment: back to
// OAR (replicas − adding), the adding replicas out of the ISR, a new leader from OAR if
// the leader was an adding replica. With no reassignment running it fails with
// ErrNoReassignmentInProgress.
func CancelReassignmentRecords(im *Image, t *Topic, p *Partition) ([]Record, error) {
	if !p.Reassigning() {
		return nil, fmt.Errorf("%w: %s-%d", ErrNoReassignmentInProgress, t.Name, p.ID)
	}
	oar := p.OriginalReplicas()
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(oar, r) })
	change := PartitionChangeRecord{TopicID: t.ID, PartitionID: p.ID, Replicas: oar, ClearReassignment: true}
	if len(isr) == 0 {
		// Only adding replicas are in sync: refuse rather than lose the data.
		return nil, fmt.Errorf("%w: no original replica of %s-%d is in sync; cannot cancel", ErrInvalidReplicaAssignment, t.Name, p.ID)
	}
	if !slices.Equal(isr, p.ISR) {
		change.ISR = isr
	}
	if !slices.Contains(isr, p.Leader) {
		next := *p
		next.Replicas = oar
		leader, _ := ElectLeader(&next, isr, func(r int32) bool { return im.Acceptable(r) }, false)
		change.Leader = &leader
	}
	return []Record{change}, nil
}

// CompleteReassignmentRecords plans the last step of every reassignment that is ready:
// every adding replica is in the ISR. The PartitionChange sets replicas = RAR, ISR =
// ISR ∩ RAR and, when the leader is being removed, elects a leader from RAR (the first
// in target order that is in the ISR and acceptable); a reassignment never elects
// outside the ISR.
func CompleteReassignmentRecords(im *Image) []Record {
	var records []Record
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		for _, p := range t.Partitions {
			if !p.Reassigning() {
				continue
			}
			if r := completeRecord(im, t, p); r != nil {
				records = append(records, *r)
			}
		}
	}
	return records
}

// completeRecord returns the record that completes p's reassignment, or nil when it is
// not ready.
func completeRecord(im *Image, t *Topic, p *Partition) *PartitionChangeRecord {
	for _, r := range p.Adding {
		if !slices.Contains(p.ISR, r) {
			return nil
		}
	}
	rar := p.TargetReplicas()
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(rar, r) })
	if len(isr) == 0 {
		return nil
	}
	change := PartitionChangeRecord{TopicID: t.ID, PartitionID: p.ID, Replicas: rar, ClearReassignment: true}
	if !slices.Equal(isr, p.ISR) {
		change.ISR = isr
	}
	if !slices.Contains(rar, p.Leader) {
		next := *p
		next.Replicas = rar
		next.Leader = -1
		leader, _ := ElectLeader(&next, isr, func(r int32) bool { return im.Acceptable(r) }, false)
		if leader < 0 {
			return nil // wait for a target replica that can lead
		}
		change.Leader = &leader
	}
	return &change
}
