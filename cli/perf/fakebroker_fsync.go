package perf

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
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
	logs []*syncLog // by partition; nil for a partition another node leads (replicated)

	// replicated is set in a node of a canned cluster (openReplicatedStore): each
	// batch's CRC is checked before it is stored, as a Kafka leader checks it, and
	// every append wakes the followers' waiting fetches.
	replicated bool
	mu         sync.Mutex
	appended   chan struct{} // closed and replaced at each append; under mu
	closed     chan struct{} // closed by close
}

// openSyncStore opens one syncLog per partition in dir.
func openSyncStore(dir string, partitions int) (*syncStore, error) {
	return openStore(dir, partitions, func(int32) bool { return true }, 0)
}

// openStore opens a syncLog in dir for each of partitions that lead says this node
// leads, each waiting for followers acknowledgements besides its fsync.
func openStore(dir string, partitions int, lead func(int32) bool, followers int) (*syncStore, error) {
	st := &syncStore{appended: make(chan struct{}), closed: make(chan struct{})}
	for p := range int32(partitions) {
		if !lead(p) {
			st.logs = append(st.logs, nil)
			continue
		}
		l, err := openSyncLog(dir, followers)
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
			if p.Partition < 0 || int(p.Partition) >= len(st.logs) || st.logs[p.Partition] == nil {
				return nil, fmt.Errorf("canned broker: produce to partition %d of %d, not led here", p.Partition, len(st.logs))
			}
			if st.replicated {
				if err := checkBatches(p.Records); err != nil {
					return nil, fmt.Errorf("canned broker: partition %d: %w", p.Partition, err)
				}
			}
			l := st.logs[p.Partition]
			waits = append(waits, syncWait{log: l, pos: l.appendRecords(p.Records)})
		}
	}
	if st.replicated {
		st.mu.Lock()
		close(st.appended)
		st.appended = make(chan struct{})
		st.mu.Unlock()
	}
	return waits, nil
}

// appendedSince returns a channel closed at the next append.
func (st *syncStore) appendedSince() <-chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.appended
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
		if l == nil {
			continue
		}
		w, f := l.stats()
		written, fsyncs = written+w, fsyncs+f
	}
	return written, fsyncs
}

// files returns how many files the store writes: one per partition it leads.
func (st *syncStore) files() int {
	n := 0
	for _, l := range st.logs {
		if l != nil {
			n++
		}
	}
	return n
}

// close closes every log and ends the followers' waiting fetches.
func (st *syncStore) close() {
	close(st.closed)
	for _, l := range st.logs {
		if l != nil {
			l.close()
		}
	}
}

// syncLog is one file of a syncStore: record batches appended to it, one flusher
// goroutine fsyncing whatever was written since its last fsync (a group commit), and
// waiters released once an fsync covering their position ended and every follower
// acknowledged it.
type syncLog struct {
	f *os.File

	mu      sync.Mutex
	cond    *sync.Cond
	written int64   // bytes appended; under mu
	synced  int64   // bytes covered by an ended fsync; under mu
	acked   []int64 // bytes each follower has fsynced, by follower slot; under mu
	ends    []int64 // where each append ended, for fetch answers of whole appends; under mu
	err     error   // the first failed write or fsync, or errSyncLogClosed; under mu
	fsyncs  int64   // fsyncs ended; under mu
	done    chan struct{}
}

func openSyncLog(dir string, followers int) (*syncLog, error) {
	f, err := os.CreateTemp(dir, "produce-ceiling-*.log")
	if err != nil {
		return nil, err
	}
	l := &syncLog{f: f, done: make(chan struct{}), acked: make([]int64, followers)}
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
	if len(l.acked) > 0 { // a leader's: its followers fetch whole appends
		l.ends = append(l.ends, l.written)
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
		switch {
		case err == nil:
			l.synced, l.fsyncs = target, l.fsyncs+1
		case l.err == nil:
			l.err = err // the waiters fail; nothing after it counts as synced
		}
		l.cond.Broadcast()
	}
}

// waitSynced returns once an fsync covering the first pos bytes ended (nil), or the
// log failed or closed.
func (l *syncLog) waitSynced(pos int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.committedLocked(pos) && l.err == nil {
		l.cond.Wait()
	}
	if l.committedLocked(pos) {
		return nil
	}
	return l.err
}

// committedLocked reports whether the first pos bytes are fsynced here and on every
// follower.
func (l *syncLog) committedLocked(pos int64) bool {
	if l.synced < pos {
		return false
	}
	for _, a := range l.acked {
		if a < pos {
			return false
		}
	}
	return true
}

// ack records that the follower in slot has fsynced the first pos bytes, which its
// fetch from pos tells; a position beyond what was written is refused.
func (l *syncLog) ack(slot int, pos int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if pos > l.written || pos < l.acked[slot] {
		return fmt.Errorf("follower fetch at byte %d of %d (acknowledged %d)", pos, l.written, l.acked[slot])
	}
	if pos > l.acked[slot] {
		l.acked[slot] = pos
		l.cond.Broadcast()
	}
	return nil
}

// fetchable returns how many bytes from pos (where an append ended) a fetch answer
// carries: the whole appends after pos that fit in limit bytes, and with atLeastOne the
// first of them even when it does not fit, as Kafka answers a batch larger than the
// fetch's limits whole when it is the first; 0 when there is none.
func (l *syncLog) fetchable(pos, limit int64, atLeastOne bool) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.ends), func(i int) bool { return l.ends[i] > pos })
	n := int64(0)
	if i < len(l.ends) && atLeastOne {
		n, i = l.ends[i]-pos, i+1
	}
	for ; i < len(l.ends) && l.ends[i]-pos <= limit; i++ {
		n = l.ends[i] - pos
	}
	return n
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
