package share

// AcquireRequest is one share partition's part of a ShareFetch: who fetches, what the
// log read returned and the limits.
type AcquireRequest struct {
	// MemberID is the fetching share group member.
	MemberID string
	// FetchOffset is the offset the log read started at (NextFetchOffset when the
	// read was planned).
	FetchOffset int64
	// Batches are the record batches the read returned, all of them, in offset
	// order. Offsets between them (and between FetchOffset and the first) hold no
	// record: compacted or deleted.
	Batches []FetchedBatch
	// MaxRecords is ShareFetch's MaxRecords (the client's max.poll.records).
	MaxRecords int
	// BatchSize is ShareFetch's BatchSize: in batch_optimized mode an acquired range
	// is cut at a fetched batch boundary once it is this long (0: never cut).
	BatchSize int
	// Mode is the acquire mode (share.acquire.mode, KIP-1206).
	Mode AcquireMode
	// ReadCommitted is share.isolation.level=read_committed: aborted transactions'
	// records are Archived instead of delivered.
	ReadCommitted bool
	// AbortedTransactions is the Fetch response's list for the read (read_committed).
	AbortedTransactions []AbortedTransaction
}

// AcquiredRecords is one entry of ShareFetch's AcquiredRecords: a range of records now
// acquired by the member, delivered for the DeliveryCount-th time.
type AcquiredRecords struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryCount int16
}

// acquisition is the state of one Acquire call.
type acquisition struct {
	p         *Partition
	req       AcquireRequest
	deadline  int64
	limit     int64 // records to acquire at most (soft in batch_optimized mode)
	count     int64 // records acquired so far
	done      bool  // stop acquiring
	batchBase int64 // base offset of the fetched batch being worked on
	batchLen  int64 // its number of offsets
	// throttleCap, once a redelivered record is throttled, is the most records this
	// acquisition takes.
	throttleCap int64
	out         []AcquiredRecords
}

// Acquire acquires for req.MemberID the Available records of the log read in req, under
// a lock until nowMs + the record lock duration, and returns them as ShareFetch does,
// with the change to write (Kafka's SharePartition.acquire):
//   - records before the SPSO are skipped; records already in flight are acquired
//     again only when Available (delivery count + 1); records past the SPEO join the
//     in-flight window with delivery count 1;
//   - batch_optimized: whole fetched batches until MaxRecords is reached (a soft
//     limit); record_limit: exactly MaxRecords at most, the rest of a split batch
//     stays Available;
//   - new records only while the window holds fewer than the record-lock limit
//     (MaxRecords is capped to the room left); a full window still lets Available
//     records inside it be acquired again;
//   - redeliveries are throttled so that a poison record does not take a batch down
//     with it: a record on its last delivery attempt (delivery count limit - 1, limit
//     above 2) is delivered alone, and one delivered at least half the limit (at least
//     2) times starts an acquisition of at most the batch's size halved once per
//     delivery past that (Kafka's throttleRecordsDeliveryLimit);
//   - control batches, aborted transactions under read_committed, and Available
//     records at offsets the read shows empty are Archived, never delivered.
func (p *Partition) Acquire(nowMs int64, req AcquireRequest) ([]AcquiredRecords, Change) {
	p.begin()
	if req.MaxRecords <= 0 || len(req.Batches) == 0 {
		return nil, p.finish()
	}
	limit, lastAllowed, ok := p.acquireLimits(req)
	if !ok {
		return nil, p.finish()
	}
	a := &acquisition{p: p, req: req, deadline: p.lockDeadline(nowMs), limit: limit}
	skip := undeliverable(req.Batches, req.ReadCommitted, req.AbortedTransactions)
	p.archiveHoles(req, lastAllowed)
	for i, b := range req.Batches {
		if a.done || b.BaseOffset > lastAllowed || a.count >= a.limit {
			break
		}
		lo, hi := max(b.BaseOffset, p.startOffset), min(b.LastOffset, lastAllowed)
		if lo > hi {
			continue
		}
		if skip[i] {
			p.archive(lo, hi)
			continue
		}
		a.batchBase, a.batchLen = b.BaseOffset, b.LastOffset-b.BaseOffset+1
		if len(p.runs) > 0 && lo <= p.EndOffset() {
			a.acquireInFlight(lo, min(hi, p.EndOffset()))
			a.done = a.done || a.throttleCap > 0
		}
		if !a.done && hi >= p.nextOffset() {
			a.acquireNew(max(lo, p.nextOffset()), hi)
		}
	}
	return a.out, p.finish()
}

// acquireLimits caps the records to acquire by the room left under the record-lock
// limit and, with no room, restricts the acquisition to the window (Kafka's
// lastOffsetAndMaxRecordsToAcquire). ok is false when nothing may be acquired.
func (p *Partition) acquireLimits(req AcquireRequest) (limit, lastAllowed int64, ok bool) {
	lastAllowed = req.Batches[len(req.Batches)-1].LastOffset
	limit = min(int64(req.MaxRecords), p.cfg.MaxRecordLocks-p.InFlightRecords())
	if limit > 0 {
		return limit, lastAllowed, true
	}
	if len(p.runs) == 0 || req.FetchOffset > p.EndOffset() {
		return 0, 0, false
	}
	limit = min(int64(req.MaxRecords), p.EndOffset()-req.FetchOffset+1)
	return limit, min(lastAllowed, p.EndOffset()), limit > 0
}

