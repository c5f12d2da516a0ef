package replication

// A follower's fetch names topics by id and carries its broker epoch (Fetch v15, KIP-516
// and KIP-903) when the broker gives the fetchers its epoch (FetcherConfig.BrokerEpoch):
// the leader then names, for this replica, the broker epoch of the incarnation that
// fetched in the ISR changes it asks for, and the controller refuses the replica if that
// incarnation is gone. Each replica is fetched, and forgotten, under its own topic's id
// (Options.TopicID), so a replica of a deleted topic never is under the id of a topic
// re-created under its name. The session (fetch_session.go) keeps each partition's id
// beside its name and names the answers' topics back from their ids; a partition sent
// under a new id (the topic was re-created) renews the session once the fetch in
// flight is answered, so that the leader's session drops the old id's partitions.
// Without a broker epoch the fetch is v12, by name.

import "github.com/twmb/franz-go/pkg/kmsg"

// fetchVersion is the Fetch version the fetchers send.
func (fs *Fetchers) fetchVersion() int16 {
	if fs.cfg.BrokerEpoch != nil {
		return 15
	}
	return 12
}

// stampReplicaState fills a v15+ request's replica state: this broker's id and its
// current broker epoch.
func (fs *Fetchers) stampReplicaState(req *kmsg.FetchRequest) {
	if req.Version >= 15 {
		req.ReplicaState.ID, req.ReplicaState.Epoch = fs.cfg.BrokerID, fs.cfg.BrokerEpoch()
	}
}
