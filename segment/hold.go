package segment

import (
	"os"
	"runtime"
	"sync/atomic"
)

// fileRef counts the users of one segment's .log file: the segment itself (one
// reference from open until the segment is closed or removed) and every outstanding
// Hold. The file is closed when the count reaches zero, so a range being sent keeps
// reading the bytes it was read from after retention, compaction, truncation of other
// segments or Log.Close dropped the segment (an unlinked file stays readable on Linux).
// It is the one place a later descriptor cache hooks into.
type fileRef struct {
	f    *os.File
	refs atomic.Int32
}

func newFileRef(f *os.File) *fileRef {
	r := &fileRef{f: f}
	r.refs.Store(1)
	return r
}

// release drops one reference and closes the file with the last one.
func (r *fileRef) release() error {
	if r.refs.Add(-1) == 0 {
		return r.f.Close()
	}
	return nil
}

// Hold is a FileRange whose file stays open until Release, whatever happens to its
// segment meanwhile. Release is safe from any goroutine and idempotent; a Hold dropped
// without Release is released when the garbage collector finds it.
type Hold struct {
	FileRange
	ref      *fileRef
	released atomic.Bool
	cleanup  runtime.Cleanup
}

// Hold pins the range's file. The caller must call it under the same owner lock as the
// Read that returned r, before any call that removes segments. An empty range gives nil
// (a nil *Hold is empty and its Release does nothing). Hold takes over the range's
// FileCache pin: the cache may close the segment's descriptor from then on (an eviction
// only drops the segment's reference), and r needs no Release of its own.
func (r FileRange) Hold() *Hold {
	defer r.Release()
	if r.Size == 0 || r.ref == nil {
		return nil
	}
	r.ref.refs.Add(1)
	h := &Hold{FileRange: r, ref: r.ref}
	h.cleanup = runtime.AddCleanup(h, func(ref *fileRef) { _ = ref.release() }, r.ref)
	return h
}

// Release unpins the file (closing it if its segment is gone).
func (h *Hold) Release() {
	if h == nil || !h.released.CompareAndSwap(false, true) {
		return
	}
	h.cleanup.Stop()
	_ = h.ref.release()
}

// Len is the range's size in bytes, 0 for a nil Hold.
func (h *Hold) Len() int64 {
	if h == nil {
		return 0
	}
	return h.Size
}
