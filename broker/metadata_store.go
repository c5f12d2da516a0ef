package broker

// A metadata store that cannot be written (raft.db on a full or read-only file system,
// an I/O error). hashicorp/raft answers a failed log write by stepping down and, a
// moment later, campaigning again: on a one-node quorum it won at once, and lost again
// at its first append, about once a second, for ever; a node among several disrupted
// its peers the same way, and a failed write of its term would panic it. So the first
// failed write fences the node's Raft for the life of the process: the store refuses
// every later log write at once (nothing is appended to a log that may have lost a
// write), and the broker stops hashicorp/raft on this node: it steps down if it led,
// and stops voting and campaigning (its peers see a node that is down). It says so once,
// at ERROR; /readyz answers 503 with the reason, petrel_metadata_store_offline is 1, and
// client requests are refused (its image no longer follows the metadata log, and a
// client answer from a stale image is never given: DESIGN.md F7). Its broker session
// then expires at the controller, which fences it and moves its leaderships. A restart,
// once the file system is writable again, rejoins: raft.db holds every entry it
// acknowledged (bbolt commits atomically) and the leader sends the rest. Kafka halts
// the process when its metadata log directory fails; Petrel keeps the process up so
// that the reason stays visible.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// errMetadataStoreFailed wraps the first failed write of the metadata store.
var errMetadataStoreFailed = errors.New("metadata store failed")

// metadataStore is the Raft log and stable store, raft-boltdb's BoltStore, with its
// writes watched. Safe for concurrent use (hashicorp/raft calls it from its goroutines).
type metadataStore struct {
	*raftboltdb.BoltStore
	// failure is the first failed write (wrapping errMetadataStoreFailed), nil before.
	failure atomic.Pointer[error]
	// failed is closed when failure is set.
	failed   chan struct{}
	failOnce sync.Once
	// closing is set when the node stops: a write refused by the closed store then is
	// no failure of the disk.
	closing atomic.Bool
	// fault, when set by a test, is returned by every log write instead of writing (a
	// full file system fails the large appends first; the term and vote writes of an
	// election fit in bbolt's free pages).
	fault atomic.Pointer[error]
	// readable is the index of the last stored entry that readers wait for
	// (raft_commit_nudge.go); it starts at the last index on disk.
	readable readableIndex
}

func newMetadataStore(store *raftboltdb.BoltStore) *metadataStore {
	s := &metadataStore{BoltStore: store, failed: make(chan struct{})}
	if last, err := store.LastIndex(); err == nil {
		s.readable.index = last
	}
	return s
}

// Failure returns the store's first failed write, or nil.
func (s *metadataStore) Failure() error {
	if p := s.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// written records the outcome of a write: the first error (outside a stop) fails the
// store.
func (s *metadataStore) written(op string, err error) error {
	if err == nil || s.closing.Load() {
		return err
	}
	s.failOnce.Do(func() {
		failure := fmt.Errorf("%w: %s of raft.db: %w", errMetadataStoreFailed, op, err)
		s.failure.Store(&failure)
		close(s.failed)
	})
	return err
}

// logWrite runs a log write unless the store has failed: a failed store refuses them
// all with its first error.
func (s *metadataStore) logWrite(op string, write func() error) error {
	if err := s.Failure(); err != nil {
		return err
	}
	if p := s.fault.Load(); p != nil {
		return s.written(op, *p)
	}
	return s.written(op, write())
}

// StoreLog implements raft.LogStore.
func (s *metadataStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs implements raft.LogStore.
func (s *metadataStore) StoreLogs(logs []*raft.Log) error {
	err := s.logWrite("append", func() error { return s.BoltStore.StoreLogs(logs) })
	if err == nil {
		s.readable.stored(logs)
	}
	return err
}

// DeleteRange implements raft.LogStore.
func (s *metadataStore) DeleteRange(lo, hi uint64) error {
	err := s.logWrite("delete range", func() error { return s.BoltStore.DeleteRange(lo, hi) })
	if err == nil {
		s.readable.deleted(lo, hi)
	}
	return err
}

// Set implements raft.StableStore. Stable-store writes (the term and the vote) are still
// tried after a failure: hashicorp/raft panics when it cannot save its term, and the
// node is being stopped anyway.
func (s *metadataStore) Set(k, v []byte) error {
	return s.written("stable write", s.BoltStore.Set(k, v))
}

// SetUint64 implements raft.StableStore (see Set).
func (s *metadataStore) SetUint64(k []byte, v uint64) error {
	return s.written("stable write", s.BoltStore.SetUint64(k, v))
}

// Close closes the BoltStore; writes refused from now on are not failures.
func (s *metadataStore) Close() error {
	s.closing.Store(true)
	return s.BoltStore.Close()
}

// metadataStoreFailure is the node's metadata store failure, or nil.
func (b *Broker) metadataStoreFailure() error {
	if b.raft == nil || b.raft.meta == nil {
		return nil
	}
	return b.raft.meta.Failure()
}

// watchMetadataStore waits for the metadata store's first failed write and then stops
// Raft on this node (see the file comment), once.
func (b *Broker) watchMetadataStore() {
	select {
	case <-b.stop:
		return
	case <-b.raft.meta.failed:
	}
	b.logger.Error("metadata store failed: Raft stopped on this node (no longer controller, voter or candidate); "+
		"client requests are refused until a restart with a writable data directory",
		"error", b.raft.meta.Failure())
	b.raft.stopVoting()
	b.leaders.notify() // forwarding and controller calls look again: there is no controller here
}

// stopVoting stops hashicorp/raft on this node (it steps down, stops voting and
// campaigning; its transport and connections close) without closing the stores, which
// close at shutdown. Bounded by stopTimeout; close may run after it.
func (n *raftNode) stopVoting() {
	future := n.raft.Shutdown()
	n.transport.Close()
	n.conns.closeAll()
	done := make(chan struct{})
	go func() {
		future.Error()
		close(done)
	}()
	timer := time.NewTimer(n.stopTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		n.logger.Warn("raft did not stop in time after the metadata store failed", "timeout", n.stopTimeout)
	}
}
