package replication

// A follower's fetch names topics by id and carries its broker epoch (Fetch v15, KIP-516
// and KIP-903) when the broker gives the fetchers both (FetcherConfig.TopicID and
// BrokerEpoch): the leader then names, for this replica, the broker epoch of the
// incarnation that fetched in the ISR changes it asks for, and the controller refuses
// the replica if that incarnation is gone. The session (fetch_session.go) and the
// rounds keep topics by name; the names are turned into ids as a request leaves and
// back as its answer arrives. Without both, the fetch is v12, by name.

import "github.com/twmb/franz-go/pkg/kmsg"

// fetchVersion is the Fetch version the fetchers send.
func (fs *Fetchers) fetchVersion() int16 {
	if fs.cfg.TopicID != nil && fs.cfg.BrokerEpoch != nil {
		return 15
	}
	return 12
}

// nameTopicsByID fills req's (v13+) topic ids from its topic names, and the replica
// state (v15) with this broker's current epoch, and remembers each id's name for the
// answer. A full fetch starts the memory afresh: every topic of the session is in it.
func (f *fetcher) nameTopicsByID(req *kmsg.FetchRequest) {
	if req.Version < 13 {
		return
	}
	if f.topicNames == nil || req.SessionEpoch <= 0 {
		f.topicNames = map[[16]byte]string{}
	}
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.fs.cfg.BrokerID, f.fs.cfg.BrokerEpoch()
	for i := range req.Topics {
		t := &req.Topics[i]
		t.TopicID = f.fs.cfg.TopicID(t.Topic)
		f.topicNames[t.TopicID] = t.Topic
	}
	for i := range req.ForgottenTopics {
		t := &req.ForgottenTopics[i]
		t.TopicID = f.fs.cfg.TopicID(t.Topic)
	}
}

// nameTopicsOf sets the name of each topic of a v13+ answer from its id, as the
// requests of the session named it; a topic whose id no request named keeps the empty
// name, which no followed partition has.
func (f *fetcher) nameTopicsOf(resp *kmsg.FetchResponse) {
	if resp.Version < 13 {
		return
	}
	for i := range resp.Topics {
		resp.Topics[i].Topic = f.topicNames[resp.Topics[i].TopicID]
	}
}
