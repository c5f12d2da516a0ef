package broker

// Produce (key 0). Advertised v0-13 (v0-2 stay advertised so that old librdkafka keeps
// compression on, kafka-protocol.md §1.2); v0-2 are answered UNSUPPORTED_VERSION per
// partition, as Kafka 4 does. v12 adds a transactional partition to its transaction
// implicitly under transaction.version 2 (Transactions V2, txn_v2.go); below it a
// transactional v12+ produce takes v11's path, and a partition not added with
// AddPartitionsToTxn is refused by the verification below. v13 names topics by id (an
// unknown id is UNKNOWN_TOPIC_ID: produce_topic_ids.go). From v10,
// NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH answers carry the current leader and
// its endpoint (KIP-951, leader_hints.go), also when a parked acks=all write loses its
// leadership (a controlled shutdown). Each partition's records must be exactly one v2 batch with baseOffset 0
// (INVALID_RECORD), no larger than max.message.bytes (MESSAGE_TOO_LARGE), with a valid
// CRC (CORRUPT_MESSAGE); control batches are refused (only the transaction coordinator's
// WriteTxnMarkers writes them), and a transactional batch needs a producer id and a
// base sequence. Transactional batches pass the same producer-state checks, and the
// first one of a transaction in a partition is verified with the transaction
// coordinator first (KIP-890, coordinator/txn_verify.go): a partition not in the producer's ongoing
// transaction is INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v11). Then every
// record inside is walked, compressed batches decompressed as a stream (segment/validate.go):
// a malformed record is INVALID_RECORD naming its index, undecodable compressed data
// CORRUPT_MESSAGE, and records decompressing past petrel.max.decompressed.batch.bytes
// MESSAGE_TOO_LARGE; a keyless record in a compacted topic is INVALID_RECORD with, from
// v8, KIP-467's record_errors naming each such record; a batch larger than
// segment.bytes is RECORD_LIST_TOO_LARGE. The batch is stored as sent but for the
// offset and leader epoch, unless the topic's compression.type names another codec
// (recompressed during the record walk, segment/recompress.go: a result past max.message.bytes
// is MESSAGE_TOO_LARGE) or its message.timestamp.type is LogAppendTime (the append
// stamps the batch's timestamp, answered as log_append_time, v2+). acks=0 gets no
// response (a failure closes the connection, as Kafka does); acks=1 answers after the
// local append (with flush.messages=1 once an fsync behind it covers it, as for acks=-1:
// the connection reads on meanwhile); acks=-1 checks min.insync.replicas first and answers when the high
// watermark passes the batch, or REQUEST_TIMED_OUT at timeout_ms. Idempotent batches
// (a producer id) pass the partition's producer-state checks under the partition lock
// before any offset is assigned: INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER,
// or, for a repeat of one of the producer's last 5 batches, success with the original
// offsets (and append time) and nothing written (docs/idempotence.md). Below the log directory's free-space
// floor (petrel.log.dir.min.free.bytes, log_dir_space.go) a partition is refused with the
// retriable NOT_ENOUGH_REPLICAS before its append; a failed write is KAFKA_STORAGE_ERROR
// and takes the log directory offline (offline_replicas.go). A request naming a
// partition this broker's image has another broker lead waits, briefly, when that image
// is about to change (refused_leader_hold.go): the client may know of the change first.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.Produce, 0, 13, (*Broker).handleProduce, apiOpts{
		authorize:       authorizeProduce,
		partitionScoped: true,
	})
	// The records are copied into the log (write(2) into the page cache) before the
	// handler returns, and the acks=all waiter keeps only the response: the request
	// frame is reused (rpc/framepool.go).
	releasesRequestFrame(kmsg.Produce)
}

// producePending is a partition whose acks=all answer waits for the high watermark.
type producePending struct {
	part      *localPartition
	code      *int16 // where the acks=all outcome's error code goes
	end       int64  // the high watermark must reach this
	minInsync int    // effective min.insync.replicas at the append
}

