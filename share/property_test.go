package share

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The share partition against a per-offset reference model: random fetches by several
// members (both acquire modes, read_committed, small record-lock limits), valid and
// invalid acknowledgements of every type, lock expiries, members leaving, and leader
// changes that rebuild the partition from the __share_group_state records written so
// far. After every step: a record is Acquired by at most one member and only when the
// model allows it, no Acknowledged record is acquired again, delivery counts never go
// down (but for a member's release, by one, as Kafka), the SPSO moves only forward and
// only past finished records, acknowledgement errors are the model's, and a partition
// loaded from the records written equals the live one.

// modelRecord is one offset in the model.
type modelRecord struct {
	state      RecordState
	count      int16
	member     string
	deadlineMs int64
}

type sim struct {
	c        chooser
	cfg      Config
	log      *simLog
	p        *Partition
	stateLog *StateLog
	written  []Record
	epoch    int32
	nowMs    int64
	members  []string

	model map[int64]*modelRecord // offsets in [SPSO, SPEO]
	// logStart is the log start offset: retention removed the records before it.
	logStart int64
	spso     int64
	// accepted holds every offset ever acknowledged with ACCEPT.
	accepted map[int64]bool
	// deliveries counts ACCEPTs per offset (at most one).
	steps int
}

func newSim(c chooser, logLen int64) *sim {
	cfg := Config{
		RecordLockDurationMs: int64(100 + c.intn(200)),
		DeliveryCountLimit:   int16(1 + c.intn(5)),
		MaxRecordLocks:       int64(4 + c.intn(40)),
	}
	s := &sim{c: c, cfg: cfg, log: newSimLog(c, logLen), members: []string{"m1", "m2", "m3"},
		model: map[int64]*modelRecord{}, accepted: map[int64]bool{}, stateLog: &StateLog{Key: Key{GroupID: "g", Partition: 3}, SnapshotUpdateRecords: 1 + c.intn(6)}}
	s.stateLog.Key.TopicID[0] = 7
	s.p = NewPartition(s.stateLog.Key, cfg, 0, s.epoch)
	s.written = append(s.written, s.stateLog.Initialize(s.p.Snapshot(), s.nowMs))
	return s
}

func (s *sim) fail(format string, args ...any) error {
	return fmt.Errorf("step %d: %s\nin flight: %+v", s.steps, fmt.Sprintf(format, args...), s.p.InFlight())
}

// write hands a change to the share coordinator, as the leader does.
func (s *sim) write(c Change) error {
	if c.Empty() {
		return nil
	}
	r, err := s.stateLog.Write(c, s.epoch, s.nowMs)
	if err != nil {
		return s.fail("write: %v", err)
	}
	s.written = append(s.written, r)
	return nil
}

// step runs one random operation and checks the invariants.
func (s *sim) step() error {
	s.steps++
	s.nowMs += int64(s.c.intn(80))
	before := s.snapshotModel()
	var err error
	switch k := s.c.intn(20); {
	case k < 8:
		err = s.acquire()
	case k < 15:
		err = s.acknowledge()
	case k < 17:
		if d, ok := s.p.NextDeadline(); ok && s.c.intn(2) == 0 {
			s.nowMs = max(s.nowMs, d)
		}
		err = s.write(s.p.Expire(s.nowMs))
		s.modelExpire()
	case k < 18 && s.c.intn(3) == 0:
		s.retention()
	case k < 18 && s.c.intn(2) == 0:
		s.compact()
	case k < 18:
		m := s.members[s.c.intn(len(s.members))]
		err = s.write(s.p.ReleaseMember(m))
		s.modelRelease(m)
	default:
		err = s.leaderChange()
	}
	if err != nil {
		return err
	}
	return s.check(before)
}

func (s *sim) snapshotModel() map[int64]modelRecord {
	out := make(map[int64]modelRecord, len(s.model))
	for o, r := range s.model {
		out[o] = *r
	}
	return out
}