// archiveHoles archives the Available in-flight records at offsets the read shows to
// hold nothing (removed by compaction or retention), so that the SPSO can move on
// (Kafka's maybeArchiveStaleBatches).
func (p *Partition) archiveHoles(req AcquireRequest, lastAllowed int64) {
	from := req.FetchOffset
	for _, b := range req.Batches {
		if b.BaseOffset > from {
			p.archiveAvailable(from, min(b.BaseOffset-1, lastAllowed))
		}
		from = max(from, b.LastOffset+1)
	}
}

// archiveAvailable archives the Available records of [first, last] in the window.
func (p *Partition) archiveAvailable(first, last int64) {
	p.update(first, last, func(r *run) bool {
		if r.state != Available {
			return false
		}
		r.state = Archived
		return true
	})
}

// archive archives [first, last]: Available records in the window, and the offsets
// past it, which join the window as Archived.
func (p *Partition) archive(first, last int64) {
	p.archiveAvailable(first, last)
	if last >= p.nextOffset() {
		from := max(first, p.nextOffset())
		p.fillTo(from)
		p.appendRun(run{first: from, last: last, state: Archived})
	}
}

// fillTo archives the offsets between the window and o, which the log does not hold.
func (p *Partition) fillTo(o int64) {
	if len(p.runs) > 0 && p.nextOffset() < o {
		p.appendRun(run{first: p.nextOffset(), last: o - 1, state: Archived})
	}
}

// update applies f to the runs covering [first, last] (clipped to the window) and marks
// the ranges where f reports a change.
func (p *Partition) update(first, last int64, f func(*run) bool) {
	i, j := p.span(first, last)
	for k := i; k < j; k++ {
		if f(&p.runs[k]) {
			p.mark(p.runs[k].first, p.runs[k].last)
		}
	}
}

// acquireInFlight acquires the Available records of [lo, hi], inside the window.
func (a *acquisition) acquireInFlight(lo, hi int64) {
	p := a.p
	for o := lo; o <= hi && !a.done; {
		r := p.runs[p.find(o)]
		end := min(r.last, hi)
		if r.state != Available {
			o = end + 1
			continue
		}
		n := end - o + 1
		alone := p.cfg.DeliveryCountLimit > 2 && r.deliveryCount == p.cfg.DeliveryCountLimit-1
		if alone {
			if a.count > 0 {
				a.done = true
				return
			}
			n = 1
		}
		if throttle := p.throttleLimit(); r.deliveryCount >= throttle && a.throttleCap == 0 {
			if a.count > 0 {
				a.done = true
				return
			}
			a.throttleCap = max(1, a.batchLen>>(r.deliveryCount-throttle+1))
		}
		if a.throttleCap > 0 {
			n = min(n, a.throttleCap-a.count)
		}
		if a.req.Mode == RecordLimit {
			n = min(n, a.limit-a.count)
		}
		count := r.deliveryCount + 1
		p.update(o, o+n-1, func(r *run) bool {
			r.state, r.deliveryCount, r.member, r.deadlineMs = Acquired, count, a.req.MemberID, a.deadline
			return true
		})
		a.emit(o, o+n-1, count)
		o += n
		a.done = alone || (a.req.Mode == RecordLimit && a.count >= a.limit) ||
			(a.throttleCap > 0 && a.count >= a.throttleCap)
	}
}

// throttleLimit is the delivery count from which redeliveries are throttled: half the
// delivery-count limit rounded up, at least 2.
func (p *Partition) throttleLimit() int16 {
	return max(2, (p.cfg.DeliveryCountLimit+1)/2)
}

// acquireNew adds [from, hi], past the window, as acquired records with delivery count
// 1; in record_limit mode only up to the limit, the rest Available.
func (a *acquisition) acquireNew(from, hi int64) {
	p := a.p
	p.fillTo(from)
	n := hi - from + 1
	if a.req.Mode == RecordLimit {
		n = min(n, a.limit-a.count)
	}
	p.appendRun(run{first: from, last: from + n - 1, state: Acquired, deliveryCount: 1, member: a.req.MemberID, deadlineMs: a.deadline})
	a.emit(from, from+n-1, 1)
	if from+n-1 < hi {
		p.appendRun(run{first: from + n, last: hi, state: Available})
	}
	a.done = a.req.Mode == RecordLimit && a.count >= a.limit
}

// emit adds [first, last] to the response, joining it to the previous range when they
// touch and share the delivery count, unless BatchSize asks for a cut there.
func (a *acquisition) emit(first, last int64, deliveryCount int16) {
	a.count += last - first + 1
	if n := len(a.out); n > 0 {
		l := &a.out[n-1]
		cut := a.req.Mode == BatchOptimized && a.req.BatchSize > 0 && first == a.batchBase &&
			l.LastOffset-l.FirstOffset+1 >= int64(a.req.BatchSize)
		if l.LastOffset+1 == first && l.DeliveryCount == deliveryCount && !cut {
			l.LastOffset = last
			return
		}
	}
	a.out = append(a.out, AcquiredRecords{FirstOffset: first, LastOffset: last, DeliveryCount: deliveryCount})
}