func (b *Broker) handleProduce(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ProduceRequest)
	resolveProduceTopicIDs(b.Image(), r) // v13: topic ids (produce_topic_ids.go)
	b.awaitProduceLeaders(ctx, r)        // the image is about to make this broker leader (refused_leader_hold.go)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	type appended struct {
		topic, partition int // indexes into resp
		part             *localPartition
		end              int64
	}
	var waiting []appended
	failed := false
	// A TV2 produce adds its partitions whatever the setting (txn_v2.go).
	verifying := b.dynamicBrokerBool("transaction.partition.verification.enable") || b.verifier.ImplicitAdd(r.Version, 12)
	var verified map[txn.TopicPartition]coordinator.ProduceVerification
	if verifying {
		verified = b.verifier.VerifyProduce(ctx, r, b.ledPartition)
	}
	// The followers' parked fetches the appends wake are answered once every
	// partition is appended, as Kafka does: one answer then carries all of the
	// request's partitions a follower's session holds (replication.Wakes).
	var wakes replication.Wakes
	defer wakes.Run() // a panic recovered further up still answers them (Run again is a no-op)
	for ti, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			v := verified[txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			v.Off = !verifying
			var code int16
			var msg *string
			var part *localPartition
			var info segment.AppendInfo
			if rt.Topic == "" && r.Version >= 13 {
				code, msg = kerr.UnknownTopicID.Code, kmsg.StringPtr("This server does not host this topic ID.")
			} else {
				code, msg, part, info = b.producePartition(r, rt.Topic, rp, v, &sp, &wakes)
			}
			sp.ErrorCode, sp.ErrorMessage = code, msg
			if code == 0 {
				part.counters.Produced(info.Records, info.Bytes)
				sp.BaseOffset = info.FirstOffset
				sp.LogAppendTime = info.LogAppendTime
				sp.LogStartOffset = part.LogStartOffset()
				if r.Acks == -1 || (r.Acks == 1 && part.SyncsEveryAppend()) {
					waiting = append(waiting, appended{ti, pi, part, info.LastOffset + 1})
				}
			} else {
				failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	wakes.Run()
	// resp is complete: pointers into it stay valid from here on.
	pending := make([]producePending, len(waiting))
	for i, a := range waiting {
		s := a.part.settings.Load()
		pending[i] = producePending{a.part, &resp.Topics[a.topic].Partitions[a.partition].ErrorCode, a.end,
			replication.EffectiveMinISR(s.minInsync, int(a.part.replicationFactor.Load()))}
	}
	switch {
	case r.Acks == 0 && failed:
		return rpc.CloseConnection(errors.New("acks=0 produce failed"))
	case r.Acks == 0:
		return rpc.NoResponse()
	case len(pending) == 0:
		b.newLeaderHints(req.Conn.ListenerName).produce(resp) // KIP-951 (leader_hints.go)
		return rpc.Respond(resp)
	}
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	if r.Acks == 1 {
		// Kafka ignores timeout_ms at acks=1 (its append fsyncs before the answer
		// whatever the client allows): a small value must not turn a slow fsync into
		// REQUEST_TIMED_OUT.
		timeout = max(timeout, acksOneFsyncWait)
	}
	deferred := req.Defer()
	b.awaitAcks(ctx, r.Acks, pending, timeout, func() {
		// A leader that lost the partition meanwhile (a controlled shutdown moving it,
		// for one) names the new leader in its NOT_LEADER_OR_FOLLOWER answer.
		b.newLeaderHints(req.Conn.ListenerName).produce(resp)
		deferred.Complete(resp)
	})
	return rpc.RespondDeferred(deferred)
}

// acksOneFsyncWait is the least an acks=1 produce waits for the fsync behind its
// append before REQUEST_TIMED_OUT: Kafka's default request.timeout.ms.
const acksOneFsyncWait = 30 * time.Second

// awaitAcksAll parks pending in the purgatory (replication.Purgatory.WaitAcksAll,
// Kafka's DelayedProduce) and calls done once every partition has its code: 0 when
// committed, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER,
// KAFKA_STORAGE_ERROR when its log failed first (an fsync behind the append), or
// REQUEST_TIMED_OUT for one short of its high watermark at timeout or when ctx ends.
// done runs on the goroutine that decided last (the follower fetch advancing the high
// watermark, usually), possibly before awaitAcksAll returns.
func (b *Broker) awaitAcksAll(ctx context.Context, pending []producePending, timeout time.Duration, done func()) {
	b.awaitAcks(ctx, -1, pending, timeout, done)
}

// awaitAcks is awaitAcksAll for acks=-1; for acks=1 (with flush.messages=1) it waits
// instead for the leader's own fsync behind the append (Purgatory.WaitFsynced), with
// the same codes, done then running on the partition's flusher after the fsync.
func (b *Broker) awaitAcks(ctx context.Context, acks int16, pending []producePending, timeout time.Duration, done func()) {
	writes := make([]replication.AcksAllWrite, len(pending))
	for i, p := range pending {
		writes[i] = replication.AcksAllWrite{Partition: p.part.Partition, End: p.end, MinISR: p.minInsync}
	}
	answer := func(outcomes []replication.Outcome) {
		for i, o := range outcomes {
			*pending[i].code, _ = acksAllCode(o)
		}
		done()
	}
	if acks == 1 {
		b.purgatory.WaitFsynced(ctx, writes, timeout, answer)
		return
	}
	b.purgatory.WaitAcksAll(ctx, writes, timeout, answer)
}

// producePartition validates and appends one partition's batch; records at fault are
// named in sp's record errors (KIP-467, v8+). The parked follower fetches an acks=all
// or acks=1 append wakes go to wakes, which the caller runs after its last append.
func (b *Broker) producePartition(r *kmsg.ProduceRequest, topic string, rp kmsg.ProduceRequestTopicPartition, v coordinator.ProduceVerification, sp *kmsg.ProduceResponseTopicPartition, wakes *replication.Wakes) (int16, *string, *localPartition, segment.AppendInfo) {
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
	records, release, err := b.checkRecords(rp.Records, settings)
	if err != nil {
		var re *segment.RecordErrors
		if errors.As(err, &re) && r.Version >= 8 {
			for _, i := range re.Indexes {
				e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				e.RelativeOffset = i
				e.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("%s in topic partition %s-%d.", re.Message, topic, rp.Partition))
				sp.ErrorRecords = append(sp.ErrorRecords, e)
			}
		}
		return b.errorCodeLogged(err, "produce"), errorMessage(err), nil, none
	}
	defer release()
	if v.Code != 0 {
		return fail(v.Code, "the transaction coordinator did not verify %s-%d in the producer's transaction: %v",
			topic, rp.Partition, kerr.ErrorForCode(v.Code))
	}
	if err := b.logSpace.belowFloor(time.Now()); err != nil {
		// Retriable, nothing written (log_dir_space.go explains the code).
		return kerr.NotEnoughReplicas.Code, errorMessage(err), nil, none
	}
	minInsync := 0
	if r.Acks == -1 {
		minInsync = replication.EffectiveMinISR(settings.minInsync, int(part.replicationFactor.Load()))
	}
	// The records slice aliases the request frame (kmsg's ReadFrom does not copy []byte
	// fields), owned by this request until the handler returns, or is the recompressed
	// batch, released when this function returns: the append rewrites baseOffset and
	// partitionLeaderEpoch (and, under LogAppendTime, the timestamp and CRC) in place and
	// writes the batch to the log, so nothing keeps the slice. validateProducedBatch
	// checked the CRC (recompress computed the new one): the append does not compute it
	// again.
	var info segment.AppendInfo
	switch {
	case r.Acks == -1:
		// The fsync runs behind the append (replication/sync_behind.go): this
		// connection reads its next request while it runs, and the answer waits for
		// the high watermark, which counts only fsynced offsets.
		info, err = part.AppendForAcksAll(records, minInsync, !v.Off, v.Guard, wakes)
	case r.Acks == 1:
		// Likewise with flush.messages=1, the answer waiting for the fsync behind the
		// append instead (replication/acks_one.go).
		info, err = part.AppendForAcksOne(records, !v.Off, v.Guard, wakes)
	case v.Off:
		info, err = part.AppendValidatedAsLeader(records, minInsync)
	default:
		info, err = part.AppendAsLeaderVerified(records, minInsync, v.Guard)
	}
	if err != nil {
		if logFailed(err) {
			b.partitions.recheck() // the replica or its directory goes offline (offline_replicas.go)
		}
		return b.errorCodeLogged(err, "produce"), errorMessage(err), nil, none
	}
	return 0, nil, part, info
}

