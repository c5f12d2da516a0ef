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
	held     heldRef
	released atomic.Bool
	cleanup  runtime.Cleanup
}

// heldRef is what a Hold pins: its file's reference, and the FileCache whose Holds count
// it (nil: none). Its cleanup releases it when the Hold is dropped unreleased.
type heldRef struct {
	ref *fileRef
	c   *FileCache
}

func (r heldRef) release() {
	if r.c != nil {
		r.c.holds.Add(-1)
	}
	_ = r.ref.release()
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
	h := &Hold{FileRange: r, held: heldRef{ref: r.ref}}
	if r.pin != nil {
		h.held.c = r.pin.c
		h.held.c.holds.Add(1)
	}
	h.cleanup = runtime.AddCleanup(h, heldRef.release, h.held)
	return h
}

// HoldOrCopy is Hold while the Log's FileCache has fewer Holds outstanding than its
// capacity; past that it copies the range (Bytes) and releases it, giving the bytes
// instead, so that the descriptors kept open by Holds stay within the cache's own
// bound. The same rules as Hold apply: call it under the owner lock of the Read.
func (r FileRange) HoldOrCopy() (*Hold, []byte, error) {
	if r.pin == nil || r.Size == 0 || r.pin.c.holds.Load() < int64(r.pin.c.capacity) {
		return r.Hold(), nil, nil
	}
	defer r.Release()
	b, err := r.Bytes()
	return nil, b, err
}

// Release unpins the file (closing it if its segment is gone).
func (h *Hold) Release() {
	if h == nil || !h.released.CompareAndSwap(false, true) {
		return
	}
	h.cleanup.Stop()
	h.held.release()
}

// Len is the range's size in bytes, 0 for a nil Hold.
func (h *Hold) Len() int64 {
	if h == nil {
		return 0
	}
	return h.Size
}
