package broker

// WriteTxnMarkers (key 27), v0-2, sent by a transaction coordinator to the leaders of
// a transaction's partitions, and by an admin aborting a hanging transaction (KIP-664,
// `petrel transactions abort`, Admin.abortTransaction); advertised, as Kafka's brokers
// do, so that admin clients send it. Kafka requires cluster Alter; here any client
// may, until ACLs exist. For each marker and
// partition this broker leads, a control batch (coordinator.EncodeMarker) carrying the producer id
// and epoch is appended as the leader, with acks=all semantics: the answer waits until
// the high watermark passes it (or the request's budget, REQUEST_TIMED_OUT), as Kafka
// writes markers with acks=-1. A marker older than the producer's epoch is
// INVALID_PRODUCER_EPOCH, and so is a v2 marker of TransactionVersion 2 not newer than
// it (KIP-1228: a TV2 coordinator bumps the epoch before writing markers), one from an older coordinator epoch than the producer's last
// marker there TRANSACTION_COORDINATOR_FENCED; a partition not led here NOT_LEADER_OR_FOLLOWER or
// UNKNOWN_TOPIC_OR_PARTITION (noReplicaError). On a __consumer_offsets partition the
// group coordinator's runtime writes the marker (completeGroupTransaction), in order
// with its own writes, and applies (COMMIT) or drops (ABORT) the producer's pending
// TxnOffsetCommit offsets once it is committed, before the partition is answered.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.WriteTxnMarkers, 0, 2, (*Broker).handleWriteTxnMarkers, apiOpts{
		authorize: clusterOnly(auth.OpClusterAction),
		fillError: fillErrorWriteTxnMarkers,
	})
}

// markerWait bounds the wait for the high watermark to pass the markers.
const markerWait = 10 * time.Second

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, req *rpc.Request) rpc.Result {
	d := req.Defer()
	b.startWriteTxnMarkers(ctx, req.Body.(*kmsg.WriteTxnMarkersRequest), func(resp kmsg.Response) { d.Complete(resp) })
	return rpc.RespondDeferred(d)
}

// writeTxnMarkers is startWriteTxnMarkers waiting for its answer (the transaction
// coordinator's in-process call, txn_markers.go).
func (b *Broker) writeTxnMarkers(ctx context.Context, r *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	ch := make(chan kmsg.Response, 1)
	b.startWriteTxnMarkers(ctx, r, func(resp kmsg.Response) { ch <- resp })
	return (<-ch).(*kmsg.WriteTxnMarkersResponse)
}

// startWriteTxnMarkers appends r's markers and answers done once their high watermarks
// pass them: the wait is the purgatory's (awaitAcksAll), with no goroutine, but for
// the markers of __consumer_offsets, whose group coordinator answers on a channel.
func (b *Broker) startWriteTxnMarkers(ctx context.Context, r *kmsg.WriteTxnMarkersRequest, done func(kmsg.Response)) {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	type waiting struct{ marker, topic, partition int }
	var pending []producePending
	// On __consumer_offsets the group coordinator writes the markers, meanwhile.
	type groupMarker struct {
		waiting
		code <-chan int16
	}
	var groupMarkers []groupMarker
	for mi, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for ti, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			// Never grown past its capacity: pending keeps pointers to its error codes.
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, 0, len(t.Partitions))
			for pi, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
				part := b.partitions.get(t.Topic, p)
				if part == nil {
					rt.Partitions[pi].ErrorCode = b.noReplicaError(t.Topic, p)
					continue
				}
				if t.Topic == offsetsTopic {
					groupMarkers = append(groupMarkers, groupMarker{waiting{mi, ti, pi}, b.completeGroupTransaction(p, m)})
					continue
				}
				batch := coordinator.EncodeMarker(m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, time.Now())
				minInsync := replication.EffectiveMinISR(part.settings.Load().minInsync, int(part.replicationFactor.Load()))
				info, err := part.AppendMarkerAsLeaderInEpoch(batch, -1, minInsync, m.TransactionVersion)
				if err != nil {
					rt.Partitions[pi].ErrorCode = b.errorCodeLogged(err, "write txn marker")
					continue
				}
				pending = append(pending, producePending{part: part, code: &rt.Partitions[pi].ErrorCode, end: info.LastOffset + 1, minInsync: minInsync})
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	// hw is closed once the high watermarks are in (or at once without pending markers).
	hw := make(chan struct{})
	answered := func() {
		if len(groupMarkers) == 0 {
			done(resp)
			return
		}
		close(hw)
	}
	if len(pending) > 0 {
		b.awaitAcksAll(ctx, pending, markerWait, answered)
	} else {
		answered()
	}
	if len(groupMarkers) == 0 {
		return
	}
	b.goLoop("write txn markers", func() {
		<-hw
		timeout := time.NewTimer(markerWait)
		defer timeout.Stop()
		for _, w := range groupMarkers {
			var code int16
			select {
			case code = <-w.code:
			case <-ctx.Done():
				code = kerr.RequestTimedOut.Code
			case <-timeout.C:
				code = kerr.RequestTimedOut.Code
			}
			resp.Markers[w.marker].Topics[w.topic].Partitions[w.partition].ErrorCode = code
		}
		done(resp)
	})
}

// fillErrorWriteTxnMarkers is WriteTxnMarkers's apiOpts.fillError.
func fillErrorWriteTxnMarkers(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	out := resp.(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.(*kmsg.WriteTxnMarkersRequest).Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		out.Markers = append(out.Markers, rm)
	}
}
