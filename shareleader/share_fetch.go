package shareleader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestOptions is the broker's part of a ShareFetch or ShareAcknowledge.
type RequestOptions struct {
	// ConnCtx ends when the request's connection closes: a share session opened on
	// it closes then, releasing the member's records (Kafka's
	// ShareSessionCache connection listener).
	ConnCtx context.Context
	// Denied reports the topics the principal may not Read; their partitions are
	// answered TOPIC_AUTHORIZATION_FAILED. nil denies nothing.
	Denied func(topicID [16]byte) bool
}

func (o RequestOptions) denied(id [16]byte) bool { return o.Denied != nil && o.Denied(id) }

// PendingFetch is a ShareFetch answered (Response) or to be answered after a long
// poll (Wait): nothing was acquired and MaxWaitMs allows waiting for records.
type PendingFetch struct {
	m    *Manager
	opts RequestOptions
	// resp is the answer so far, without its topics (Response adds them).
	resp *kmsg.ShareFetchResponse
	// Wait is how long to wait for records (0: answer now).
	Wait time.Duration

	key     sessionKey
	session *Session
	// deadline is when MaxWaitMs passes (zero without one): loads are waited for
	// until then.
	deadline time.Time
	params   shareFetchParams
	// parts are the partitions answered, in order.
	parts map[TopicPartition]*kmsg.ShareFetchResponseTopicPartition
	order []TopicPartition
}

// shareFetchParams are a ShareFetch's limits.
type shareFetchParams struct {
	maxBytes, maxRecords, batchSize int
	mode                            share.AcquireMode
	readCommitted                   bool
}

// ShareFetch handles a ShareFetch request (Kafka's KafkaApis.handleShareFetchRequest
// over SharePartitionManager): it moves the member's share session (epoch 0 opens it,
// -1 closes it, else it must be the next epoch; ForgottenTopicsData leaves it, and the
// member's records on those partitions are released), applies the piggybacked
// acknowledgements (written before the answer), and acquires records from the
// session's partitions, rotating which comes first, within MaxBytes. With nothing
// acquired the fetch may wait (PendingFetch.Await).
func (m *Manager) ShareFetch(ctx context.Context, req *kmsg.ShareFetchRequest, opts RequestOptions) *PendingFetch {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	f := &PendingFetch{m: m, opts: opts, resp: resp, parts: map[TopicPartition]*kmsg.ShareFetchResponseTopicPartition{}}
	group, member := deref(req.GroupID), deref(req.MemberID)
	f.key = sessionKey{group, member}
	cfg := m.cfg.GroupConfig(group)
	resp.AcquisitionLockTimeoutMillis = int32(lockDuration(cfg))
	fail := func(err error) *PendingFetch {
		resp.ErrorCode, resp.ErrorMessage = f.m.code(err), errText(err)
		f.order = nil
		return f
	}
	if group == "" || member == "" {
		return fail(fmt.Errorf("%w: a share fetch needs a group id and a member id", ErrInvalidRequest))
	}
	var named, forgotten []TopicPartition
	hasAcks, fetchesOnly := false, false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			named = append(named, TopicPartition{t.TopicID, p.Partition})
			hasAcks = hasAcks || len(p.AcknowledgementBatches) > 0
			fetchesOnly = fetchesOnly || len(p.AcknowledgementBatches) == 0
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forgotten = append(forgotten, TopicPartition{t.TopicID, p})
		}
	}
	if req.IsRenewAck && (req.MaxRecords != 0 || req.MinBytes != 0 || req.BatchSize != 0 || req.MaxWaitMillis != 0) {
		return fail(fmt.Errorf("%w: a share fetch with RENEW acknowledgements fetches nothing (KIP-1222)", ErrInvalidRequest))
	}
	switch req.ShareSessionEpoch {
	case InitialEpoch:
		if hasAcks {
			return fail(fmt.Errorf("%w: acknowledgements on a share fetch opening a session", ErrInvalidRequest))
		}
		s, prev, err := m.sessions.open(f.key, named, m.connCtx(opts), m.sessionClosed)
		if err != nil {
			return fail(err)
		}
		if prev != nil {
			m.releaseMember(ctx, group, member, m.sessions.partitionsOf(prev))
		}
		f.session = s
	case FinalEpoch:
		if fetchesOnly {
			return fail(fmt.Errorf("%w: a share fetch closing its session names partitions to fetch", ErrInvalidRequest))
		}
		s, err := m.sessions.close(f.key)
		if err != nil {
			return fail(err)
		}
		f.ackFetched(ctx, req)
		m.releaseMember(ctx, group, member, m.sessions.partitionsOf(s))
		return f
	default:
		s, err := m.sessions.next(f.key, req.ShareSessionEpoch, named, forgotten)
		if err != nil {
			return fail(err)
		}
		f.session = s
		if len(forgotten) > 0 {
			m.releaseMember(ctx, group, member, forgotten)
		}
	}
	f.ackFetched(ctx, req)
	if req.IsRenewAck {
		return f
	}
	f.params = shareFetchParams{maxBytes: int(req.MaxBytes), maxRecords: int(req.MaxRecords), batchSize: int(req.BatchSize),
		mode: cfg.AcquireMode, readCommitted: cfg.ReadCommitted}
	if req.Version >= 2 {
		f.params.mode = share.AcquireMode(req.ShareAcquireMode)
	}
	if req.Version < 1 || f.params.maxRecords <= 0 {
		f.params.maxRecords = 500 // Kafka's default max.poll.records
	}
	if f.params.maxBytes <= 0 {
		f.params.maxBytes = 1 << 30
	}
	if req.MaxWaitMillis > 0 {
		f.deadline = time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	}
	if n, errored := f.acquirePass(ctx); n == 0 && !errored && req.MaxWaitMillis > 0 {
		f.Wait = max(time.Until(f.deadline), time.Millisecond)
	}
	return f
}

