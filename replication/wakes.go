package replication

// Wakes holds the after-unlock functions a produce request's appends collected (the
// tries of the parked requests they woke: follower fetches above all, and consumer
// fetches or other requests' acks=all waits when an append moves the high watermark),
// to be run once every partition of the request is appended: a follower whose fetch
// session holds several of its partitions then gets all of them in one answer, as
// Kafka completes delayed fetches once the whole produce request is appended (its
// ReplicaManager's action queue), instead of the first partition at once and the rest
// with its next fetch, a whole follower round trip (fsync included) later. A parked
// request woken twice is tried once more, finding itself done. The zero value is ready
// to use; it is not safe for concurrent use.
type Wakes struct {
	fns []func()
}

// add holds fns, which the caller gives up.
func (w *Wakes) add(fns []func()) {
	if w.fns == nil {
		w.fns = fns // the first partition's: no copy
		return
	}
	w.fns = append(w.fns, fns...)
}

// Run answers the held fetches on the caller's goroutine, which holds no partition
// lock, and empties w.
func (w *Wakes) Run() {
	fns := w.fns
	w.fns = nil
	runAfterUnlock(fns)
}
