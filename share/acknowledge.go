package share

import "fmt"

// AcknowledgementBatch is one AcknowledgementBatches entry of ShareAcknowledge (or of
// ShareFetch): a range of offsets and either one acknowledge type for all of them or
// one per offset.
type AcknowledgementBatch struct {
	FirstOffset      int64
	LastOffset       int64
	AcknowledgeTypes []AcknowledgeType
}

// typeAt is the acknowledge type of offset o of b.
func (b AcknowledgementBatch) typeAt(o int64) AcknowledgeType {
	if len(b.AcknowledgeTypes) == 1 {
		return b.AcknowledgeTypes[0]
	}
	return b.AcknowledgeTypes[o-b.FirstOffset]
}

// Acknowledge applies memberID's acknowledgements (Kafka's SharePartition.acknowledge):
// ACCEPT makes a record Acknowledged, REJECT and gaps (type 0) Archived, RELEASE
// Available again (Archived once it was delivered DeliveryCountLimit times), RENEW
// (KIP-1222) extends the lock to nowMs + the record lock duration, the record staying
// Acquired. The batches are all applied or none: a malformed batch, or one naming
// offsets past the SPEO, is ErrInvalidRequest; an offset that is not Acquired by
// memberID is ErrInvalidRecordState. Offsets before the SPSO are ignored (already
// finished). The SPSO then moves past the finished prefix.
func (p *Partition) Acknowledge(nowMs int64, memberID string, batches []AcknowledgementBatch) (Change, error) {
	p.begin()
	if err := p.checkAcknowledgements(memberID, batches); err != nil {
		return p.finish(), err
	}
	for _, b := range batches {
		for o := max(b.FirstOffset, p.startOffset); o <= b.LastOffset; {
			t, end := b.typeAt(o), o
			for end < b.LastOffset && b.typeAt(end+1) == t {
				end++
			}
			p.acknowledge(nowMs, o, end, t)
			o = end + 1
		}
	}
	return p.finish(), nil
}

// checkAcknowledgements validates the batches before anything changes (Kafka's
// ShareAcknowledge request validation and fetchSubMapForAcknowledgementBatch).
func (p *Partition) checkAcknowledgements(memberID string, batches []AcknowledgementBatch) error {
	prevLast := int64(-1)
	for i, b := range batches {
		n := b.LastOffset - b.FirstOffset + 1
		switch {
		case b.FirstOffset < 0 || n <= 0:
			return fmt.Errorf("%w: batch %d has offsets %d to %d", ErrInvalidRequest, i, b.FirstOffset, b.LastOffset)
		case i > 0 && b.FirstOffset <= prevLast:
			return fmt.Errorf("%w: batch %d starts at %d, not after %d", ErrInvalidRequest, i, b.FirstOffset, prevLast)
		case len(b.AcknowledgeTypes) != 1 && int64(len(b.AcknowledgeTypes)) != n:
			return fmt.Errorf("%w: batch %d has %d acknowledge types for %d offsets", ErrInvalidRequest, i, len(b.AcknowledgeTypes), n)
		}
		prevLast = b.LastOffset
		for _, t := range b.AcknowledgeTypes {
			if t < AckGap || t > AckRenew {
				return fmt.Errorf("%w: invalid acknowledge type %d", ErrInvalidRequest, t)
			}
		}
		if b.LastOffset < p.startOffset {
			continue
		}
		if len(p.runs) == 0 || b.LastOffset > p.EndOffset() {
			return fmt.Errorf("%w: offsets %d to %d are past the acquired records (end offset %d)", ErrInvalidRequest, b.FirstOffset, b.LastOffset, p.EndOffset())
		}
		for o := max(b.FirstOffset, p.startOffset); o <= b.LastOffset; {
			r := p.runs[p.find(o)]
			if r.state != Acquired {
				return fmt.Errorf("%w: offset %d is %s", ErrInvalidRecordState, o, r.state)
			}
			if r.member != memberID {
				return fmt.Errorf("%w: offset %d is acquired by another member", ErrInvalidRecordState, o)
			}
			o = r.last + 1
		}
	}
	return nil
}

// acknowledge applies type t to [first, last], all Acquired by the member.
func (p *Partition) acknowledge(nowMs, first, last int64, t AcknowledgeType) {
	if t == AckRenew {
		deadline := p.lockDeadline(nowMs)
		p.update(first, last, func(r *run) bool {
			r.deadlineMs = deadline
			return false // a lock is not durable state
		})
		return
	}
	p.update(first, last, func(r *run) bool {
		switch t {
		case AckAccept:
			r.state = Acknowledged
		case AckRelease:
			r.state = p.releaseState(r.deliveryCount)
		default: // AckReject, AckGap
			r.state = Archived
		}
		r.member, r.deadlineMs = "", 0
		return true
	})
}

// ReleaseMember makes every record memberID holds Available again, as when its share
// session closes or it leaves the group (Kafka's SharePartition.releaseAcquiredRecords).
// As in Kafka, the delivery count goes back down by one: the records are taken to have
// not reached the member's application.
func (p *Partition) ReleaseMember(memberID string) Change {
	p.begin()
	p.releaseMember(memberID, p.startOffset, p.EndOffset())
	return p.finish()
}

// ReleaseMemberRecords is ReleaseMember for the given ranges only: those one
// acquisition handed to a share session that closed meanwhile, leaving alone what the
// member holds through a newer session.
func (p *Partition) ReleaseMemberRecords(memberID string, ranges []AcquiredRecords) Change {
	p.begin()
	for _, r := range ranges {
		if len(p.runs) > 0 && r.LastOffset >= p.startOffset && r.FirstOffset <= p.EndOffset() {
			p.releaseMember(memberID, max(r.FirstOffset, p.startOffset), min(r.LastOffset, p.EndOffset()))
		}
	}
	return p.finish()
}

// releaseMember makes the records of [first, last] that memberID holds Available.
func (p *Partition) releaseMember(memberID string, first, last int64) {
	p.update(first, last, func(r *run) bool {
		if r.state != Acquired || r.member != memberID {
			return false
		}
		r.state, r.member, r.deadlineMs = Available, "", 0
		r.deliveryCount = max(r.deliveryCount-1, 0)
		return true
	})
}
