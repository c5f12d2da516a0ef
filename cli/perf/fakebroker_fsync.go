package perf

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errSyncLogClosed ends the waits of a canned broker that is closing.
var errSyncLogClosed = errors.New("canned broker: fsync log closed")

// syncLog is the whole storage of a canned broker that fsyncs (`perf produce-ceiling
// --fsync-dir`): every Produce's record batches appended to one file, one flusher
// goroutine fsyncing whatever was written since its last fsync (a group commit), and
// each answer sent once an fsync covering its batches ended. It is the least any broker
// that fsyncs before acknowledging must do, so the producer's rate against it is the
// ceiling of the client's window and the disk together.
type syncLog struct {
	f *os.File

	mu      sync.Mutex
	cond    *sync.Cond
	written int64 // bytes appended; under mu
	synced  int64 // bytes covered by an ended fsync; under mu
	err     error // the first failed write or fsync, or errSyncLogClosed; under mu
	fsyncs  int64 // fsyncs ended; under mu
	done    chan struct{}
}

func openSyncLog(dir string) (*syncLog, error) {
	f, err := os.CreateTemp(dir, "produce-ceiling-*.log")
	if err != nil {
		return nil, err
	}
	l := &syncLog{f: f, done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	go l.flush()
	return l, nil
}

// appendBatches writes the request's record batches and returns the file length the
// answer must wait for.
func (l *syncLog) appendBatches(req *kmsg.ProduceRequest) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if l.err != nil {
				return l.written
			}
			if _, err := l.f.Write(p.Records); err != nil {
				l.err = err
			}
			l.written += int64(len(p.Records))
		}
	}
	l.cond.Broadcast()
	return l.written
}

// flush fsyncs, one at a time, everything written before each fsync began.
func (l *syncLog) flush() {
	defer close(l.done)
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for l.err == nil && l.synced == l.written {
			l.cond.Wait()
		}
		if l.err != nil {
			l.cond.Broadcast()
			return
		}
		target := l.written
		l.mu.Unlock()
		err := l.f.Sync()
		l.mu.Lock()
		if err != nil && l.err == nil {
			l.err = err
		}
		l.synced, l.fsyncs = target, l.fsyncs+1
		l.cond.Broadcast()
	}
}

// waitSynced returns once an fsync covering the first pos bytes ended (nil), or the
// log failed or closed.
func (l *syncLog) waitSynced(pos int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.synced < pos && l.err == nil {
		l.cond.Wait()
	}
	if l.synced >= pos {
		return nil
	}
	return l.err
}

// stats returns the bytes written and the fsyncs ended.
func (l *syncLog) stats() (written, fsyncs int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written, l.fsyncs
}

// close stops the flusher, ends every wait and removes the file.
func (l *syncLog) close() {
	l.mu.Lock()
	if l.err == nil {
		l.err = errSyncLogClosed
	}
	l.cond.Broadcast()
	l.mu.Unlock()
	<-l.done
	_ = l.f.Close()
	_ = os.Remove(filepath.Clean(l.f.Name()))
}

// syncedAnswer is one answer of a connection waiting for its fsync (pos 0: none).
type syncedAnswer struct {
	frame []byte
	pos   int64
}

// syncedWriter sends a connection's answers in request order, each once the fsync its
// request waits for ended, so that the connection's reader keeps reading (and
// appending) the requests behind it, as a broker's does.
// A failed write or fsync closes the connection, which ends its reader.
func (b *cannedBroker) syncedWriter(c net.Conn, answers <-chan syncedAnswer, done chan<- struct{}) {
	defer close(done)
	for a := range answers {
		err := b.sync.waitSynced(a.pos)
		if err == nil {
			_, err = c.Write(a.frame)
		}
		if err != nil {
			_ = c.Close()
			for range answers { // let the reader finish; it stops at its next read
			}
			return
		}
	}
}
