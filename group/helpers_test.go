package group

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness plays the coordinator runtime around a Shard: it keeps the timers, "writes"
// records to an in-memory log, answers Committed with writeCode, and delivers replies.
type harness struct {
	t         *testing.T
	s         *Shard
	now       time.Time
	timers    map[string]time.Time
	log       []Record // every record written, in order
	writeCode int16    // the outcome of the next writes
	// hold parks writes instead of completing them (release completes them).
	hold   bool
	held   []heldWrite
	nextID int
	// batches is the partition as a load would read it: the committed writes and the
	// markers, in order (txn_offsets_test.go).
	batches []loggedBatch
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, s: NewShard(cfg), now: time.UnixMilli(1_700_000_000_000), timers: map[string]time.Time{}}
	h.s.uuid = func() string { h.nextID++; return fmt.Sprintf("uuid%d", h.nextID) }
	return h
}

func testConfig() Config {
	cfg := DefaultConfig()
	n := 0
	cfg.NewMemberID = func() string { n++; return fmt.Sprintf("id%d", n) }
	cfg.InitialRebalanceDelay = 0
	return cfg
}

// run carries out e as the runtime does: timers, the write, Committed, replies.
func (h *harness) run(e Effects) {
	for _, tm := range e.Timers {
		if tm.At.IsZero() {
			delete(h.timers, tm.Key)
		} else {
			h.timers[tm.Key] = tm.At
		}
	}
	if len(e.Records) > 0 {
		if h.hold {
			h.held = append(h.held, heldWrite{e: e})
			return
		}
		h.log = append(h.log, e.Records...)
		h.logBatch(e, h.writeCode)
		if e.Committed != nil {
			h.run(e.Committed(h.writeCode))
		}
	}
	for _, r := range e.Replies {
		r.Send(r.Response)
	}
}

// heldWrite is a write parked by hold; answered once timeOut answered it.
type heldWrite struct {
	e        Effects
	answered bool
}

// timeOut answers the held writes as the runtime does at offsets.commit.timeout.ms:
// TimedOut with COORDINATOR_NOT_AVAILABLE, then the replies; they stay held (release
// decides whether they landed).
func (h *harness) timeOut() {
	for i := range h.held {
		w := &h.held[i]
		if w.answered {
			continue
		}
		w.answered = true
		if w.e.TimedOut != nil {
			h.run(w.e.TimedOut(errCoordinatorNotAvailable))
		}
		for _, r := range w.e.Replies {
			r.Send(r.Response)
		}
	}
}

// release completes the held writes with code (0: they landed, in order).
func (h *harness) release(code int16) {
	held := h.held
	h.held, h.hold = nil, false
	for _, w := range held {
		e := w.e
		h.log = append(h.log, e.Records...)
		h.logBatch(e, code)
		if e.Committed != nil {
			h.run(e.Committed(code))
		}
		if !w.answered {
			for _, r := range e.Replies {
				r.Send(r.Response)
			}
		}
	}
}

// advance moves the clock by d, firing due timers in time order.
func (h *harness) advance(d time.Duration) {
	end := h.now.Add(d)
	for {
		var keys []string
		for k, at := range h.timers {
			if !at.After(end) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			break
		}
		sort.Slice(keys, func(i, j int) bool {
			if !h.timers[keys[i]].Equal(h.timers[keys[j]]) {
				return h.timers[keys[i]].Before(h.timers[keys[j]])
			}
			return keys[i] < keys[j]
		})
		k := keys[0]
		at := h.timers[k]
		delete(h.timers, k)
		if at.After(h.now) {
			h.now = at
		}
		h.run(h.s.Timeout(h.now, k))
	}
	h.now = end
}

// box holds a response once it is delivered.
type box[T any] struct {
	resp  *T
	count int
}

func (b *box[T]) send(r kmsg.Response) {
	b.count++
	b.resp = any(r).(*T)
}

func (b *box[T]) done() bool { return b.resp != nil }

// consumerMeta is a consumer-protocol subscription to topics.
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

type joinOpt func(*kmsg.JoinGroupRequest)

func withVersion(v int16) joinOpt { return func(r *kmsg.JoinGroupRequest) { r.Version = v } }
func withInstance(id string) joinOpt {
	return func(r *kmsg.JoinGroupRequest) {
		r.InstanceID = &id
		if r.Version < 5 {
			r.Version = 5
		}
	}
}
func withProtocols(p ...kmsg.JoinGroupRequestProtocol) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.Protocols = p }
}
func withProtocolType(pt string) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.ProtocolType = pt }
}
func withSession(ms int32) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = ms }
}
func withRebalance(ms int32) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.RebalanceTimeoutMillis = ms }
}

func protocol(name string, meta []byte) kmsg.JoinGroupRequestProtocol {
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = name, meta
	return p
}

// join sends a JoinGroup (v3 by default: no MEMBER_ID_REQUIRED round trip).
func (h *harness) join(groupID, memberID string, opts ...joinOpt) *box[kmsg.JoinGroupResponse] {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 3
	req.Group = groupID
	req.MemberID = memberID
	req.SessionTimeoutMillis = 10000
	req.RebalanceTimeoutMillis = 20000
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{protocol("range", consumerMeta("t"))}
	for _, o := range opts {
		o(req)
	}
	b := &box[kmsg.JoinGroupResponse]{}
	h.run(h.s.JoinGroup(h.now, Client{ID: "client", Host: "/127.0.0.1"}, req, b.send))
	return b
}

