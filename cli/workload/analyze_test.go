package workload

import (
	"strings"
	"testing"
	"time"
)

// acked is an acknowledged record of producer 0 at partition 0.
func acked(key, seq int32, offset int64) Produced {
	return Produced{RecordID: RecordID{0, key, seq}, Txn: -1, Status: Acknowledged, Partition: 0, Offset: offset}
}

func read(key, seq int32, offset int64) Read {
	return Read{RecordID: RecordID{0, key, seq}, Partition: 0, Offset: offset}
}

// at is a commit of offset on partition 0 sent at ms and answered at ms+5.
func at(ms int, offset int64, source string) Commit {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := t0.Add(time.Duration(ms) * time.Millisecond)
	return Commit{Partition: 0, Offset: offset, Start: start, End: start.Add(5 * time.Millisecond), Source: source}
}

func TestAnalyze(t *testing.T) {
	healthy := History{
		Produced: []Produced{acked(0, 0, 0), acked(1, 0, 1), acked(0, 1, 2)},
		Drained:  []Read{read(0, 0, 0), read(1, 0, 1), read(0, 1, 2)},
		Commits:  []Commit{at(0, 1, "consumer 0"), at(10, 3, "consumer 0"), at(20, 3, observedSource)},
	}
	tests := []struct {
		name    string
		history History
		want    map[Kind]int // violation counts; every other kind must be 0
		example string       // a substring of some example, when want is not empty
		check   func(t *testing.T, a Analysis)
	}{
		{name: "healthy", history: healthy, check: func(t *testing.T, a Analysis) {
			if a.Produced != 3 || a.Acknowledged != 3 || a.Read != 3 || a.Commits != 2 {
				t.Errorf("counts %+v", a)
			}
		}},
		{
			name: "lost",
			history: History{
				Produced: []Produced{acked(0, 0, 0), acked(0, 1, 1)},
				Drained:  []Read{read(0, 0, 0)},
			},
			want:    map[Kind]int{Lost: 1},
			example: "producer 0 key 0 seq 1 acknowledged at partition 0 offset 1, never read",
		},
		{
			name: "lost below where a truncated log ends",
			history: History{
				Produced: []Produced{acked(0, 0, 0), acked(0, 1, 1), acked(0, 2, 2)},
				Drained:  []Read{read(0, 0, 0)},
			},
			want: map[Kind]int{Lost: 2},
		},
		{
			name: "not read past an unfinished drain is unchecked, not lost",
			history: History{
				Produced:   []Produced{acked(0, 0, 0), acked(0, 1, 1), acked(0, 2, 5)},
				Drained:    []Read{read(0, 0, 0)},
				Unfinished: map[int32]int64{0: 3},
			},
			want: map[Kind]int{Lost: 1},
			check: func(t *testing.T, a Analysis) {
				if a.Unchecked != 1 {
					t.Errorf("unchecked %d, want 1", a.Unchecked)
				}
			},
		},
		{
			name: "duplicated",
			history: History{
				Produced: []Produced{acked(0, 0, 0), acked(0, 1, 1)},
				Drained:  []Read{read(0, 0, 0), read(0, 1, 1), read(0, 0, 2)},
			},
			want:    map[Kind]int{Duplicated: 1},
			example: "producer 0 key 0 seq 0 read at partition 0 offset 0, partition 0 offset 2",
		},
		{
			name: "one offset fetched twice is no duplicate",
			history: History{
				Produced: []Produced{acked(0, 0, 0)},
				Drained:  []Read{read(0, 0, 0), read(0, 0, 0)},
			},
		},
		{
			name: "reordered within a key",
			history: History{
				Produced: []Produced{acked(0, 0, 1), acked(0, 1, 0), acked(1, 0, 2)},
				Drained:  []Read{read(0, 1, 0), read(0, 0, 1), read(1, 0, 2)},
			},
			want:    map[Kind]int{Reordered: 1},
			example: "producer 0 key 0 seq 0 at partition 0 offset 1, after seq 1 at offset 0",
		},
		{
			name: "an unacknowledged record out of order is no violation",
			history: History{
				Produced: []Produced{
					acked(0, 0, 1),
					{RecordID: RecordID{0, 0, 1}, Txn: -1, Status: Unacknowledged, Partition: -1, Offset: -1},
				},
				Drained: []Read{read(0, 1, 0), read(0, 0, 1)},
			},
			check: func(t *testing.T, a Analysis) {
				if a.UnackedRead != 1 || a.Unacknowledged != 1 {
					t.Errorf("unacked %d, unacked read %d: want 1, 1", a.Unacknowledged, a.UnackedRead)
				}
			},
		},
		{
			name: "aborted read by the drain and by the group",
			history: History{
				Produced: []Produced{
					acked(0, 0, 0),
					{RecordID: RecordID{0, 0, 1}, Txn: 3, Status: Aborted, Partition: 0, Offset: 1},
					{RecordID: RecordID{0, 0, 2}, Txn: 4, Status: Aborted, Partition: 0, Offset: 3},
				},
				Drained:    []Read{read(0, 0, 0), read(0, 1, 1)},
				GroupReads: []RecordID{{0, 0, 1}, {0, 0, 2}, {0, 0, 2}},
			},
			want:    map[Kind]int{AbortedRead: 2},
			example: "producer 0 key 0 seq 1 (transaction 3) read by the drain at partition 0 offset 1",
		},
		{
			name: "aborted and not read",
			history: History{
				Produced: []Produced{acked(0, 0, 0), {RecordID: RecordID{0, 0, 1}, Txn: 3, Status: Aborted, Partition: 0, Offset: 1}},
				Drained:  []Read{read(0, 0, 0)},
			},
			check: func(t *testing.T, a Analysis) {
				if a.Aborted != 1 {
					t.Errorf("aborted %d, want 1", a.Aborted)
				}
			},
		},
		{
			name: "committed offset went backwards",
			history: History{
				Commits: []Commit{at(0, 10, "consumer 0"), at(10, 20, "consumer 1"), at(20, 15, "consumer 0"), at(30, 15, observedSource), at(40, 25, "consumer 1")},
			},
			want:    map[Kind]int{Backwards: 1},
			example: "partition 0: 15 (consumer 0, at 00:00:00.020) after 20 (consumer 1",
		},
		{
			name: "observed lower than a commit that ended before",
			history: History{
				Commits: []Commit{at(0, 10, "consumer 0"), at(20, 7, observedSource)},
			},
			want: map[Kind]int{Backwards: 1},
		},
		{
			name: "overlapping commits have no order",
			history: History{
				Commits: []Commit{at(0, 20, "consumer 0"), at(2, 10, "consumer 1")},
			},
		},
		{
			name: "partitions are judged apart",
			history: History{
				Commits: []Commit{at(0, 20, "consumer 0"), {Partition: 1, Offset: 3, Start: at(10, 0, "").Start, End: at(10, 0, "").End, Source: "consumer 1"}},
			},
		},
		{
			name: "acknowledged at one offset, read at another",
			history: History{
				Produced: []Produced{acked(0, 0, 0), acked(0, 1, 5)},
				Drained:  []Read{read(0, 0, 0), read(0, 1, 3)},
			},
			want:    map[Kind]int{Misplaced: 1},
			example: "producer 0 key 0 seq 1 acknowledged at partition 0 offset 5, read at partition 0 offset 3",
		},
		{
			name: "read at its offset and again elsewhere is a duplicate only",
			history: History{
				Produced: []Produced{acked(0, 0, 1)},
				Drained:  []Read{read(0, 0, 0), read(0, 0, 1)},
			},
			want: map[Kind]int{Duplicated: 1},
		},
		{
			name: "a transactional record without an offset is not placed",
			history: History{
				Produced: []Produced{{RecordID: RecordID{0, 0, 0}, Txn: 0, Status: Acknowledged, Partition: -1, Offset: -1}},
				Drained:  []Read{read(0, 0, 4)},
			},
		},
		{
			name: "acknowledged past the listed end of an unfinished partition is lost",
			history: History{
				Produced:   []Produced{acked(0, 0, 0), acked(0, 1, 4), acked(0, 2, 9)},
				Drained:    []Read{read(0, 0, 0)},
				Unfinished: map[int32]int64{0: 3},
				Ends:       map[int32]int64{0: 6},
			},
			want:    map[Kind]int{Lost: 1},
			example: "producer 0 key 0 seq 2 acknowledged at partition 0 offset 9, at or past its end offset 6",
			check: func(t *testing.T, a Analysis) {
				if a.Unchecked != 1 {
					t.Errorf("unchecked %d, want 1 (offset 4, below the end)", a.Unchecked)
				}
			},
		},
		{
			name: "a partition whose end was never listed is unchecked",
			history: History{
				Produced:   []Produced{acked(0, 0, 0), acked(0, 1, 9)},
				Unfinished: map[int32]int64{0: 0},
				Ends:       map[int32]int64{},
			},
			check: func(t *testing.T, a Analysis) {
				if a.Unchecked != 2 {
					t.Errorf("unchecked %d, want 2", a.Unchecked)
				}
			},
		},
		{
			name: "settled group that never received an acknowledged record",
			history: History{
				Produced:   []Produced{acked(0, 0, 0), acked(1, 0, 1), acked(0, 1, 2)},
				Drained:    []Read{read(0, 0, 0), read(1, 0, 1), read(0, 1, 2)},
				Settled:    true,
				GroupReads: []RecordID{{0, 0, 0}, {0, 0, 1}, {0, 0, 0}}, // re-read after a rebalance
			},
			want:    map[Kind]int{NotDelivered: 1},
			example: "producer 0 key 1 seq 0 acknowledged at partition 0 offset 1, never returned to the group",
		},
		{
			name: "records read by different members all count",
			history: History{
				Produced:   []Produced{acked(0, 0, 0), acked(1, 0, 1)},
				Drained:    []Read{read(0, 0, 0), read(1, 0, 1)},
				Settled:    true,
				GroupReads: []RecordID{{0, 1, 0}, {0, 0, 0}},
			},
		},
		{
			name: "a group that did not settle is not judged on delivery",
			history: History{
				Produced: []Produced{acked(0, 0, 0)},
				Drained:  []Read{read(0, 0, 0)},
			},
		},
		{
			name: "aborts on purpose and after a failed produce are counted apart",
			history: History{
				Produced: []Produced{
					{RecordID: RecordID{0, 0, 0}, Txn: 0, Status: Aborted, Partition: 0, Offset: 0},
					{RecordID: RecordID{0, 0, 1}, Txn: 1, Status: Aborted, Partition: 0, Offset: 2, Failed: true},
					{RecordID: RecordID{0, 0, 2}, Txn: 1, Status: Aborted, Partition: -1, Offset: -1, Failed: true},
				},
			},
			check: func(t *testing.T, a Analysis) {
				if a.Aborted != 1 || a.AbortedFailed != 2 {
					t.Errorf("aborted %d on purpose, %d after a failure: want 1, 2", a.Aborted, a.AbortedFailed)
				}
			},
		},
		{
			name: "a record nobody produced",
			history: History{
				Produced: []Produced{acked(0, 0, 0)},
				Drained:  []Read{read(0, 0, 0), read(7, 7, 1)},
			},
			want: map[Kind]int{Unknown: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Analyze(&tt.history)
			for _, k := range Kinds() {
				if a.Counts[k] != tt.want[k] {
					t.Errorf("%s: %d, want %d (examples %q)", k, a.Counts[k], tt.want[k], a.Examples[k])
				}
			}
			if tt.example != "" {
				found := false
				for _, k := range Kinds() {
					for _, e := range a.Examples[k] {
						found = found || strings.Contains(e, tt.example)
					}
				}
				if !found {
					t.Errorf("no example contains %q: %q", tt.example, a.Examples)
				}
			}
			if got := a.Violations(); (got == 0) != (len(tt.want) == 0) {
				t.Errorf("Violations() = %d", got)
			}
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

func TestAnalyzeBoundsExamples(t *testing.T) {
	var h History
	for i := range 3 * MaxExamples {
		h.Produced = append(h.Produced, acked(0, int32(i), int64(i)))
	}
	a := Analyze(&h)
	if a.Counts[Lost] != 3*MaxExamples || len(a.Examples[Lost]) != MaxExamples {
		t.Fatalf("lost %d with %d examples, want %d with %d", a.Counts[Lost], len(a.Examples[Lost]), 3*MaxExamples, MaxExamples)
	}
}

func TestValueRoundTrip(t *testing.T) {
	id := RecordID{Producer: 2, Key: 17, Seq: 42}
	v := encodeValue("r1", id, 5, 'c')
	if got, ok := decodeValue("r1", v); !ok || got != id {
		t.Fatalf("decode(%q) = %v, %v", v, got, ok)
	}
	for _, bad := range []string{"", "petrel-verify r2 2 17 42 5 c", "petrel-verify r1 2 17 x 5 c", "petrel-verify r1 -1 17 4 5 c", "petrel-verify r1 2 17 42 5", "hello"} {
		if _, ok := decodeValue("r1", []byte(bad)); ok {
			t.Errorf("decode(%q) accepted", bad)
		}
	}
}
