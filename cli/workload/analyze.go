package workload

import (
	"cmp"
	"fmt"
	"slices"
)

// Kind is a kind of violation.
type Kind int

const (
	// Lost: an acknowledged record the drain did not read.
	Lost Kind = iota
	// Misplaced: an acknowledged record the drain read, but never at the partition and
	// offset its produce answer gave.
	Misplaced
	// Duplicated: one record read at two or more offsets.
	Duplicated
	// Reordered: an acknowledged record read at a higher offset than a later one of the
	// same producer and key.
	Reordered
	// AbortedRead: a record of an aborted transaction returned to a read_committed
	// consumer.
	AbortedRead
	// NotDelivered: an acknowledged record the group's consumers never returned,
	// although the group's committed offsets reached the end of every partition.
	NotDelivered
	// Backwards: a committed offset lower than one committed (or observed) before it.
	Backwards
	// Unknown: a record carrying this run's id that no producer of the run produced.
	Unknown
	kinds
)

// Kinds lists every violation kind in report order.
func Kinds() []Kind {
	k := make([]Kind, kinds)
	for i := range k {
		k[i] = Kind(i)
	}
	return k
}

func (k Kind) String() string {
	switch k {
	case Lost:
		return "acknowledged records lost"
	case Duplicated:
		return "duplicated records"
	case Reordered:
		return "reordered within a key"
	case AbortedRead:
		return "aborted records read"
	case Backwards:
		return "committed offsets went backwards"
	case Unknown:
		return "records never produced"
	case Misplaced:
		return "acknowledged at another offset"
	case NotDelivered:
		return "acknowledged records the group never received"
	}
	return fmt.Sprintf("kind %d", int(k))
}

// MaxExamples bounds the examples kept per kind; the counts are exact.
const MaxExamples = 10

// Analysis is Analyze's verdict on a History.
type Analysis struct {
	Produced       int // records produced (sent)
	Acknowledged   int // acknowledged (acks=all, or their transaction committed)
	Aborted        int // in transactions aborted on purpose
	AbortedFailed  int // in transactions aborted because one of their produces failed
	Unacknowledged int // neither: outcome unknown to the producer
	UnackedRead    int // unacknowledged records the drain read (not a violation)
	Read           int // distinct records of this run the drain read
	GroupRead      int // records the group's consumers returned (with re-reads)
	Commits        int // offset commits reported by the consumers
	Unchecked      int // acknowledged records past where an unfinished drain stopped

	// Counts holds each violation kind's number; Examples up to MaxExamples of each.
	Counts   [kinds]int
	Examples [kinds][]string
}

// Violations is the number of violations of every kind.
func (a *Analysis) Violations() int {
	n := 0
	for _, c := range a.Counts {
		n += c
	}
	return n
}

func (a *Analysis) add(k Kind, format string, args ...any) {
	a.Counts[k]++
	if len(a.Examples[k]) < MaxExamples {
		a.Examples[k] = append(a.Examples[k], fmt.Sprintf(format, args...))
	}
}

// Analyze judges h. It is pure and deterministic: the same History gives the same
// Analysis.
func Analyze(h *History) Analysis {
	var a Analysis
	produced := make(map[RecordID]*Produced, len(h.Produced))
	for i := range h.Produced {
		p := &h.Produced[i]
		produced[p.RecordID] = p
		a.Produced++
		switch p.Status {
		case Acknowledged:
			a.Acknowledged++
		case Aborted:
			if p.Failed {
				a.AbortedFailed++
			} else {
				a.Aborted++
			}
		default:
			a.Unacknowledged++
		}
	}

	drained := slices.Clone(h.Drained)
	slices.SortStableFunc(drained, func(x, y Read) int {
		return cmp.Or(cmp.Compare(x.Partition, y.Partition), cmp.Compare(x.Offset, y.Offset))
	})
	// Where each record was first read, and the other places of those read more than
	// once; a record read twice at one offset (the drain re-fetching) counts once.
	first := make(map[RecordID]Read, len(drained))
	again := map[RecordID][]Read{}
	for _, r := range drained {
		f, ok := first[r.RecordID]
		switch {
		case !ok:
			first[r.RecordID] = r
		case f.Partition == r.Partition && f.Offset == r.Offset:
		case !slices.ContainsFunc(again[r.RecordID], func(x Read) bool { return x.Partition == r.Partition && x.Offset == r.Offset }):
			again[r.RecordID] = append(again[r.RecordID], r)
		}
	}
	a.Read = len(first)
	a.GroupRead = len(h.GroupReads)

	unknown := map[RecordID]bool{}
	for _, r := range drained {
		if _, ok := produced[r.RecordID]; !ok && !unknown[r.RecordID] {
			unknown[r.RecordID] = true
			a.add(Unknown, "%s read at partition %d offset %d", r.RecordID, r.Partition, r.Offset)
		}
	}

	for i := range h.Produced {
		p := &h.Produced[i]
		f, read := first[p.RecordID]
		switch {
		case p.Status == Acknowledged && !read:
			if reached, unfinished := h.Unfinished[p.Partition]; unfinished && p.Offset >= reached {
				if end, listed := h.Ends[p.Partition]; listed && p.Partition >= 0 && p.Offset >= end {
					a.add(Lost, "%s acknowledged at partition %d offset %d, at or past its end offset %d", p.RecordID, p.Partition, p.Offset, end)
					continue
				}
				a.Unchecked++
				continue
			}
			a.add(Lost, "%s acknowledged at partition %d offset %d, never read", p.RecordID, p.Partition, p.Offset)
		case p.Status == Acknowledged && p.Partition >= 0 && !readAt(f, again[p.RecordID], p.Partition, p.Offset):
			a.add(Misplaced, "%s acknowledged at partition %d offset %d, read at %s", p.RecordID, p.Partition, p.Offset, placesOf(append([]Read{f}, again[p.RecordID]...)))
		case p.Status == Unacknowledged && read:
			a.UnackedRead++
		}
		if more, ok := again[p.RecordID]; ok {
			a.add(Duplicated, "%s read at %s", p.RecordID, placesOf(append([]Read{f}, more...)))
		}
	}
	if h.Settled {
		received := make(map[RecordID]bool, len(h.GroupReads))
		for _, id := range h.GroupReads {
			received[id] = true
		}
		for i := range h.Produced {
			if p := &h.Produced[i]; p.Status == Acknowledged && !received[p.RecordID] {
				a.add(NotDelivered, "%s acknowledged at partition %d offset %d, never returned to the group", p.RecordID, p.Partition, p.Offset)
			}
		}
		slices.SortFunc(a.Examples[NotDelivered], cmp.Compare)
	}
	slices.SortFunc(a.Examples[Misplaced], cmp.Compare)
	slices.SortFunc(a.Examples[Lost], cmp.Compare)
	slices.SortFunc(a.Examples[Duplicated], cmp.Compare)

	analyzeOrder(&a, drained, produced)
	analyzeAborted(&a, drained, h.GroupReads, produced)
	for _, c := range h.Commits {
		if c.Source != observedSource {
			a.Commits++
		}
	}
	analyzeCommits(&a, h.Commits)
	return a
}

