package broker

import "testing"

// TestRemoteReadsQueue: reads queue until the queue is full, then are refused (the
// fetch answers the partition empty); read-ahead queues only while the queue is less
// than half full, keeping the rest for fetches.
func TestRemoteReadsQueue(t *testing.T) {
	r := &remoteReads{queue: make(chan func(), 4)}
	ran := 0
	r.prefetch(func() { ran++ })
	r.prefetch(func() { ran++ })
	r.prefetch(func() { ran++ }) // half full: dropped
	if len(r.queue) != 2 {
		t.Fatalf("%d read-aheads queued, want 2 (half the queue)", len(r.queue))
	}
	if !r.Go(func() {}) || !r.Go(func() {}) || r.Go(func() {}) {
		t.Fatal("reads: want two more queued, then refused when full")
	}
	for len(r.queue) > 0 {
		(<-r.queue)()
	}
	if ran != 2 {
		t.Fatalf("%d read-aheads ran, want 2", ran)
	}
}
