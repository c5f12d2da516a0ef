package share

// Expire ends the acquisition locks whose deadline is at or before nowMs: their records
// become Available again, or Archived once delivered DeliveryCountLimit times (Kafka's
// AcquisitionLockTimerTask and SharePartition.releaseAcquisitionLockOnTimeout).
func (p *Partition) Expire(nowMs int64) Change {
	p.begin()
	p.update(p.startOffset, p.EndOffset(), func(r *run) bool {
		if r.state != Acquired || r.deadlineMs > nowMs {
			return false
		}
		r.state, r.member, r.deadlineMs = p.releaseState(r.deliveryCount), "", 0
		return true
	})
	return p.finish()
}

// NextDeadline is the earliest acquisition-lock deadline, when to call Expire next; ok
// is false when no record is acquired.
func (p *Partition) NextDeadline() (deadlineMs int64, ok bool) {
	for _, r := range p.runs {
		if r.state == Acquired && (!ok || r.deadlineMs < deadlineMs) {
			deadlineMs, ok = r.deadlineMs, true
		}
	}
	return deadlineMs, ok
}

// AdvanceLogStartOffset moves the SPSO to a new log start offset when retention or
// DeleteRecords removed the records before it (Kafka's
// SharePartition.updateCacheAndOffsets): the in-flight records before it are forgotten,
// acquired ones included (their acknowledgements are then ignored, as for any offset
// before the SPSO). A log start offset at or before the SPSO changes nothing.
func (p *Partition) AdvanceLogStartOffset(logStartOffset int64) Change {
	p.begin()
	if logStartOffset <= p.startOffset {
		return p.finish()
	}
	if len(p.runs) > 0 && logStartOffset <= p.EndOffset() {
		p.splitAt(logStartOffset)
		p.runs = append(p.runs[:0], p.runs[p.find(logStartOffset):]...)
	} else {
		p.runs = p.runs[:0]
	}
	p.startOffset = logStartOffset
	return p.finish()
}
