package broker

// Produce (key 0). Advertised v0-11 so that old librdkafka keeps compression on
// (kafka-protocol.md §1.2); v0-2 are answered UNSUPPORTED_VERSION per partition, as
// Kafka 4 does. Each partition's records must be exactly one v2 batch with baseOffset 0
// (INVALID_RECORD), no larger than max.message.bytes (MESSAGE_TOO_LARGE), with a valid
// CRC (CORRUPT_MESSAGE); control batches are refused (only the transaction coordinator's
// WriteTxnMarkers writes them), and a transactional batch needs a producer id and a
// base sequence. Transactional batches pass the same producer-state checks, and the
// first one of a transaction in a partition is verified with the transaction
// coordinator first (KIP-890, txn_verify.go): a partition not in the producer's ongoing
// transaction is INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v11). Then every
// record inside is walked, compressed batches decompressed as a stream (recordcheck.go):
// a malformed record is INVALID_RECORD naming its index, undecodable compressed data
// CORRUPT_MESSAGE, and records decompressing past petrel.max.decompressed.batch.bytes
// MESSAGE_TOO_LARGE; the batch is stored byte for byte as sent. acks=0 gets no
// response (a failure closes the connection, as Kafka does); acks=1 answers after the
// local append; acks=-1 checks min.insync.replicas first and answers when the high
// watermark passes the batch, or REQUEST_TIMED_OUT at timeout_ms. Idempotent batches
// (a producer id) pass the partition's producer-state checks under the partition lock
// before any offset is assigned: INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER,
// or, for a repeat of one of the producer's last 5 batches, success with the original
// offsets and nothing written (docs/idempotence.md).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.Produce, 0, 11, (*Broker).handleProduce)
	// The records are copied into the log (write(2) into the page cache) before the
	// handler returns, and the acks=all waiter keeps only the response: the request
	// frame is reused (rpc/framepool.go).
	releasesRequestFrame(kmsg.Produce)
}

// producePending is a partition whose acks=all answer waits for the high watermark.
type producePending struct {
	part      *localPartition
	resp      *kmsg.ProduceResponseTopicPartition
	end       int64 // the high watermark must reach this
	minInsync int   // effective min.insync.replicas at the append
}

