package replication

// A follower's fetch names topics by id and carries its broker epoch (Fetch v15, KIP-516
// and KIP-903) when the broker gives the fetchers its epoch (FetcherConfig.BrokerEpoch):
// the leader then names, for this replica, the broker epoch of the incarnation that
// fetched in the ISR changes it asks for, and the controller refuses the replica if that
// incarnation is gone. Each replica is fetched under its own topic's id
// (Options.TopicID), so a replica of a deleted topic is never fetched, nor forgotten,
// under the id of a topic re-created under its name. The session (fetch_session.go)
// and the rounds keep topics by name; the ids go into a request as it leaves and the
// names back into its answer. A name fetched under a new id (the topic was re-created)
// renews the session once the fetch in flight is answered: the next fetch is full, so
// the leader's session drops the old id's partitions, whose answers are ignored
// meanwhile. Without a broker epoch the fetch is v12, by name.

import "github.com/twmb/franz-go/pkg/kmsg"

// fetchVersion is the Fetch version the fetchers send.
func (fs *Fetchers) fetchVersion() int16 {
	if fs.cfg.BrokerEpoch != nil {
		return 15
	}
	return 12
}

// nameTopicsByID completes a v13+ request whose topics carry their replicas' ids: the
// replica state (v15) with this broker's current epoch, the id of each forgotten topic
// the session's bookkeeping names only (as its name was last fetched), and the maps
// between names and ids the answer and the next requests use. A full fetch starts them
// afresh: every topic of the session is in it.
func (f *fetcher) nameTopicsByID(req *kmsg.FetchRequest) {
	if req.Version < 13 {
		return
	}
	if f.topicNames == nil || req.SessionEpoch <= 0 {
		f.topicNames, f.sentIDs = map[[16]byte]string{}, map[string][16]byte{}
	}
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.fs.cfg.BrokerID, f.fs.cfg.BrokerEpoch()
	for i := range req.ForgottenTopics {
		if t := &req.ForgottenTopics[i]; t.TopicID == [16]byte{} {
			t.TopicID = f.sentIDs[t.Topic]
		}
	}
	for _, t := range req.Topics {
		if prev, ok := f.sentIDs[t.Topic]; ok && prev != t.TopicID {
			delete(f.topicNames, prev)
			f.renewSession = true
		}
		f.sentIDs[t.Topic], f.topicNames[t.TopicID] = t.TopicID, t.Topic
	}
}

// nameTopicsOf sets the name of each topic of a v13+ answer from its id, as the
// session's requests last named it; a topic of another id keeps the empty name, which
// no followed replica has, and is ignored.
func (f *fetcher) nameTopicsOf(resp *kmsg.FetchResponse) {
	if resp.Version < 13 {
		return
	}
	for i := range resp.Topics {
		resp.Topics[i].Topic = f.topicNames[resp.Topics[i].TopicID]
	}
}
