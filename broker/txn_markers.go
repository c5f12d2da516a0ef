package broker

// The coordinator side of transaction markers: for a prepared transaction, send
// WriteTxnMarkers to the leader of each of its partitions (in process when that is
// this broker), retrying the partitions that failed with backoff, until every
// partition has its marker or its topic is gone; then complete the transaction on the
// shard (Markers.Done). The retries stop when the __transaction_state partition is
// unloaded or reloaded: the next load resumes every prepared transaction.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// markerRequestTimeout bounds one WriteTxnMarkers round trip.
const markerRequestTimeout = 15 * time.Second

// writeMarkers writes m's markers and completes the transaction on partition's shard.
func (tc *txnCoordinator) writeMarkers(partition int32, m *txn.Markers) {
	epoch, loaded := tc.rt.Loaded()[partition]
	if !loaded {
		return
	}
	b := tc.b
	b.goLoop("txn markers", func() {
		if m.Backoff > 0 { // asked for again after a failed completion
			select {
			case <-b.stop:
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
			case <-b.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
		}
		err := tc.rt.Submit(partition, func(now time.Time, s coordinator.Shard) coordinator.Result {
			ts := s.(*txnShard)
			return ts.convert(m.Done(now))
		}, nil)
		if err != nil {
			b.logger.Debug("completing a transaction after its markers", "transactional_id", m.TransactionalID, "error", err)
		}
	})
}

// sendMarkers sends one round of markers for partitions, grouped by leader, and returns
// the partitions still to be written.
func (tc *txnCoordinator) sendMarkers(m *txn.Markers, partitions []txn.TopicPartition) []txn.TopicPartition {
	b := tc.b
	im := b.Image()
	byLeader := map[int32][]txn.TopicPartition{}
	var retry []txn.TopicPartition
	for _, tp := range partitions {
		t := im.Topic(tp.Topic)
		if t == nil || int(tp.Partition) >= len(t.Partitions) {
			continue // deleted: nothing to mark
		}
		leader := t.Partitions[tp.Partition].Leader
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
		for _, tp := range tps {
			if n := len(marker.Topics); n > 0 && marker.Topics[n-1].Topic == tp.Topic {
				marker.Topics[n-1].Partitions = append(marker.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = tp.Topic, []int32{tp.Partition}
			marker.Topics = append(marker.Topics, mt)
		}
		req.Markers = append(req.Markers, marker)
		resp, err := tc.markerCall(leader, req)
		if err != nil {
			b.logger.Debug("writing transaction markers", "leader", leader, "error", err)
			retry = append(retry, tps...)
			continue
		}
		for _, rm := range resp.Markers {
			for _, rt := range rm.Topics {
				for _, rp := range rt.Partitions {
					if !markerDone(rp.ErrorCode) {
						b.logger.Debug("transaction marker not written", "topic", rt.Topic, "partition", rp.Partition,
							"error", kerr.ErrorForCode(rp.ErrorCode))
						retry = append(retry, txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
					}
				}
			}
		}
	}
	return retry
}

// markerCall sends req to leader: in process when it is this broker.
func (tc *txnCoordinator) markerCall(leader int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	b := tc.b
	ctx, cancel := b.waitTimeout(context.Background(), markerRequestTimeout)
	defer cancel()
	if leader == b.cfg.NodeID {
		return b.writeTxnMarkers(ctx, req), nil
	}
	resp, err := tc.peers.do(ctx, leader, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}