func (s *sim) acquire() error {
	member := s.members[s.c.intn(len(s.members))]
	fetch := s.p.NextFetchOffset()
	batches, aborted := s.log.read(fetch, 1+s.c.intn(5))
	req := AcquireRequest{MemberID: member, FetchOffset: fetch, Batches: batches, MaxRecords: 1 + s.c.intn(12),
		BatchSize: s.c.intn(6), Mode: AcquireMode(s.c.intn(2)), ReadCommitted: true, AbortedTransactions: aborted}
	windowBefore, endBefore, hadRuns := s.p.InFlightRecords(), s.p.EndOffset(), len(s.p.runs) > 0
	got, ch := s.p.Acquire(s.nowMs, req)
	if err := s.write(ch); err != nil {
		return err
	}
	returned := map[int64]int16{}
	var n int64
	prevLast := int64(-1)
	for _, a := range got {
		if a.FirstOffset > a.LastOffset || a.FirstOffset <= prevLast {
			return s.fail("acquired ranges out of order: %+v", got)
		}
		prevLast = a.LastOffset
		for o := a.FirstOffset; o <= a.LastOffset; o++ {
			returned[o] = a.DeliveryCount
			n++
		}
	}
	maxBatch := int64(0)
	for _, b := range batches {
		maxBatch = max(maxBatch, b.LastOffset-b.BaseOffset+1)
	}
	if req.Mode == RecordLimit && n > int64(req.MaxRecords) {
		return s.fail("record_limit acquired %d records, max %d", n, req.MaxRecords)
	}
	if n > int64(req.MaxRecords)+maxBatch {
		return s.fail("batch_optimized acquired %d records, max %d and batches of %d", n, req.MaxRecords, maxBatch)
	}
	for o, count := range returned {
		if !s.log.deliverable(o) {
			return s.fail("offset %d acquired but it holds no deliverable record", o)
		}
		if s.accepted[o] {
			return s.fail("offset %d acquired after it was acknowledged", o)
		}
		if o < s.spso {
			return s.fail("offset %d acquired before the SPSO %d", o, s.spso)
		}
		m, inFlight := s.model[o]
		var prev int16
		if inFlight {
			if m.state != Available {
				return s.fail("offset %d acquired while %s", o, m.state)
			}
			prev = m.count
		} else if hadRuns && windowBefore >= s.cfg.MaxRecordLocks && o > endBefore {
			return s.fail("offset %d acquired past the window with %d records in flight", o, windowBefore)
		}
		if count != prev+1 {
			return s.fail("offset %d delivered with count %d, was %d", o, count, prev)
		}
		s.model[o] = &modelRecord{state: Acquired, count: count, member: member, deadlineMs: s.nowMs + s.cfg.RecordLockDurationMs}
	}
	for _, b := range batches {
		if b.BaseOffset < s.logStart && b.LastOffset >= s.logStart {
			return s.fail("read a batch across the log start")
		}
	}
	// Every other offset of the window either stayed as it was, was archived because
	// the read shows it empty or undeliverable, or joined the window Available.
	for _, r := range s.p.runs {
		for o := r.first; o <= r.last; o++ {
			if _, ok := returned[o]; ok {
				continue
			}
			m, inFlight := s.model[o]
			switch {
			case inFlight && m.state == r.state && m.count == r.deliveryCount:
			case (!inFlight || m.state == Available) && r.state == Archived && !s.log.deliverable(o):
				s.model[o] = &modelRecord{state: Archived, count: r.deliveryCount}
			case !inFlight && r.state == Available && r.deliveryCount == 0:
				s.model[o] = &modelRecord{state: Available}
			default:
				return s.fail("offset %d became %s/%d in an acquisition, model %+v", o, r.state, r.deliveryCount, m)
			}
		}
	}
	// Offsets skipped before the window (the read shows them empty) are finished.
	// Offsets the SPSO passed were skipped (the read shows them empty) or archived
	// as such.
	for o := s.spso; o < s.p.StartOffset(); o++ {
		m, ok := s.model[o]
		switch {
		case ok && m.state.terminal():
		case s.log.deliverable(o):
			return s.fail("SPSO moved past offset %d, never delivered", o)
		case !ok || m.state == Available:
			s.model[o] = &modelRecord{state: Archived}
		}
	}
	return nil
}

