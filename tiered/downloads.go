package tiered

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrDownloadsClosed is a read that would start a download after Downloads.Close (the
// broker is stopping).
var ErrDownloadsClosed = errors.New("tiered: remote reads are stopping")

// Downloads runs the chunk and index caches' reads from the object store apart from
// the reads that need them. A download, once started, runs to its end (its own timeout,
// or Close) whoever waits for it: a fetch that gives up at remote.fetch.max.wait.ms
// leaves the chunk to the cache, where the next fetch finds it or joins the download
// still in flight, so that a store slower than the remote wait still makes progress.
// At most n downloads run at once; read-ahead takes a slot only while half of them
// are free. Safe for concurrent use.
type Downloads struct {
	timeout time.Duration
	slots   chan struct{} // a send takes a slot
	ctx     context.Context
	cancel  context.CancelFunc

	mu     sync.Mutex // guards closed and wg.Add
	closed bool
	wg     sync.WaitGroup
}

// NewDownloads returns a runner of at most n downloads at once (at least 1), each
// bounded by timeout.
func NewDownloads(n int, timeout time.Duration) *Downloads {
	ctx, cancel := context.WithCancel(context.Background())
	return &Downloads{timeout: timeout, slots: make(chan struct{}, max(n, 1)), ctx: ctx, cancel: cancel}
}

// Close cancels the downloads in flight and waits for them to end; later reads that
// would start one fail with ErrDownloadsClosed.
func (d *Downloads) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// InFlight returns the number of downloads running.
func (d *Downloads) InFlight() int { return len(d.slots) }

// acquire takes a slot, waiting for one until ctx ends; with ahead it does not wait,
// and takes one only while half the slots are free (false when it does not).
func (d *Downloads) acquire(ctx context.Context, ahead bool) (bool, error) {
	if ahead {
		if len(d.slots) >= (cap(d.slots)+1)/2 {
			return false, nil
		}
		select {
		case d.slots <- struct{}{}:
		default:
			return false, nil
		}
	} else {
		select {
		case d.slots <- struct{}{}:
		case <-ctx.Done():
			return false, ctx.Err()
		case <-d.ctx.Done():
			return false, ErrDownloadsClosed
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		<-d.slots
		return false, ErrDownloadsClosed
	}
	d.wg.Add(1)
	return true, nil
}

// run runs fetch on its own goroutine in the slot acquire took, with a context of the
// download timeout that Close cancels, then gives the slot back and calls done (those
// waiting for the download find the slot free).
func (d *Downloads) run(fetch func(context.Context), done func()) {
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(d.ctx, d.timeout)
		fetch(ctx)
		cancel()
		<-d.slots
		done()
	}()
}

// download is one download in flight; data and err are set before done is closed.
type download struct {
	done chan struct{}
	data []byte
	err  error
}

// cacheRead is a cache's read of one item (a chunk, an index) through Downloads.
type cacheRead[K comparable] struct {
	d        *Downloads
	mu       *sync.Mutex           // the cache's lock, guarding inFlight and what has reads
	inFlight map[K]*download       // the cache's downloads in flight
	key      K                     // the item
	cached   func() ([]byte, bool) // the item from the cache (called without mu)
	has      func() bool           // whether the cache holds the item (mu held)
	fetch    func(context.Context) ([]byte, error)
	keep     func([]byte) // caches a downloaded item (called without mu)
	op       string       // the storage operation, for a ctx error
}

// get returns the item: from the cache, or from the download of it in flight (joined),
// or a new one (started); it waits for the download until ctx ends, while the download
// goes on.
func (r *cacheRead[K]) get(ctx context.Context) ([]byte, error) {
	return r.getOrStart(ctx, false)
}

// prefetch starts the item's download (read-ahead) when it is neither cached nor in
// flight and a slot is free at once, and returns without waiting for it.
func (r *cacheRead[K]) prefetch() {
	r.getOrStart(context.Background(), true) //nolint:errcheck // a failed read-ahead is a later miss
}

// getOrStart is get; with ahead it only starts the download, if a slot is free.
func (r *cacheRead[K]) getOrStart(ctx context.Context, ahead bool) ([]byte, error) {
	for {
		if ahead {
			r.mu.Lock()
			_, busy := r.inFlight[r.key]
			busy = busy || r.has()
			r.mu.Unlock()
			if busy {
				return nil, nil // cached or being fetched: nothing to read ahead
			}
		} else if data, ok := r.cached(); ok {
			return data, nil
		}
		r.mu.Lock()
		f := r.inFlight[r.key]
		cachedMeanwhile := f == nil && r.has()
		r.mu.Unlock()
		if cachedMeanwhile {
			continue
		}
		if f == nil {
			var err error
			if f, err = r.start(ctx, ahead); err != nil {
				return nil, err
			}
			if f == nil && !ahead {
				continue // started or cached by another read meanwhile
			}
		}
		if ahead {
			return nil, nil
		}
		select {
		case <-f.done:
			return f.data, f.err
		case <-ctx.Done():
			return nil, &StorageError{Op: r.op, Err: ctx.Err()}
		}
	}
}

// start takes a slot and starts the download, unless another read started it or
// cached the item meanwhile (nil then, the slot given back).
func (r *cacheRead[K]) start(ctx context.Context, ahead bool) (*download, error) {
	ok, err := r.d.acquire(ctx, ahead)
	if err != nil {
		return nil, &StorageError{Op: r.op, Err: err}
	}
	if !ok {
		return nil, nil
	}
	r.mu.Lock()
	if _, busy := r.inFlight[r.key]; busy || r.has() {
		r.mu.Unlock()
		r.d.abandon()
		return nil, nil
	}
	f := &download{done: make(chan struct{})}
	r.inFlight[r.key] = f
	r.mu.Unlock()
	key, fetch, keep, mu, inFlight := r.key, r.fetch, r.keep, r.mu, r.inFlight
	r.d.run(func(ctx context.Context) {
		f.data, f.err = fetch(ctx)
		if f.err == nil {
			keep(f.data)
		}
	}, func() {
		mu.Lock()
		delete(inFlight, key)
		mu.Unlock()
		close(f.done)
	})
	return f, nil
}

// abandon gives back a slot acquire took, without running a download in it.
func (d *Downloads) abandon() {
	<-d.slots
	d.wg.Done()
}
