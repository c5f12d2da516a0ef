package workload

import (
	"slices"
	"testing"
)

// The watcher keeps only changes of a partition's committed offset (the first and the
// last observation of a run of equal ones), and the analysis finds the same regression.
func TestWatcherKeepsOnlyChanges(t *testing.T) {
	offsets := []int64{5, 5, 5, 5, 9, 9, 9, 9, 9, 4, 4, 4, 12}
	var all []Commit
	w := &watcher{}
	for i, o := range offsets {
		c := at(i*300, o, observedSource)
		all = append(all, c)
		w.add(c)
		w.add(Commit{Partition: 1, Offset: 1, Start: c.Start, End: c.End, Source: observedSource})
	}
	var kept []int64
	for _, c := range w.observed {
		if c.Partition == 0 {
			kept = append(kept, c.Offset)
		}
	}
	if want := []int64{5, 5, 9, 9, 4, 4, 12}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	if n := len(w.observed) - len(kept); n != 2 {
		t.Errorf("kept %d observations of an unchanged partition, want 2", n)
	}
	full, short := Analyze(&History{Commits: all}), Analyze(&History{Commits: w.observed})
	if full.Counts != short.Counts || full.Counts[Backwards] != 1 {
		t.Errorf("counts %v from all observations, %v from the changes: want one regression each", full.Counts, short.Counts)
	}
}