func (s *sim) acknowledge() error {
	member := s.members[s.c.intn(len(s.members))]
	var mine []int64
	for o, r := range s.model {
		if r.state == Acquired && (r.member == member || s.c.intn(8) == 0) {
			mine = append(mine, o)
		}
	}
	slices.Sort(mine)
	var batches []AcknowledgementBatch
	for i := 0; i < len(mine); {
		if s.c.intn(3) == 0 {
			i++
			continue
		}
		j := i
		for j+1 < len(mine) && mine[j+1] == mine[j]+1 && s.c.intn(4) != 0 {
			j++
		}
		b := AcknowledgementBatch{FirstOffset: mine[i], LastOffset: mine[j]}
		if s.c.intn(2) == 0 {
			b.AcknowledgeTypes = []AcknowledgeType{AcknowledgeType(s.c.intn(5))}
		} else {
			for range mine[j] - mine[i] + 1 {
				b.AcknowledgeTypes = append(b.AcknowledgeTypes, AcknowledgeType(s.c.intn(5)))
			}
		}
		batches = append(batches, b)
		i = j + 1
	}
	switch s.c.intn(12) {
	case 0: // past the end
		e := s.p.EndOffset() + 1
		batches = append(batches, ack(e, e+int64(s.c.intn(3)), AckAccept))
	case 1: // a bad type list
		if len(batches) > 0 {
			batches[0].AcknowledgeTypes = append(batches[0].AcknowledgeTypes, AckAccept, AckAccept)
		}
	case 2: // a record that is not acquired
		if len(s.p.runs) > 0 {
			o := s.p.startOffset + int64(s.c.intn(int(s.p.InFlightRecords())))
			batches = append(batches[:0:0], ack(o, o, AckAccept))
		}
	case 3: // out of order
		if len(batches) > 1 {
			batches[0], batches[1] = batches[1], batches[0]
		}
	}
	wantErr := s.modelAckError(member, batches)
	ch, err := s.p.Acknowledge(s.nowMs, member, batches)
	if errKind(err) != wantErr {
		return s.fail("acknowledge %+v by %s: error %v, model %s", batches, member, err, wantErr)
	}
	if err != nil {
		if !ch.Empty() {
			return s.fail("a failed acknowledgement changed state: %+v", ch)
		}
		return nil
	}
	for _, b := range batches {
		for o := max(b.FirstOffset, s.spso); o <= b.LastOffset; o++ {
			m := s.model[o]
			switch t := b.typeAt(o); t {
			case AckRenew:
				m.deadlineMs = s.nowMs + s.cfg.RecordLockDurationMs
				continue
			case AckAccept:
				m.state = Acknowledged
				s.accepted[o] = true
			case AckRelease:
				m.state = Available
				if m.count >= s.cfg.DeliveryCountLimit {
					m.state = Archived
				}
			default:
				m.state = Archived
			}
			m.member, m.deadlineMs = "", 0
		}
	}
	return s.write(ch)
}

// modelAckError is the error kind the model expects, checking batch by batch.
func (s *sim) modelAckError(member string, batches []AcknowledgementBatch) string {
	prev := int64(-1)
	end := s.spso - 1
	for o := range s.model {
		end = max(end, o)
	}
	for i, b := range batches {
		n := b.LastOffset - b.FirstOffset + 1
		if n <= 0 || b.FirstOffset < 0 || (i > 0 && b.FirstOffset <= prev) ||
			(len(b.AcknowledgeTypes) != 1 && int64(len(b.AcknowledgeTypes)) != n) {
			return "INVALID_REQUEST"
		}
		prev = b.LastOffset
		for _, t := range b.AcknowledgeTypes {
			if t < 0 || t > AckRenew {
				return "INVALID_REQUEST"
			}
		}
		if b.LastOffset < s.spso {
			continue
		}
		if b.LastOffset > end {
			return "INVALID_REQUEST"
		}
		for o := max(b.FirstOffset, s.spso); o <= b.LastOffset; o++ {
			if m := s.model[o]; m.state != Acquired || m.member != member {
				return "INVALID_RECORD_STATE"
			}
		}
	}
	return "nil"
}

