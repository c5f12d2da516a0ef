package replication

// Follower fetching's choice at the leader (KIP-392): a consumer's fetch that carries
// its rack (client.rack, Fetch v11+) may be answered with no records and
// PreferredReadReplica, the replica the consumer should fetch from instead. The leader
// offers the replicas that can serve the fetch offset now (ReadReplicaCandidates: in
// the ISR, as KAFKA-14372 requires, with the offset between their log start and log
// end), and the broker's selector (SelectRackAware, Kafka's RackAwareReplicaSelector)
// picks one by rack. The follower then serves the consumer up to its own high
// watermark (fetch_read.go); the consumer comes back to the leader on an error from it,
// or when its client re-checks (Java: metadata.max.age.ms; franz-go:
// RecheckPreferredReplicaInterval), and the leader chooses again from the replicas
// in sync at that moment.

import "time"

// ReplicaView is one replica as a replica selector sees it.
type ReplicaView struct {
	// BrokerID is the replica's broker.
	BrokerID int32
	// Rack is its broker's broker.rack ("" when none).
	Rack string
	// LogEndOffset is its log end offset (a follower's, as of its last fetch).
	LogEndOffset int64
	// SinceCaughtUp is how long since it last had everything the leader had (0 for
	// the leader).
	SinceCaughtUp time.Duration
}

// ReadReplicaCandidates returns, when this replica leads, the leader's own view and
// the in-sync followers that can serve a consumer at fetchOffset (their log start at
// or below it, their log end at or above it), with their brokers' racks left empty;
// ok is false when it does not lead.
func (p *Partition) ReadReplicaCandidates(fetchOffset int64, now time.Time) (leader ReplicaView, followers []ReplicaView, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != Leader {
		return ReplicaView{}, nil, false
	}
	leader = ReplicaView{BrokerID: p.opts.BrokerID, LogEndOffset: p.log.LogEndOffset()}
	for _, id := range p.isr {
		f := p.followers[id]
		if id == p.opts.BrokerID || f == nil || f.logEndOffset < fetchOffset || f.logStartOffset > fetchOffset {
			continue
		}
		followers = append(followers, ReplicaView{BrokerID: id, LogEndOffset: f.logEndOffset, SinceCaughtUp: now.Sub(f.caughtUpAt())})
	}
	return leader, followers, true
}

// SelectRackAware is Kafka's RackAwareReplicaSelector: with no client rack, or with
// the leader in the client's rack, the leader (-1: no redirection); otherwise, of the
// followers in the client's rack, the one with the highest log end offset (then the
// most recently caught up, then the lowest broker id); the leader when none is there.
// It returns the broker id to redirect the consumer to, or -1 to serve it here.
func SelectRackAware(clientRack string, leader ReplicaView, followers []ReplicaView) int32 {
	if clientRack == "" || leader.Rack == clientRack {
		return -1
	}
	best := -1
	for i, f := range followers {
		if f.Rack != clientRack {
			continue
		}
		if best < 0 || better(f, followers[best]) {
			best = i
		}
	}
	if best < 0 {
		return -1
	}
	return followers[best].BrokerID
}

func better(a, b ReplicaView) bool {
	if a.LogEndOffset != b.LogEndOffset {
		return a.LogEndOffset > b.LogEndOffset
	}
	if a.SinceCaughtUp != b.SinceCaughtUp {
		return a.SinceCaughtUp < b.SinceCaughtUp
	}
	return a.BrokerID < b.BrokerID
}
