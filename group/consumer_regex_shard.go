package group

// The Shard's side of regular expression subscriptions: the expressions whose
// tombstones failed to be written. As a failed write leaves the deleted members'
// records in the log until the group's resync tombstones them (consumer_shard.go),
// it leaves the deleted expressions' records too; the resync, the group's deletion
// and the cleanup after it tombstone them, so that a load never finds a resolution
// the live group dropped.

import (
	"maps"
	"slices"
)

// removedRegexes returns the expressions events delete.
func removedRegexes(events []ConsumerEvent) []string {
	var out []string
	for _, ev := range events {
		if r, ok := ev.(ConsumerRegularExpressionRemoved); ok {
			out = append(out, r.Regex)
		}
	}
	return out
}

// markRegexesDirty remembers that failed writes of group id deleted regexes.
func (s *Shard) markRegexesDirty(id string, regexes []string) {
	if len(regexes) == 0 {
		return
	}
	if s.consumerDirtyRegexes == nil {
		s.consumerDirtyRegexes = map[string]map[string]bool{}
	}
	addToSet(s.consumerDirtyRegexes, id, regexes)
}

// takeDirtyRegexes returns, sorted, and forgets the expressions failed writes of
// group id deleted.
func (s *Shard) takeDirtyRegexes(id string) []string {
	out := slices.Sorted(maps.Keys(s.consumerDirtyRegexes[id]))
	delete(s.consumerDirtyRegexes, id)
	return out
}

// staleRegexTombstones returns the deletions of those of regexes g holds no
// resolution of (each once, in order).
func staleRegexTombstones(g *ConsumerGroup, regexes []string) []ConsumerEvent {
	var out []ConsumerEvent
	seen := map[string]bool{}
	for _, r := range regexes {
		if _, held := g.regex.resolved[r]; !held && !seen[r] {
			seen[r] = true
			out = append(out, ConsumerRegularExpressionRemoved{Regex: r})
		}
	}
	return out
}

// inheritFailedDeletion hands what the failed deletion of group old meant to
// tombstone over to the new group of its id: the members failed writes removed
// (dirty), the expressions they deleted (dirtyRx) and those old still held, and the
// deprecated subscription metadata record (legacy). The new group resyncs at its
// next write and tombstones those it does not hold.
func (s *Shard) inheritFailedDeletion(old *ConsumerGroup, dirty map[string]bool, dirtyRx []string, legacy bool) {
	regexes := append(slices.Clone(dirtyRx), old.RegularExpressions()...)
	if len(dirty) == 0 && len(regexes) == 0 && !legacy {
		return
	}
	s.markConsumerDirty(old.id, slices.Collect(maps.Keys(dirty)))
	s.markRegexesDirty(old.id, regexes)
	if legacy {
		s.consumerLegacyMetadata[old.id] = true
	}
}
