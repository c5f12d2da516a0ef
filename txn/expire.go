package txn

import "time"

// RemoveExpired removes the transactional ids with no activity for expiration
// (transactional.id.expiration.ms): those in Empty, CompleteCommit or CompleteAbort
// whose last update is at least expiration before now, with no write pending, as
// Kafka's removeExpiredTransactionalIds does. Each gets a tombstone in
// __transaction_state (Kafka moves it to Dead first; the tombstone is that record
// here) and is forgotten once the tombstone is written; meanwhile it answers
// CONCURRENT_TRANSACTIONS, and a failed write keeps it. Ongoing and prepared
// transactions never expire: the timeout aborts them first. A producer that comes back
// afterwards is a new producer (InitProducerId gives a new producer id).
func (s *Shard) RemoveExpired(now time.Time, expiration time.Duration) Effects {
	if expiration <= 0 {
		return Effects{}
	}
	var out Effects
	for _, id := range s.IDs() {
		t := s.txns[id]
		switch t.State {
		case StateEmpty, StateCompleteCommit, StateCompleteAbort:
		default:
			continue
		}
		if t.pending != nil || now.Before(t.LastUpdate.Add(expiration)) {
			continue
		}
		dead := t.clone()
		dead.State, dead.LastUpdate = StateDead, now
		t.pending = dead
		out = merge(out, Effects{
			Records: []Record{{Key: encodeKey(id)}},
			Committed: func(code int16) Effects {
				if s.txns[id] != t {
					return Effects{}
				}
				t.pending = nil
				if code == 0 {
					delete(s.txns, id)
				}
				return Effects{}
			},
		})
	}
	return out
}