// retention removes the log's batches before a later batch, as segment deletion does.
func (s *sim) retention() {
	var starts []int64
	for _, b := range s.log.batches {
		if b.BaseOffset > s.logStart && b.BaseOffset <= s.p.EndOffset()+3 {
			starts = append(starts, b.BaseOffset)
		}
	}
	if len(starts) == 0 {
		return
	}
	s.logStart = starts[s.c.intn(len(starts))]
	for i := range s.log.batches {
		if s.log.batches[i].LastOffset < s.logStart {
			s.log.batches[i].hole = true
		}
	}
	ch := s.p.AdvanceLogStartOffset(s.logStart)
	for o := range s.model {
		if o < s.logStart {
			s.model[o].state = Archived // gone with the log; check forgets it
		}
	}
	_ = s.write(ch)
}

// compact removes a plain batch from the log, as the log cleaner does with records
// whose keys were written again.
func (s *sim) compact() {
	i := s.c.intn(len(s.log.batches))
	if b := &s.log.batches[i]; !b.Transactional {
		b.hole = true
	}
}

func (s *sim) modelExpire() {
	for _, m := range s.model {
		if m.state == Acquired && m.deadlineMs <= s.nowMs {
			m.state, m.member, m.deadlineMs = Available, "", 0
			if m.count >= s.cfg.DeliveryCountLimit {
				m.state = Archived
			}
		}
	}
}

func (s *sim) modelRelease(member string) {
	for _, m := range s.model {
		if m.state == Acquired && m.member == member {
			m.state, m.member, m.deadlineMs = Available, "", 0
			m.count = max(m.count-1, 0)
		}
	}
}

// loadFromRecords replays every record written into a fresh share coordinator and
// loads the partition from it, as a new leader does.
func (s *sim) loadFromRecords() (*Partition, Change, error) {
	l := &StateLog{Key: s.stateLog.Key}
	for _, r := range s.written {
		if err := l.Replay(r); err != nil {
			return nil, Change{}, s.fail("replay: %v", err)
		}
	}
	if !l.Loaded {
		return nil, Change{}, s.fail("no snapshot replayed")
	}
	p, ch := Load(l.Key, s.cfg, l.State, s.epoch)
	return p, ch, nil
}

func (s *sim) leaderChange() error {
	s.epoch++
	p, ch, err := s.loadFromRecords()
	if err != nil {
		return err
	}
	s.p = p
	for o, m := range s.model {
		// Records never delivered past the last state batch are not part of the
		// durable state: the new leader reads them again.
		if (o > p.EndOffset() || len(p.runs) == 0) && m.state == Available && m.count == 0 {
			delete(s.model, o)
			continue
		}
		if m.state == Acquired {
			m.state, m.member, m.deadlineMs = Available, "", 0
		}
		if m.state == Available && m.count >= s.cfg.DeliveryCountLimit {
			m.state = Archived
		}
	}
	return s.write(ch)
}

