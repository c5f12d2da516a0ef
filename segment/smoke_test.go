package segment

import (
	"bytes"
	"testing"
)

func TestSmokeAppendReadReopen(t *testing.T) {
	cfg := smallConfig()
	l, dir := openTestLog(t, cfg, OpenOptions{})
	want := appendN(t, l, 100, batchSpec{records: 10, valueSize: 100, baseTimestamp: 1000, tsStep: 1}, 3)
	if got := len(l.Segments()); got < 2 {
		t.Fatalf("expected rolls, have %d segments", got)
	}
	got := readAll(t, l)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	l2, rep := reopen(t, l, dir, cfg, OpenOptions{})
	if rep.Cut != nil {
		t.Fatalf("unexpected cut: %+v", rep.Cut)
	}
	if l2.LogEndOffset() != 1000 {
		t.Fatalf("LEO %d", l2.LogEndOffset())
	}
	got = readAll(t, l2)
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("after reopen batch %d differs", i)
		}
	}
}
