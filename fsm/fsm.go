package fsm

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/metadata"
)

// FSM is the metadata state machine: raft.FSM over a metadata.Image.
//
// Apply, Snapshot and Restore are called by hashicorp/raft one at a time (its FSM
// contract). Image and Changed are safe to call from any goroutine at any time.
type FSM struct {
	mu      sync.Mutex      // guards image and changed
	image   *metadata.Image // current image; never modified in place
	changed chan struct{}   // closed and replaced after each change
	stats   stats           // stats.go
}

// New returns an FSM holding the empty image.
func New() *FSM {
	return &FSM{image: metadata.NewImage(), changed: make(chan struct{})}
}

// Image returns the current image. Callers must not modify it.
func (f *FSM) Image() *metadata.Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.image
}

// Changed returns a channel that is closed at the next image change. Subscribers wait on
// it, then read Image and compare it with the image they saw last: they never block Apply.
func (f *FSM) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// ApplyResult is what Apply returns through raft.ApplyFuture.Response: the image after
// the entry, or the domain error that refused it (the image is then unchanged).
type ApplyResult struct {
	Image *metadata.Image
	Err   error
}

// Apply decodes a log entry and applies its records atomically. An entry this build
// cannot decode stops the node (panic): skipping it would fork the state (hashicorp/raft
// #307). Domain refusals are results, not panics.
func (f *FSM) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return ApplyResult{Image: f.Image()}
	}
	f.stats.entries.Add(1)
	f.stats.entryBytes.Add(int64(len(l.Data)))
	records, err := metadata.DecodeRecords(l.Data)
	if err != nil {
		panic(fmt.Sprintf("fsm: cannot decode metadata entry at index %d: %v", l.Index, err))
	}
	old := f.Image()
	next, err := old.Apply(l.Index, records)
	if err != nil {
		// Refused: the state still advances its offset so that readers see progress.
		next, _ = old.Apply(l.Index, nil)
	}
	f.publish(next)
	return ApplyResult{Image: next, Err: err}
}

func (f *FSM) publish(next *metadata.Image) {
	f.mu.Lock()
	f.image = next
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// Snapshot captures the current image; writing it happens later in Persist.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.stats.snapshotTaken() // Snapshot and Apply are never concurrent (FSM contract)
	return &snapshot{image: f.Image()}, nil
}

// Restore replaces the whole state with a snapshot's image.
func (f *FSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	start := time.Now()
	cr := &countingReader{r: r}
	var env snapshotEnvelope
	if err := json.NewDecoder(cr).Decode(&env); err != nil {
		return fmt.Errorf("fsm: decoding snapshot: %w", err)
	}
	if env.Version != snapshotVersion || env.Image == nil {
		return fmt.Errorf("fsm: unsupported snapshot version %d", env.Version)
	}
	f.publish(env.Image.FromSnapshotForm())
	f.stats.snapshotTaken()
	f.stats.snapshotBytes.Store(cr.n)
	f.stats.snapshotNanos.Store(int64(time.Since(start)))
	return nil
}

const snapshotVersion = 1

type snapshotEnvelope struct {
	Version int             `json:"version"`
	Image   *metadata.Image `json:"image"`
}

type snapshot struct{ image *metadata.Image }

// Persist writes the image as JSON.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	err := json.NewEncoder(sink).Encode(snapshotEnvelope{Version: snapshotVersion, Image: s.image.SnapshotForm()})
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("fsm: writing snapshot: %w", err)
	}
	return sink.Close()
}

// Release does nothing: the image is immutable.
func (s *snapshot) Release() {}