// readAt reports whether the record read first at f, and again at more, was read at
// partition and offset.
func readAt(f Read, more []Read, partition int32, offset int64) bool {
	at := func(r Read) bool { return r.Partition == partition && r.Offset == offset }
	return at(f) || slices.ContainsFunc(more, at)
}

// placesOf names the partitions and offsets of reads.
func placesOf(rs []Read) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("partition %d offset %d", r.Partition, r.Offset)
	}
	return s
}

// analyzeOrder finds acknowledged records read after a later record of the same
// producer and key in the same partition. drained is sorted by partition and offset;
// only a record's first copy counts (a duplicate is reported as such).
func analyzeOrder(a *Analysis, drained []Read, produced map[RecordID]*Produced) {
	type stream struct {
		producer, key, partition int32
	}
	type last struct {
		seq    int32
		offset int64
	}
	highest := map[stream]last{}
	seen := map[RecordID]bool{}
	for _, r := range drained {
		if seen[r.RecordID] {
			continue
		}
		seen[r.RecordID] = true
		if p := produced[r.RecordID]; p == nil || p.Status != Acknowledged {
			continue
		}
		s := stream{r.Producer, r.Key, r.Partition}
		h, ok := highest[s]
		switch {
		case !ok || r.Seq > h.seq:
			highest[s] = last{r.Seq, r.Offset}
		default:
			a.add(Reordered, "%s at partition %d offset %d, after seq %d at offset %d", r.RecordID, r.Partition, r.Offset, h.seq, h.offset)
		}
	}
}

// analyzeAborted finds records of aborted transactions among the reads of the drain
// and of the group (both read_committed when there are transactions).
func analyzeAborted(a *Analysis, drained []Read, group []RecordID, produced map[RecordID]*Produced) {
	reported := map[RecordID]bool{}
	check := func(id RecordID, where string) {
		if p := produced[id]; p != nil && p.Status == Aborted && !reported[id] {
			reported[id] = true
			a.add(AbortedRead, "%s (transaction %d) read %s", id, p.Txn, where)
		}
	}
	for _, r := range drained {
		check(r.RecordID, fmt.Sprintf("by the drain at partition %d offset %d", r.Partition, r.Offset))
	}
	for _, id := range group {
		check(id, "by the group")
	}
}

// analyzeCommits finds committed offsets that went backwards: for one partition, a
// commit (or observation) Y that started after another X had ended, with a lower
// offset. Requests that overlap in time have no order and are not compared.
func analyzeCommits(a *Analysis, commits []Commit) {
	byPartition := map[int32][]Commit{}
	for _, c := range commits {
		byPartition[c.Partition] = append(byPartition[c.Partition], c)
	}
	partitions := make([]int32, 0, len(byPartition))
	for p := range byPartition {
		partitions = append(partitions, p)
	}
	slices.Sort(partitions)
	for _, p := range partitions {
		cs := byPartition[p]
		byEnd := slices.Clone(cs)
		slices.SortStableFunc(byEnd, func(x, y Commit) int { return x.End.Compare(y.End) })
		byStart := cs
		slices.SortStableFunc(byStart, func(x, y Commit) int { return x.Start.Compare(y.Start) })
		var top *Commit // the highest offset among commits ended so far
		type regression struct{ from, to int64 }
		reported := map[regression]bool{} // observations repeat what they saw
		i := 0
		for j := range byStart {
			y := &byStart[j]
			for ; i < len(byEnd) && byEnd[i].End.Before(y.Start); i++ {
				if top == nil || byEnd[i].Offset > top.Offset {
					top = &byEnd[i]
				}
			}
			if top != nil && y.Offset < top.Offset && !reported[regression{top.Offset, y.Offset}] {
				reported[regression{top.Offset, y.Offset}] = true
				a.add(Backwards, "partition %d: %d (%s, at %s) after %d (%s, at %s)", p,
					y.Offset, y.Source, y.Start.Format(timeFormat), top.Offset, top.Source, top.End.Format(timeFormat))
			}
		}
	}
}

// timeFormat shows the times of commits in examples.
const timeFormat = "15:04:05.000"

// observedSource is Commit.Source of the committed offsets the watcher fetched.
const observedSource = "observed"
