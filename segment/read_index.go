package segment

import "sort"

// A fetch reads whole batches up to maxBytes. Reading every batch header to find where
// they stop costs one pread per batch (64 per 1 MiB of 16 KiB producer batches); the
// offset index, whose entries are at most index.interval.bytes apart, finds the end
// with a binary search and one or two header reads instead, as Kafka's LogSegment.read
// slices the log by position.

// lastBelow returns the index of the greatest entry whose position is below limit and
// whose offset is below upTo, or -1 when there is none.
func (ix offsetIndex) lastBelow(limit, upTo int64) int {
	byPosition := sort.Search(ix.entries, func(i int) bool { return ix.at(i).position >= limit })
	byOffset := sort.Search(ix.entries, func(i int) bool { return ix.at(i).offset >= upTo })
	return min(byPosition, byOffset) - 1
}

// indexedEnd finds, with the offset index, how far a read whose batches so far end at
// next may grow: to the end of the last batch that starts at an index entry at or after
// next, ends by limit and holds offsets below upTo (every batch before it fits then too).
// It checks each entry it uses against the batch header there and gives up on a
// mismatch (a damaged index), leaving the caller to scan. tooLarge is the position of
// a batch it found too large to fit (-1: none), to spare the caller reading it again.
func (s *segment) indexedEnd(next, limit, upTo int64, buf *[BatchHeaderSize]byte) (end, last int64, ok bool, tooLarge int64) {
	tooLarge = -1
	i := s.offsetIndex.lastBelow(limit, upTo)
	for tries := 0; tries < 2 && i >= 0; tries, i = tries+1, i-1 {
		e := s.offsetIndex.at(i)
		if e.position < next {
			break
		}
		h, err := s.readHeaderAt(e.position, buf)
		if err != nil || h.LastOffset() != e.offset {
			break
		}
		if e.position+h.Size() <= limit {
			return e.position + h.Size(), e.offset, true, tooLarge
		}
		tooLarge = e.position // the batch before this entry's ends earlier
	}
	return 0, 0, false, tooLarge
}
