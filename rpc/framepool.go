package rpc

import (
	"math/bits"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Frame buffers. A request frame read by a conn and a response frame read by a Client
// come from size-classed pools: classes are the powers of two from 1 KiB to 8 MiB (kgo
// sends produce requests of a few MiB under load: 1 MB batches for several
// partitions), and larger frames are allocated afresh and never pooled. A sync.Pool
// keeps only what was used since the last garbage collections.
//
// The ownership rule: a frame decoded with kmsg's ReadFrom is aliased by the decoded
// message's []byte fields (Produce Records, Fetch RecordBatches, unknown tags); strings
// are copies. A pooled frame goes back to its pool only at an explicit release point:
//
//   - a request frame once the handler has returned (conn.serveRequests), when the
//     api's request body holds no []byte field (bodyAliasesFrame: nothing of the frame
//     can be kept), or when the api was registered with
//     Registry.ReleaseFrameAfterHandler (Produce). Such a handler, and anything it
//     starts (a RespondLater goroutine), must not keep any []byte of the request body
//     (nor its unknown tags) past its return; it must copy what it keeps. The frames of
//     every other api (JoinGroup, SyncGroup, SaslAuthenticate, ...) are never
//     released: their bodies' bytes may be kept.
//   - a response frame when the caller of Client.DoPooled calls ResponseFrame.Release,
//     after which the decoded response's []byte fields must not be used.
//
// Under the race detector (and in tests that ask for it) a released frame is
// overwritten before it is pooled, so a violation of the rule shows up as corrupt data
// in tests rather than only under load.
const (
	minPooledFrameShift = 10 // 1 KiB
	maxPooledFrameShift = 23 // 8 MiB
	// maxPooledFrame is the largest pooled frame.
	maxPooledFrame = 1 << maxPooledFrameShift
)

// framePools holds one pool per size class; each holds *[]byte of exactly the class's
// capacity.
var framePools [maxPooledFrameShift - minPooledFrameShift + 1]sync.Pool

// scribbleReleasedFrames, when set, makes putFrame overwrite a frame before pooling it.
var scribbleReleasedFrames atomic.Bool

func init() { scribbleReleasedFrames.Store(raceEnabled) }

// scribbleByte is what a scribbled frame is filled with.
const scribbleByte = 0xdb

// frameClass returns the pool index for a frame of size bytes, or -1 when such frames
// are not pooled.
func frameClass(size int) int {
	switch {
	case size > maxPooledFrame:
		return -1
	case size <= 1<<minPooledFrameShift:
		return 0
	}
	return bits.Len(uint(size-1)) - minPooledFrameShift
}

// getFrame returns a pooled buffer of length size, or nil when size is not pooled.
func getFrame(size int) *[]byte {
	class := frameClass(size)
	if class < 0 {
		return nil
	}
	if p, ok := framePools[class].Get().(*[]byte); ok {
		*p = (*p)[:size]
		return p
	}
	b := make([]byte, size, 1<<(class+minPooledFrameShift))
	return &b
}

// putFrame returns a buffer from getFrame to its pool; nil is ignored. The caller must
// not use the buffer, nor any slice of it, afterwards.
func putFrame(p *[]byte) {
	if p == nil {
		return
	}
	class := frameClass(cap(*p))
	if class < 0 || cap(*p) != 1<<(class+minPooledFrameShift) {
		return
	}
	b := (*p)[:cap(*p)]
	if scribbleReleasedFrames.Load() {
		for i := range b {
			b[i] = scribbleByte
		}
	}
	*p = b[:0]
	framePools[class].Put(p)
}

// tagsType is kmsg's unknown-tags type, which aliases the frame too; no handler keeps
// unknown tags, so it does not count in bodyAliasesFrame.
var tagsType = reflect.TypeFor[kmsg.Tags]()

// bodyAliasesFrame reports whether a request body decoded with ReadFrom may alias its
// frame: whether its type holds a []byte anywhere (kmsg copies strings, and decodes
// lists and uuids into fresh memory). Requests whose bodies do not are released after
// the handler whatever it keeps.
func bodyAliasesFrame(body kmsg.Request) bool {
	return holdsBytes(reflect.TypeOf(body), map[reflect.Type]bool{})
}

func holdsBytes(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == tagsType || seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Array:
		return holdsBytes(t.Elem(), seen)
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8 || holdsBytes(t.Elem(), seen)
	case reflect.Map:
		return holdsBytes(t.Key(), seen) || holdsBytes(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsBytes(t.Field(i).Type, seen) {
				return true
			}
		}
	case reflect.Interface:
		return true // unknown contents
	}
	return false
}