// checkRecords walks the records of a validated batch (segment/validate.go) and, when the
// topic's compression.type names another codec than the batch's, returns the batch
// recompressed (segment/recompress.go); release is to be called once the append is done.
func (b *Broker) checkRecords(batch []byte, s *topicSettings) ([]byte, func(), error) {
	h, err := segment.ParseBatchHeader(batch)
	if err == nil && s.compression.Rewrites(h.Codec()) {
		return b.records.Recompress(batch, s.segment.Compacted, s.compression, s.maxMessageBytes)
	}
	return batch, func() {}, b.records.check(batch, s.segment.Compacted)
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

// authorizeProduce is Produce's rule: Write on the transactional id of a transactional
// produce (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), Write on each
// topic (else TOPIC_AUTHORIZATION_FAILED). An acks=0 produce with a denied topic closes
// the connection, Kafka's answer to any acks=0 failure.
func authorizeProduce(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.ProduceRequest)
	z := checksOf(b, req)
	code := codeTopicAuthz
	var denied []kmsg.ProduceRequestTopic
	if r.TransactionID != nil && !z.txnOK(*r.TransactionID) {
		code = codeTxnAuthz
		denied, r.Topics = r.Topics, []kmsg.ProduceRequestTopic{}
	} else {
		resolveProduceTopicIDs(b.Image(), r)
		r.Topics, denied = split(r.Topics, func(t kmsg.ProduceRequestTopic) bool {
			unknownID := t.Topic == "" && r.Version >= 13 // the handler's UNKNOWN_TOPIC_ID
			return unknownID || z.topicOK(auth.OpWrite, t.Topic)
		})
	}
	if len(denied) == 0 {
		return authzDecision{}
	}
	if r.Acks == 0 {
		return authzDecision{close: fmt.Errorf("%w: acks=0 produce to %s by %s", ErrTopicAuthorizationFailed, denied[0].Topic, req.Conn.Principal)}
	}
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.ProduceResponse)
		for _, t := range denied {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = p.Partition, code, -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	}}
}
