package coordinator

// The coordinator side of transaction markers: for a prepared transaction, send
// WriteTxnMarkers to the leader of each of its partitions (through MarkerNet: in
// process when that is this broker), retrying the partitions that failed with backoff,
// until every partition has its marker or its topic is gone; then complete the
// transaction on the shard (Markers.Done). The retries stop when the
// __transaction_state partition is unloaded or reloaded: the next load resumes every
// prepared transaction.

import (
	"iter"
	"time"

	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MarkerNet is what the transaction coordinator needs of the cluster to write
// markers; the broker implements it.
type MarkerNet interface {
	// LeaderOf returns a partition's leader (-1: none now), or false when the
	// partition does not exist (its topic was deleted: nothing to mark).
	LeaderOf(topic string, partition int32) (leader int32, exists bool)
	// WriteTxnMarkers sends req to broker leader (in process when it is this one),
	// bounded in time, and returns its response.
	WriteTxnMarkers(leader int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
	// Go runs fn on a goroutine the broker waits for when it stops; stop is closed
	// then.
	Go(name string, fn func(stop <-chan struct{}))
}

// MarkerDone reports a partition's WriteTxnMarkers outcome for the coordinator: done
// (written, or never to be written: the topic is gone, or a newer epoch fenced this
// marker) or to be retried.
func MarkerDone(code int16) bool {
	switch code {
	case 0, kerr.InvalidProducerEpoch.Code, kerr.ProducerFenced.Code, kerr.TransactionCoordinatorFenced.Code:
		return true
	}
	return false
}

// writeMarkers writes m's markers and completes the transaction on partition's shard.
func (tc *TxnCoordinator) writeMarkers(partition int32, m *txn.Markers) {
	epoch, loaded := tc.rt.Loaded()[partition]
	if !loaded {
		return
	}
	tc.cfg.Net.Go("txn markers", func(stop <-chan struct{}) {
		if m.Backoff > 0 { // asked for again after a failed completion
			select {
			case <-stop:
				return
			case <-time.After(m.Backoff):
			}
		}
		remaining := m.Partitions
		backoff := 20 * time.Millisecond
		for len(remaining) > 0 {
			if e, ok := tc.rt.Loaded()[partition]; !ok || e != epoch {
				return
			}
			remaining = tc.sendMarkers(m, remaining)
			if len(remaining) == 0 {
				break
			}
			select {
			case <-stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
		}
		err := tc.rt.Submit(partition, func(now time.Time, s Shard) Result {
			ts := s.(*txnStateShard)
			return ts.convert(m.Done(now))
		}, nil)
		if err != nil {
			tc.logger.Debug("completing a transaction after its markers", "transactional_id", m.TransactionalID, "error", err)
		}
	})
}

// sendMarkers sends one round of markers for partitions, grouped by leader, and returns
// the partitions still to be written.
func (tc *TxnCoordinator) sendMarkers(m *txn.Markers, partitions []txn.TopicPartition) []txn.TopicPartition {
	byLeader := map[int32][]txn.TopicPartition{}
	var retry []txn.TopicPartition
	for _, tp := range partitions {
		leader, ok := tc.cfg.Net.LeaderOf(tp.Topic, tp.Partition)
		if !ok {
			continue // deleted: nothing to mark
		}
		if leader < 0 {
			retry = append(retry, tp)
			continue
		}
		byLeader[leader] = append(byLeader[leader], tp)
	}
	for leader, tps := range byLeader {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		marker := kmsg.NewWriteTxnMarkersRequestMarker()
		marker.ProducerID, marker.ProducerEpoch, marker.Committed, marker.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
		if m.TransactionVersion >= 2 {
			// KIP-1228: the leader checks the marker's epoch strictly. Only TV2
			// markers use v2, so TV1 markers still reach brokers without it.
			req.Version, marker.TransactionVersion = 2, m.TransactionVersion
		}
		for topic, partitions := range topicRuns(tps) {
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = topic, partitions
			marker.Topics = append(marker.Topics, mt)
		}
		req.Markers = append(req.Markers, marker)
		resp, err := tc.cfg.Net.WriteTxnMarkers(leader, req)
		if err != nil {
			tc.logger.Debug("writing transaction markers", "leader", leader, "error", err)
			retry = append(retry, tps...)
			continue
		}
		for _, rm := range resp.Markers {
			for _, rt := range rm.Topics {
				for _, rp := range rt.Partitions {
					if !MarkerDone(rp.ErrorCode) {
						tc.logger.Debug("transaction marker not written", "topic", rt.Topic, "partition", rp.Partition,
							"error", kerr.ErrorForCode(rp.ErrorCode))
						retry = append(retry, txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
					}
				}
			}
		}
	}
	return retry
}

// topicRuns yields each run of consecutive partitions of one topic in tps, in order:
// the topic-then-partitions shape of WriteTxnMarkers and AddPartitionsToTxn requests.
func topicRuns(tps []txn.TopicPartition) iter.Seq2[string, []int32] {
	return func(yield func(string, []int32) bool) {
		for i := 0; i < len(tps); {
			j := i + 1
			for j < len(tps) && tps[j].Topic == tps[i].Topic {
				j++
			}
			partitions := make([]int32, 0, j-i)
			for _, tp := range tps[i:j] {
				partitions = append(partitions, tp.Partition)
			}
			if !yield(tps[i].Topic, partitions) {
				return
			}
			i = j
		}
	}
}
