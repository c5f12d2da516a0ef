package perf

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errSyncLogClosed ends the waits of a canned broker that is closing.
var errSyncLogClosed = errors.New("canned broker: fsync log closed")

// syncStore is the whole storage of a canned broker that fsyncs (`perf
// produce-ceiling --fsync-dir`): one syncLog per partition of its topic, as a Kafka log
// keeps a file per partition, and each Produce answered once fsyncs covering all of its
// batches ended. It is the least a broker with Kafka's log layout that fsyncs before
// acknowledging must do, so the producer's rate against it is the ceiling of the
// client's window and the disk together.
type syncStore struct {
	logs []*syncLog // by partition
}

// openSyncStore opens one syncLog per partition in dir.
func openSyncStore(dir string, partitions int) (*syncStore, error) {
	st := &syncStore{}
	for range partitions {
		l, err := openSyncLog(dir)
		if err != nil {
			st.close()
			return nil, err
		}
		st.logs = append(st.logs, l)
	}
	return st, nil
}

// syncWait is a position one answer waits for in one partition's log.
type syncWait struct {
	log *syncLog
	pos int64
}

// appendBatches writes each partition's record batches of req to that partition's log
// and returns what the answer must wait for, or an error for a partition the topic
// does not have.
func (st *syncStore) appendBatches(req *kmsg.ProduceRequest) ([]syncWait, error) {
	var waits []syncWait
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if p.Partition < 0 || int(p.Partition) >= len(st.logs) {
				return nil, fmt.Errorf("canned broker: produce to partition %d of %d", p.Partition, len(st.logs))
			}
			l := st.logs[p.Partition]
			waits = append(waits, syncWait{log: l, pos: l.appendRecords(p.Records)})
		}
	}
	return waits, nil
}

// waitSynced returns once every wait's fsync ended (nil), or a log failed or closed.
func (st *syncStore) waitSynced(waits []syncWait) error {
	for _, w := range waits {
		if err := w.log.waitSynced(w.pos); err != nil {
			return err
		}
	}
	return nil
}

// stats returns the bytes written and the fsyncs ended over every partition's log.
func (st *syncStore) stats() (written, fsyncs int64) {
	for _, l := range st.logs {
		w, f := l.stats()
		written, fsyncs = written+w, fsyncs+f
	}
	return written, fsyncs
}

// files returns how many files the store writes: one per partition.
func (st *syncStore) files() int { return len(st.logs) }

// close closes every log.
func (st *syncStore) close() {
	for _, l := range st.logs {
		l.close()
	}
}

// syncLog is one file of a syncStore: record batches appended to it, one flusher
// goroutine fsyncing whatever was written since its last fsync (a group commit), and
// waiters released once an fsync covering their position ended.
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

// appendRecords writes one partition's record batches and returns the file length an
// answer must wait for.
func (l *syncLog) appendRecords(records []byte) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.written
	}
	if _, err := l.f.Write(records); err != nil {
		l.err = err
	}
	l.written += int64(len(records))
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

// syncedAnswer is one answer of a connection waiting for its fsyncs (none: at once).
type syncedAnswer struct {
	frame []byte
	waits []syncWait
}

// syncedWriter sends a connection's answers in request order, each once the fsync its
// request waits for ended, so that the connection's reader keeps reading (and
// appending) the requests behind it, as a broker's does.
// A failed write or fsync closes the connection, which ends its reader.
func (b *cannedBroker) syncedWriter(c net.Conn, answers <-chan syncedAnswer, done chan<- struct{}) {
	defer close(done)
	for a := range answers {
		err := b.sync.waitSynced(a.waits)
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
