package broker

// Follower fetching's selector (KIP-392): with replica.selector.class =
// org.apache.kafka.common.replica.RackAwareReplicaSelector, a partition's leader sends
// a consumer that names its rack (client.rack, Fetch v11+) to an in-sync replica in
// that rack (replication/read_replica.go has the rule); the default, none, keeps every
// consumer on the leader, as Kafka.

import (
	"time"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/replication"
)

// readReplicaSelector is the FetchServer's ReadReplica for replica.selector.class: nil
// when no selector is configured.
func (b *Broker) readReplicaSelector() func(string, int32, *replication.Partition, string, int64) int32 {
	if b.cfg.Properties[config.ReplicaSelectorClassProperty] != config.RackAwareReplicaSelector {
		return nil
	}
	return b.selectReadReplica
}

// selectReadReplica answers where a consumer in clientRack should fetch lp from at
// fetchOffset: a follower's broker id, or -1 to read from this leader. Followers on
// fenced or unregistered brokers, or without a rack, are never chosen.
func (b *Broker) selectReadReplica(_ string, _ int32, lp *replication.Partition, clientRack string, fetchOffset int64) int32 {
	leader, followers, ok := lp.ReadReplicaCandidates(fetchOffset, time.Now())
	if !ok {
		return -1
	}
	im := b.Image()
	if br := im.Brokers[leader.BrokerID]; br != nil {
		leader.Rack = br.Rack
	}
	eligible := followers[:0]
	for _, f := range followers {
		br := im.Brokers[f.BrokerID]
		if br == nil || br.Fenced || br.Rack == "" || len(br.Listeners) == 0 {
			continue
		}
		f.Rack = br.Rack
		eligible = append(eligible, f)
	}
	return replication.SelectRackAware(clientRack, leader, eligible)
}