func (b *Broker) handleProduce(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	type appended struct {
		topic, partition int // indexes into resp
		part             *localPartition
		end              int64
	}
	var waiting []appended
	failed := false
	verifying := b.cfg.boolValue("transaction.partition.verification.enable")
	verified := b.verifyProduce(ctx, r)
	for ti, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			v := verified[txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			v.off = !verifying
			code, msg, part, info := b.producePartition(r, rt.Topic, rp, v)
			sp.ErrorCode, sp.ErrorMessage = code, msg
			if code == 0 {
				part.counters.Produced(info.Records, info.Bytes)
				sp.BaseOffset = info.FirstOffset
				sp.LogStartOffset = part.LogStartOffset()
				if r.Acks == -1 {
					waiting = append(waiting, appended{ti, pi, part, info.LastOffset + 1})
				}
			} else {
				failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	// resp is complete: pointers into it stay valid from here on.
	pending := make([]producePending, len(waiting))
	for i, a := range waiting {
		s := a.part.settings.Load()
		pending[i] = producePending{a.part, &resp.Topics[a.topic].Partitions[a.partition], a.end,
			min(s.minInsync, int(a.part.replicationFactor.Load()))}
	}
	switch {
	case r.Acks == 0 && failed:
		return rpc.CloseConnection(errors.New("acks=0 produce failed"))
	case r.Acks == 0:
		return rpc.NoResponse()
	case len(pending) == 0:
		return rpc.Respond(resp)
	}
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	deferred := req.Defer()
	b.startDelayedProduce(ctx, resp, pending, timeout, deferred)
	return rpc.RespondDeferred(deferred)
}

// producePartition validates and appends one partition's batch.
func (b *Broker) producePartition(r *kmsg.ProduceRequest, topic string, rp kmsg.ProduceRequestTopicPartition, v produceVerification) (int16, *string, *localPartition, segment.AppendInfo) {
	var none segment.AppendInfo
	fail := func(code int16, format string, args ...any) (int16, *string, *localPartition, segment.AppendInfo) {
		return code, errorMessage(fmt.Errorf(format, args...)), nil, none
	}
	switch {
	case r.Version < 3:
		return fail(kerr.UnsupportedVersion.Code, "produce v%d is not supported; use v3 or later", r.Version)
	case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
		return fail(kerr.InvalidRequiredAcks.Code, "acks must be -1, 0 or 1, not %d", r.Acks)
	}
	if isInternalTopic(topic) {
		// Kafka: "Cannot append to internal topic" (only its coordinators write there).
		return fail(kerr.InvalidTopicException.Code, "cannot append to internal topic %s", topic)
	}
	part := b.partitions.get(topic, rp.Partition)
	if part == nil {
		if code := b.noReplicaError(topic, rp.Partition); code != kerr.UnknownTopicOrPartition.Code {
			return fail(code, "broker %d has no open replica of %s-%d", b.cfg.NodeID, topic, rp.Partition)
		}
		return fail(kerr.UnknownTopicOrPartition.Code, "unknown topic or partition %s-%d", topic, rp.Partition)
	}
	settings := part.settings.Load()
	if code, err := validateProducedBatch(rp.Records, r.Version, settings.maxMessageBytes); code != 0 {
		return code, errorMessage(err), nil, none
	}
	if err := b.records.check(rp.Records, settings.segment.Compacted); err != nil {
		return b.errorCodeLogged(err, "produce"), errorMessage(err), nil, none
	}
	if v.code != 0 {
		return fail(v.code, "the transaction coordinator did not verify %s-%d in the producer's transaction: %v",
			topic, rp.Partition, kerr.ErrorForCode(v.code))
	}
	minInsync := 0
	if r.Acks == -1 {
		minInsync = min(settings.minInsync, int(part.replicationFactor.Load()))
	}
	// The records slice aliases the request frame (kmsg's ReadFrom does not copy []byte
	// fields), owned by this request until the handler returns: the append rewrites
	// baseOffset and partitionLeaderEpoch in place and writes the batch to the log, so
	// nothing keeps the slice. validateProducedBatch checked the CRC: the append does
	// not compute it again.
	var info segment.AppendInfo
	var err error
	if v.off {
		info, err = part.AppendValidatedAsLeader(rp.Records, minInsync)
	} else {
		info, err = part.AppendAsLeaderVerified(rp.Records, minInsync, v.guard)
	}
	if err != nil {
		return b.errorCodeLogged(err, "produce"), errorMessage(err), nil, none
	}
	return 0, nil, part, info
}

// validateProducedBatch applies Kafka's produce checks in Kafka's order.
func validateProducedBatch(records []byte, version int16, maxMessageBytes int) (int16, error) {
	h, err := segment.ParseBatchHeader(records) // refuses magic 0 and 1
	if err != nil || h.Size() != int64(len(records)) {
		return kerr.InvalidRecord.Code, fmt.Errorf("the records must be exactly one record batch: %v", err)
	}
	if h.BaseOffset != 0 {
		return kerr.InvalidRecord.Code, fmt.Errorf("baseOffset must be 0, not %d", h.BaseOffset)
	}
	if len(records) > maxMessageBytes {
		return kerr.MessageTooLarge.Code, fmt.Errorf("the batch is %d bytes, max.message.bytes is %d", len(records), maxMessageBytes)
	}
	if _, err := segment.ValidateBatch(records); err != nil {
		if errors.Is(err, segment.ErrCorruptBatch) {
			return kerr.CorruptMessage.Code, err
		}
		return kerr.InvalidRecord.Code, err
	}
	if h.Control() {
		return kerr.InvalidRecord.Code, errors.New("control batches are written by the transaction coordinator only")
	}
	if h.Transactional() && h.ProducerID < 0 {
		return kerr.InvalidRecord.Code, errors.New("a transactional batch needs a producer id")
	}
	if h.Codec() == 4 && version < 7 {
		return kerr.UnsupportedCompressionType.Code, errors.New("zstd needs produce v7 or later")
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return kerr.InvalidRecord.Code, errors.New("an idempotent batch needs a base sequence")
	}
	return 0, nil
}

// awaitHighWatermarks waits until every pending partition's high watermark reaches its
// end offset, setting REQUEST_TIMED_OUT on those that do not in time and
// NOT_LEADER_OR_FOLLOWER on those whose replica stopped.
func (b *Broker) awaitHighWatermarks(ctx context.Context, pending []producePending, timeout time.Duration) {
	w := replication.NewWaiter()
	for _, p := range pending {
		p.part.Watch(w)
		defer p.part.Unwatch(w)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		done := true
		for _, p := range pending {
			if p.resp.ErrorCode != 0 {
				continue
			}
			if hw := p.part.LeaderHighWatermark(); hw >= 0 && hw < p.end {
				// Still leading, not there yet: no need for the partition lock, which an
				// append may hold across its write.
				done = false
				continue
			}
			st := p.part.State()
			switch {
			case st.Role == replication.Stopped || st.Role != replication.Leader:
				p.resp.ErrorCode = kerr.NotLeaderForPartition.Code
			case st.HighWatermark < p.end:
				done = false
			case st.MaximalISRSize < p.minInsync:
				// Written and committed, but the ISR fell below min.insync.replicas while
				// the request waited: Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND.
				p.resp.ErrorCode = kerr.NotEnoughReplicasAfterAppend.Code
			}
		}
		if done {
			return
		}
		select {
		case <-w.C:
		case <-timer.C:
			b.markTimedOut(pending, kerr.RequestTimedOut.Code)
			return
		case <-ctx.Done():
			b.markTimedOut(pending, kerr.RequestTimedOut.Code)
			return
		case <-b.stop:
			b.markTimedOut(pending, kerr.NotLeaderForPartition.Code)
			return
		}
	}
}

func (b *Broker) markTimedOut(pending []producePending, code int16) {
	for _, p := range pending {
		if p.resp.ErrorCode == 0 && p.part.State().HighWatermark < p.end {
			p.resp.ErrorCode = code
		}
	}
}
