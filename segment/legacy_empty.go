package segment

// Empty batches.
//
// Kafka's cleaner writes an empty batch (a header with no records) only to keep an
// idempotent or transactional producer's last sequence and epoch, and clients are
// meant to skip such batches. Not all do: kafkajs 2.2.4 stalls and kafka-python 2.0.2
// crashes on a fetch answer made only of empty batches. Consumers need none of them
// (they track offsets by records, and transactions by markers), so ReadForConsumer
// leaves every empty batch out of a compacted log's reads; replicas read them all
// (their producer state, and the log end offset, need them).
//
// Petrel's cleaner before this build also kept an empty batch without a producer id at
// the end of every cleaned group, which librdkafka (kcat, confluent-kafka) cannot read
// past. The cleaner now removes them in any pass; a compacted log an older build may
// have cleaned is checked (CleanPlan.HasLegacyEmptyBatches) and repaired first
// (SetHideEmptyBatches marks it until then).

// legacyEmpty reports whether h is an empty data batch without a producer id.
func legacyEmpty(h BatchHeader) bool {
	return h.RecordCount == 0 && h.ProducerID < 0 && !h.Control()
}

// SetHideEmptyBatches marks a log that may hold an older build's empty batches without a
// producer id until the cleaner has checked it (on), or not (off). A marked log's
// consumer reads skip empty batches even if it is not compacted any more.
func (l *Log) SetHideEmptyBatches(on bool) { l.hideEmptyBatches = on }

// HidesEmptyBatches reports whether SetHideEmptyBatches is on.
func (l *Log) HidesEmptyBatches() bool { return l.hideEmptyBatches }

// ReadForConsumer is Read for a consumer: in a compacted log (or one marked by
// SetHideEmptyBatches) the range neither starts with nor holds an empty batch (a read
// that would start with one starts after it; one inside the range ends it). Replicas
// read with Read: their log end offset must be reachable whatever the batches hold.
func (l *Log) ReadForConsumer(offset int64, maxBytes int, upTo int64) (FileRange, error) {
	for {
		r, err := l.Read(offset, maxBytes, upTo)
		if err != nil || !(l.cfg.Compacted || l.hideEmptyBatches) || r.Size == 0 {
			return r, err
		}
		next, skip, err := trimEmpty(&r)
		if err != nil || !skip {
			return r, err
		}
		r.Release()
		offset = next
		if offset >= upTo || offset >= l.LogEndOffset() {
			return emptyRange, nil
		}
	}
}

// trimEmpty cuts r before its first empty batch. When the range starts with one, skip
// is set and next is the offset after it.
func trimEmpty(r *FileRange) (next int64, skip bool, err error) {
	var hb [BatchHeaderSize]byte
	last := int64(-1)
	for pos := r.Position; pos < r.Position+r.Size; {
		if _, err := r.File.ReadAt(hb[:], pos); err != nil {
			return 0, false, err
		}
		h, err := ParseBatchHeader(hb[:])
		if err != nil {
			return 0, false, err
		}
		if h.RecordCount == 0 {
			if pos == r.Position {
				return h.NextOffset(), true, nil
			}
			r.Size = pos - r.Position
			r.LastOffset = last
			return 0, false, nil
		}
		last = h.LastOffset()
		pos += h.Size()
	}
	return 0, false, nil
}

// HasLegacyEmptyBatches reports whether the plan's segments hold an empty batch without
// a producer id, reading their headers with the plan's own files (no lock needed): a
// log that does not can stop hiding them; one that does needs the plan built and
// committed, which removes them.
func (p *CleanPlan) HasLegacyEmptyBatches() (bool, error) {
	found := false
	err := p.forEachHeader(func(h BatchHeader) bool {
		found = legacyEmpty(h)
		return !found
	})
	return found, err
}