// connCtx is the context whose end closes a session: the connection's, or the
// manager's when the caller has none (tests).
func (m *Manager) connCtx(o RequestOptions) context.Context {
	if o.ConnCtx != nil {
		return o.ConnCtx
	}
	return m.ctx
}

// sessionClosed releases the records of a session whose connection closed.
func (m *Manager) sessionClosed(s *Session) {
	m.runTracked(func() {
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.WriteTimeout)
		defer cancel()
		m.releaseMember(ctx, s.key.group, s.key.member, m.sessions.partitionsOf(s))
	})
}

// ackFetched applies the acknowledgements of a ShareFetch, per partition.
func (f *PendingFetch) ackFetched(ctx context.Context, req *kmsg.ShareFetchRequest) {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{t.TopicID, p.Partition}
			f.entry(tp) // every named partition is answered
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			batches := make([]share.AcknowledgementBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				batches[i] = ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)
			}
			var err error
			if f.opts.denied(t.TopicID) {
				err = &codeError{code: kerr.TopicAuthorizationFailed.Code, what: "share acknowledge"}
			} else if err = renewAllowed(req.Version, req.IsRenewAck, batches); err == nil {
				err = f.m.acknowledge(ctx, keyOf(f.key.group, tp), f.key.member, batches)
			}
			e := f.entry(tp)
			e.AcknowledgeErrorCode, e.AcknowledgeErrorMessage = f.m.code(err), errText(err)
		}
	}
}

// acquirePass acquires from every session partition once; it returns the records
// acquired and whether a partition answered an error.
func (f *PendingFetch) acquirePass(ctx context.Context) (int64, bool) {
	var n int64
	errored := false
	got := map[TopicPartition][]share.AcquiredRecords{}
	budget := f.params.maxBytes
	records := f.params.maxRecords
	for _, tp := range f.m.sessions.order(f.session) {
		if budget <= 0 || records <= 0 {
			break
		}
		if f.opts.denied(tp.TopicID) {
			e := f.entry(tp)
			e.ErrorCode = kerr.TopicAuthorizationFailed.Code
			errored = true
			continue
		}
		a, err := f.m.acquire(ctx, keyOf(f.key.group, tp), acquireParams{memberID: f.key.member,
			maxRecords: records, batchSize: f.params.batchSize, mode: f.params.mode, maxBytes: budget,
			readCommitted: f.params.readCommitted, loadWait: f.loadWait()})
		if errors.Is(err, errLoading) {
			continue // no records yet; the load's end wakes a parked fetch
		}
		if err != nil {
			e := f.entry(tp)
			e.ErrorCode, e.ErrorMessage = f.m.code(err), errText(err)
			errored = true
			continue
		}
		if len(a.ranges) == 0 {
			continue
		}
		got[tp] = a.ranges
		e := f.entry(tp)
		e.Records = append(e.Records, a.records...)
		var count int64
		for _, r := range a.ranges {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = r.FirstOffset, r.LastOffset, r.DeliveryCount
			e.AcquiredRecords = append(e.AcquiredRecords, ar)
			count += r.LastOffset - r.FirstOffset + 1
		}
		n += count
		budget -= len(a.records)
		records -= int(count)
	}
	if n > 0 && !f.m.sessions.current(f.session) {
		// The session closed (its connection went away, or the member opened a new
		// one) while this fetch acquired: nobody will acknowledge these records, so
		// they are released at once rather than at their lock's expiry; what the
		// member acquired through a newer session stays its own.
		ctx, cancel := context.WithTimeout(f.m.ctx, f.m.cfg.WriteTimeout)
		defer cancel()
		f.m.releaseAcquired(ctx, f.key.group, f.key.member, got)
	}
	return n, errored
}