func (h *harness) sync(groupID, memberID string, generation int32, assignments map[string]string) *box[kmsg.SyncGroupResponse] {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = groupID, memberID, generation
	ids := make([]string, 0, len(assignments))
	for id := range assignments {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, []byte(assignments[id])
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	b := &box[kmsg.SyncGroupResponse]{}
	h.run(h.s.SyncGroup(h.now, req, b.send))
	return b
}

func (h *harness) heartbeat(groupID, memberID string, generation int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = groupID, memberID, generation
	b := &box[kmsg.HeartbeatResponse]{}
	h.run(h.s.Heartbeat(h.now, req, b.send))
	if !b.done() {
		h.t.Fatalf("heartbeat not answered")
	}
	return b.resp.ErrorCode
}

func (h *harness) leave(groupID string, version int16, members ...string) *kmsg.LeaveGroupResponse {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = version
	req.Group = groupID
	if version < 3 {
		req.MemberID = members[0]
	} else {
		for _, m := range members {
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID = m
			req.Members = append(req.Members, lm)
		}
	}
	b := &box[kmsg.LeaveGroupResponse]{}
	h.run(h.s.LeaveGroup(h.now, req, b.send))
	if !b.done() {
		h.t.Fatalf("leave not answered")
	}
	return b.resp
}

// commit commits offsets {partition: offset} of topic t.
func (h *harness) commit(version int16, groupID, memberID string, generation int32, offsets map[int32]int64) *box[kmsg.OffsetCommitResponse] {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group, req.MemberID, req.Generation = groupID, memberID, generation
	topic := kmsg.NewOffsetCommitRequestTopic()
	topic.Topic = "t"
	ps := make([]int32, 0, len(offsets))
	for p := range offsets {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	for _, p := range ps {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, offsets[p]
		topic.Partitions = append(topic.Partitions, rp)
	}
	req.Topics = append(req.Topics, topic)
	resp := kmsg.NewPtrOffsetCommitResponse()
	b := &box[kmsg.OffsetCommitResponse]{}
	h.run(h.s.OffsetCommit(h.now, req, resp, b.send))
	return b
}

// commitCodes flattens an OffsetCommit response to {partition: code}.
func commitCodes(resp *kmsg.OffsetCommitResponse) map[int32]int16 {
	out := map[int32]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.ErrorCode
		}
	}
	return out
}

// fetched is OffsetFetch of topic t's partitions as {partition: offset}.
func (h *harness) fetched(groupID string, partitions ...int32) map[int32]int64 {
	g := h.s.OffsetFetch(groupID, []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: partitions}}, false)
	out := map[int32]int64{}
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}

func (h *harness) state(groupID string) string {
	return h.s.DescribeGroup(groupID, 5, false).State
}

// stableGroup forms a Stable group of n members (v3 joins) and returns their ids, the
// leader first, and the generation.
func (h *harness) stableGroup(groupID string, n int) ([]string, int32) {
	h.t.Helper()
	var boxes []*box[kmsg.JoinGroupResponse]
	for i := 0; i < n; i++ {
		boxes = append(boxes, h.join(groupID, ""))
	}
	h.advance(0)
	for _, b := range boxes {
		if !b.done() || b.resp.ErrorCode != 0 {
			h.t.Fatalf("join: %+v", b.resp)
		}
	}
	leader := boxes[0].resp.LeaderID
	gen := boxes[0].resp.Generation
	ids := []string{leader}
	assign := map[string]string{}
	for _, b := range boxes {
		if b.resp.MemberID != leader {
			ids = append(ids, b.resp.MemberID)
		}
		assign[b.resp.MemberID] = "a-" + b.resp.MemberID
	}
	var syncs []*box[kmsg.SyncGroupResponse]
	for _, id := range ids[1:] {
		syncs = append(syncs, h.sync(groupID, id, gen, nil))
	}
	syncs = append(syncs, h.sync(groupID, leader, gen, assign))
	for _, sb := range syncs {
		if !sb.done() || sb.resp.ErrorCode != 0 {
			h.t.Fatalf("sync: %+v", sb.resp)
		}
	}
	if st := h.state(groupID); st != "Stable" {
		h.t.Fatalf("state %s, want Stable", st)
	}
	return ids, gen
}

func (h *harness) heartbeatStatic(groupID, memberID, instanceID string, generation int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation, req.InstanceID = groupID, memberID, generation, &instanceID
	b := &box[kmsg.HeartbeatResponse]{}
	h.run(h.s.Heartbeat(h.now, req, b.send))
	return b.resp.ErrorCode
}

func (h *harness) leaveStatic(groupID, instanceID string) *kmsg.LeaveGroupResponse {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 4
	req.Group = groupID
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.InstanceID = &instanceID
	req.Members = []kmsg.LeaveGroupRequestMember{lm}
	b := &box[kmsg.LeaveGroupResponse]{}
	h.run(h.s.LeaveGroup(h.now, req, b.send))
	return b.resp
}
