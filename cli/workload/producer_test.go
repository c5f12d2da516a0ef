package workload

import (
	"testing"
	"time"
)

// Produce callbacks can still come after the client is closed: the history waits for
// them, so a late acknowledgement is not lost from it.
func TestProducerHistoryWaitsForLateCallbacks(t *testing.T) {
	r := testRunner(1)
	r.budget.Store(1)
	p := newProducer(r, 0)
	i, rec, ok := p.nextRecord(nil, &pacer{}, -1, '-')
	if !ok {
		t.Fatal("no record")
	}
	done := make(chan []Produced)
	go func() { done <- p.history(time.Now().Add(time.Minute)) }()
	select {
	case h := <-done:
		t.Fatalf("history returned %v before the callback", h)
	case <-time.After(50 * time.Millisecond): // the callback is late on purpose
	}
	rec.Partition, rec.Offset = 0, 3
	p.answered(i, rec, nil)
	select {
	case h := <-done:
		if len(h) != 1 || h[0].Status != Acknowledged || h[0].Offset != 3 {
			t.Fatalf("history %+v, want the record acknowledged at offset 3", h)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("history did not return after the last callback")
	}
}