// loadWait is how long a load may be waited for: what is left of MaxWait (at least
// a moment), or 0 (the load's own bound) for a fetch without MaxWait.
func (f *PendingFetch) loadWait() time.Duration {
	if f.deadline.IsZero() {
		return 0
	}
	return max(time.Until(f.deadline), time.Microsecond)
}

// Await long-polls (Kafka's DelayedShareFetch): it waits until a watched replica's
// high watermark or log end moves, or records are released or their locks expire,
// then tries to acquire again, until something is acquired, Wait passes or ctx
// ends; then it answers.
func (f *PendingFetch) Await(ctx context.Context) *kmsg.ShareFetchResponse {
	if f.Wait <= 0 || f.session == nil {
		return f.Response()
	}
	timer := time.NewTimer(f.Wait)
	defer timer.Stop()
	w := replication.NewWaiter()
	for _, tp := range f.m.sessions.partitionsOf(f.session) {
		if r, _ := f.m.cfg.Replicas.Leader(tp.TopicID, tp.Partition); r != nil {
			r.Watch(w)
			defer r.Unwatch(w)
		}
	}
	for {
		avail := f.m.availChan()
		if n, errored := f.acquirePass(ctx); n > 0 || errored {
			return f.Response()
		}
		select {
		case <-w.C:
		case <-avail:
		case <-timer.C:
			f.acquirePass(ctx)
			return f.Response()
		case <-ctx.Done():
			return f.Response()
		}
	}
}

// entry returns tp's answer, adding it on first use.
func (f *PendingFetch) entry(tp TopicPartition) *kmsg.ShareFetchResponseTopicPartition {
	if e := f.parts[tp]; e != nil {
		return e
	}
	p := kmsg.NewShareFetchResponseTopicPartition()
	p.Partition = tp.Partition
	p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
	f.parts[tp] = &p
	f.order = append(f.order, tp)
	return &p
}

// Response is the answer: the partitions answered, grouped by topic in the order
// they were first answered.
func (f *PendingFetch) Response() *kmsg.ShareFetchResponse {
	resp := f.resp
	resp.Topics = resp.Topics[:0]
	index := map[[16]byte]int{}
	for _, tp := range f.order {
		i, ok := index[tp.TopicID]
		if !ok {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = tp.TopicID
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			index[tp.TopicID] = i
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, *f.parts[tp])
	}
	return resp
}

// renewAllowed refuses a RENEW acknowledgement (type 4) that KIP-1222 does not allow:
// before version 2, or in a request whose IsRenewAck is false (INVALID_REQUEST).
func renewAllowed(version int16, isRenewAck bool, batches []share.AcknowledgementBatch) error {
	if version >= 2 && isRenewAck {
		return nil
	}
	for _, b := range batches {
		if slices.Contains(b.AcknowledgeTypes, share.AckRenew) {
			return fmt.Errorf("%w: a RENEW acknowledgement needs version 2 and IsRenewAck (KIP-1222)", ErrInvalidRequest)
		}
	}
	return nil
}

// ackBatch is a wire acknowledgement batch as share takes it.
func ackBatch(first, last int64, types []int8) share.AcknowledgementBatch {
	b := share.AcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: make([]share.AcknowledgeType, len(types))}
	for i, t := range types {
		b.AcknowledgeTypes[i] = share.AcknowledgeType(t)
	}
	return b
}

// lockDuration is the group's acquisition lock duration in milliseconds.
func lockDuration(cfg GroupConfig) int64 {
	if cfg.Partition.RecordLockDurationMs > 0 {
		return cfg.Partition.RecordLockDurationMs
	}
	return share.DefaultRecordLockDurationMs
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func errText(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
