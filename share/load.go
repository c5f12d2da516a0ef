package share

// Load rebuilds a share partition on a new leader from its durable state (Kafka's
// SharePartition.maybeInitialize after ReadShareGroupState): the SPSO is the state's
// start offset, the state batches come back in their states and delivery counts,
// offsets between them come back Available and never delivered, and the end offset is
// the last batch's. A state never initialized (Kafka's start offset -1) is not loaded:
// the caller resolves share.auto.offset.reset and uses NewPartition. Nothing is Acquired after a load: a record acquired on the old
// leader was written Available with its delivery count, and comes back so; one that had
// used up the delivery-count limit is Archived, as if its lock had expired; the returned
// Change holds those archivals (empty when there are none) for the caller to write.
func Load(key Key, cfg Config, st State, leaderEpoch int32) (*Partition, Change) {
	p := NewPartition(key, cfg, st.StartOffset, leaderEpoch)
	p.stateEpoch = st.StateEpoch
	next := st.StartOffset
	for _, b := range st.Batches {
		if b.LastOffset < next {
			continue
		}
		first := max(b.FirstOffset, next)
		if first > next {
			p.runs = append(p.runs, run{first: next, last: first - 1, state: Available})
		}
		r := run{first: first, last: b.LastOffset, state: b.DeliveryState, deliveryCount: max(b.DeliveryCount, 0)}
		if r.state != Acknowledged && r.state != Archived {
			r.state = p.releaseState(r.deliveryCount)
			if r.state == Archived {
				p.mark(r.first, r.last)
			}
		}
		p.runs = append(p.runs, r)
		next = b.LastOffset + 1
	}
	p.startBefore = st.StartOffset
	return p, p.finish()
}