// check compares the partition with the model after a step.
func (s *sim) check(before map[int64]modelRecord) error {
	if err := checkRuns(s.p); err != nil {
		return s.fail("%v", err)
	}
	// The SPSO moves forward, and only past finished records.
	spso := s.p.StartOffset()
	if spso < s.spso {
		return s.fail("SPSO went back from %d to %d", s.spso, spso)
	}
	for o := s.spso; o < spso; o++ {
		if m, ok := s.model[o]; ok && !m.state.terminal() && o >= s.logStart {
			return s.fail("SPSO %d moved past offset %d in %s", spso, o, m.state)
		}
		delete(s.model, o)
	}
	s.spso = spso
	// Model and partition agree on every in-flight offset.
	for o := spso; o <= s.p.EndOffset() && len(s.p.runs) > 0; o++ {
		r := s.p.runs[s.p.find(o)]
		m, ok := s.model[o]
		if !ok {
			return s.fail("offset %d in flight as %s, not in the model", o, r.state)
		}
		if m.state != r.state || m.count != r.deliveryCount || m.member != r.member || (r.state == Acquired && m.deadlineMs != r.deadlineMs) {
			return s.fail("offset %d is %s/%d/%q/%d, model %+v", o, r.state, r.deliveryCount, r.member, r.deadlineMs, *m)
		}
	}
	for o, m := range s.model {
		if o > s.p.EndOffset() || len(s.p.runs) == 0 {
			return s.fail("model offset %d (%+v) is not in flight", o, *m)
		}
		if b, ok := before[o]; ok && m.count < b.count && !(m.count == b.count-1 && b.state == Acquired && m.state == Available) {
			return s.fail("offset %d delivery count went from %d to %d", o, b.count, m.count)
		}
	}
	// A partition loaded from the records written equals the live one.
	loaded, _, err := s.loadFromRecords()
	if err != nil {
		return err
	}
	from := min(spso, loaded.StartOffset())
	to := max(s.p.EndOffset(), loaded.EndOffset(), from)
	live, got := durableView(s.p, from, to), durableView(loaded, from, to)
	if !slices.Equal(live, got) {
		return s.fail("loaded from the records: SPSO %d %+v\nlive: SPSO %d %+v\nloaded in flight: %+v", loaded.StartOffset(), got, spso, live, loaded.InFlight())
	}
	return nil
}

// drain has one member take and accept everything left: every deliverable record of
// the log ends up finished, and the SPSO reaches the end of the log.
func (s *sim) drain() error {
	end := int64(0) // past the last batch a read can return
	for _, b := range s.log.batches {
		if !b.hole {
			end = b.LastOffset + 1
		}
	}
	for i := 0; i < 10000 && s.p.StartOffset() < end; i++ {
		s.nowMs += 2 * s.cfg.RecordLockDurationMs
		if err := s.write(s.p.Expire(s.nowMs)); err != nil {
			return err
		}
		s.modelExpire()
		fetch := s.p.NextFetchOffset()
		batches, aborted := s.log.read(fetch, 3)
		got, ch := s.p.Acquire(s.nowMs, AcquireRequest{MemberID: "drain", FetchOffset: fetch, Batches: batches, MaxRecords: 10, ReadCommitted: true, AbortedTransactions: aborted})
		if err := s.write(ch); err != nil {
			return err
		}
		var acks []AcknowledgementBatch
		for _, a := range got {
			acks = append(acks, ack(a.FirstOffset, a.LastOffset, AckAccept))
			for o := a.FirstOffset; o <= a.LastOffset; o++ {
				if s.accepted[o] {
					return s.fail("drain: offset %d acquired after it was acknowledged", o)
				}
				s.accepted[o] = true
			}
		}
		ch, err := s.p.Acknowledge(s.nowMs, "drain", acks)
		if err != nil {
			return s.fail("drain: %v", err)
		}
		if err := s.write(ch); err != nil {
			return err
		}
	}
	if s.p.StartOffset() < end {
		return s.fail("drain stopped at SPSO %d, log end %d", s.p.StartOffset(), end)
	}
	return nil
}

func TestPartitionModel(t *testing.T) {
	for seed := range uint64(300) {
		c := randChooser{rand.New(rand.NewPCG(seed, seed*7919))}
		s := newSim(c, int64(20+c.intn(100)))
		for range 150 {
			if err := s.step(); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		// Forget the model before draining: it no longer follows the partition.
		if err := s.drain(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
