package broker

// DeleteRecords (key 21), v0-2. On each partition's leader: moves the log start offset
// to the given offset (-1: the high watermark), deleting the segments wholly below it;
// followers follow through the log_start_offset of their fetch answers and report their
// own in their Fetch requests. An offset past the high watermark is OFFSET_OUT_OF_RANGE;
// a partition this broker does not lead is NOT_LEADER_OR_FOLLOWER
// (UNKNOWN_TOPIC_OR_PARTITION only from a caught-up image that lacks it). As Kafka's
// DelayedDeleteRecords, the answer waits, bounded by timeout_ms, until the low watermark
// (the smallest log start offset over the replicas on unfenced brokers) has reached the
// requested offset, and carries it; a partition still short at the deadline gets
// REQUEST_TIMED_OUT. Petrel writes the log directory's checkpoints before it answers
// (Kafka writes log-start-offset-checkpoint only periodically): a leader's crash after
// the answer never brings the deleted records back. A failed write answers
// KAFKA_STORAGE_ERROR.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DeleteRecords, 0, 2, (*Broker).handleDeleteRecords, apiOpts{
		authorize:       authorizeDeleteRecords,
		partitionScoped: true,
	})
}

// pendingDelete is one partition of a DeleteRecords answer waiting for its low
// watermark to reach required.
type pendingDelete struct {
	lp       *replication.Partition
	required int64
	rp       *kmsg.DeleteRecordsResponseTopicPartition
}

func (b *Broker) handleDeleteRecords(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp, pending := b.deleteRecordsLocal(r)
	if b.lowWatermarksReached(pending) {
		return rpc.Respond(resp)
	}
	ch := make(chan kmsg.Response, 1)
	b.goLoop("delayed delete records", func() {
		b.awaitLowWatermarks(ctx, pending, time.Duration(r.TimeoutMillis)*time.Millisecond)
		ch <- resp
	})
	return rpc.RespondLater(ch)
}

// deleteRecords answers r in full, waiting for the low watermarks in this goroutine.
func (b *Broker) deleteRecords(ctx context.Context, r *kmsg.DeleteRecordsRequest) *kmsg.DeleteRecordsResponse {
	resp, pending := b.deleteRecordsLocal(r)
	b.awaitLowWatermarks(ctx, pending, time.Duration(r.TimeoutMillis)*time.Millisecond)
	return resp
}

// deleteRecordsLocal moves the log start offsets on this leader and returns the answer
// with the partitions that must still wait for their followers.
func (b *Broker) deleteRecordsLocal(r *kmsg.DeleteRecordsRequest) (*kmsg.DeleteRecordsResponse, []pendingDelete) {
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(r.Topics))
	var pending []pendingDelete
	for i, t := range r.Topics {
		rt := &resp.Topics[i]
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			rp.Partition, rp.LowWatermark = p.Partition, -1
			if isInternalTopic(t.Topic) {
				rp.ErrorCode = kerr.InvalidTopicException.Code // Kafka: "Cannot delete records of internal topics"
			} else if lp := b.partitions.get(t.Topic, p.Partition); lp == nil {
				rp.ErrorCode = b.noReplicaError(t.Topic, p.Partition)
			} else if required, err := lp.DeleteRecordsBefore(p.Offset); err != nil {
				rp.ErrorCode = b.errorCodeLogged(err, "delete records")
			} else {
				pending = append(pending, pendingDelete{lp: lp.Partition, required: required, rp: rp})
			}
		}
	}
	if len(pending) > 0 {
		if err := b.partitions.checkpoint(); err != nil {
			b.logger.Error("delete records: writing the log start offset checkpoint", "error", err)
			for _, pd := range pending {
				pd.rp.ErrorCode = kerr.KafkaStorageError.Code
			}
			pending = nil
		}
	}
	return resp, pending
}

// lowWatermarksReached fills the low watermark of every pending partition and reports
// whether each has reached its required offset; a partition that lost its leadership
// gets its error.
func (b *Broker) lowWatermarksReached(pending []pendingDelete) bool {
	im := b.Image()
	eligible := func(id int32) bool { br := im.Brokers[id]; return br != nil && !br.Fenced }
	all := true
	for _, pd := range pending {
		low, err := pd.lp.LowWatermark(eligible)
		switch {
		case err != nil:
			pd.rp.ErrorCode, pd.rp.LowWatermark = b.errorCodeLogged(err, "delete records"), -1
		case low >= pd.required:
			pd.rp.ErrorCode, pd.rp.LowWatermark = 0, low
		default:
			pd.rp.ErrorCode, pd.rp.LowWatermark = kerr.RequestTimedOut.Code, low
			all = false
		}
	}
	return all
}

// awaitLowWatermarks waits until every pending partition's low watermark has reached
// its required offset, or timeout, the request's end, or shutdown; the partitions still
// short keep REQUEST_TIMED_OUT.
func (b *Broker) awaitLowWatermarks(ctx context.Context, pending []pendingDelete, timeout time.Duration) {
	if b.lowWatermarksReached(pending) || timeout <= 0 {
		return
	}
	w := replication.NewWaiter()
	for _, pd := range pending {
		pd.lp.Watch(w)
		defer pd.lp.Unwatch(w)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for !b.lowWatermarksReached(pending) {
		select {
		case <-w.C:
		case <-timer.C:
			b.lowWatermarksReached(pending)
			return
		case <-ctx.Done():
			return
		case <-b.draining:
			return
		}
	}
}

// authorizeDeleteRecords is DeleteRecords's authorization rule (checkRequest).
func authorizeDeleteRecords(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	z := checksOf(b, req)
	var denied []kmsg.DeleteRecordsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return z.topicOK(auth.OpDelete, t.Topic) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.DeleteRecordsResponse)
		for _, t := range denied {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.LowWatermark, rp.ErrorCode = p.Partition, -1, codeTopicAuthz
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	})
}
