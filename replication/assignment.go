package replication

import "slices"

// UpdateReplicas sets a leader's replica set from committed metadata (a reassignment
// adds or removes replicas without a leader change). A new replica may fetch and join
// the ISR once caught up; a removed one's progress is forgotten and its fetches refused.
func (p *Partition) UpdateReplicas(replicas []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Equal(p.replicas, replicas) {
		return
	}
	p.replicas = slices.Clone(replicas)
	for id := range p.followers {
		if !slices.Contains(replicas, id) {
			delete(p.followers, id)
		}
	}
}

// InSync reports whether broker id is in this leader's committed ISR.
func (p *Partition) InSync(id int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.isr, id)
}
