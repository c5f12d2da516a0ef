package broker

// The free-space floor of the log directory (petrel.log.dir.min.free.bytes), a
// protection Kafka does not have: below it, Produce is refused with a retriable error
// before the file system is actually full, so that producers back off and retry while
// an operator adds space or retention frees it, instead of the log directory going
// offline at its first failed write (offline_replicas.go). Replication, coordinator
// writes and transaction markers still append: they are small, and a follower that
// stopped fetching would leave the ISR.
//
// The error is NOT_ENOUGH_REPLICAS (19): the one refusal before the append that every
// client retries — Java's NotEnoughReplicasException is a RetriableException, and
// librdkafka, franz-go, sarama, kafka-go and kafkajs retry it — and that says nothing
// was written. KAFKA_STORAGE_ERROR is not retried by every client (and, answered for a
// replica, makes clients look for another leader, which the floor does not move);
// NOT_ENOUGH_REPLICAS_AFTER_APPEND would tell an idempotent producer that the batch
// was written; REQUEST_TIMED_OUT would leave the outcome unknown. The response's error
// message names the floor.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/petrel-broker/petrel/config"
)

// logDirSpaceInterval is how long a free-space reading is used before the file system
// is asked again: Produce costs an atomic load, not a statfs per request.
const logDirSpaceInterval = 100 * time.Millisecond

// defaultMinFreeBytes is the floor when the property is -1: 1 % of the file system's
// size, at most 256 MiB.
func defaultMinFreeBytes(fsSize int64) int64 { return min(256<<20, fsSize/100) }

// logDirSpace reads the free space of the log directory's file system and compares it
// with the floor. Safe for concurrent use; mu is a leaf, held only around a statfs.
type logDirSpace struct {
	dir      string
	property int64 // petrel.log.dir.min.free.bytes as configured
	mu       sync.Mutex
	// statfs reads the file system (statfsBytes; tests replace it). Guarded by mu.
	statfs func(dir string) (free, size int64, err error)
	// readAt is when free and floor were read (UnixNano; 0 never).
	readAt atomic.Int64
	// free is the bytes available to the broker at readAt, -1 when unknown; floor is the
	// floor in bytes then (0: off).
	free, floor atomic.Int64
}

func newLogDirSpace(dir string, property int64) *logDirSpace {
	s := &logDirSpace{dir: dir, property: property, statfs: statfsBytes}
	s.free.Store(-1)
	return s
}

// statfsBytes returns the bytes of dir's file system available to an unprivileged user
// (f_bavail, so root's reserved blocks do not count) and its size.
func statfsBytes(dir string) (free, size int64, err error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return -1, -1, err
	}
	return int64(fs.Bavail) * int64(fs.Bsize), int64(fs.Blocks) * int64(fs.Bsize), nil
}

// read returns the free bytes and the floor, reading the file system again when the
// last reading is older than logDirSpaceInterval. A statfs that fails leaves the free
// space unknown (-1) and the floor unenforced: the writes themselves then tell.
func (s *logDirSpace) read(now time.Time) (free, floor int64) {
	if s.property == 0 {
		return s.free.Load(), 0
	}
	if now.UnixNano()-s.readAt.Load() >= int64(logDirSpaceInterval) && s.mu.TryLock() {
		if now.UnixNano()-s.readAt.Load() >= int64(logDirSpaceInterval) {
			free, size, err := s.statfs(s.dir)
			floor := s.property
			if floor < 0 {
				floor = defaultMinFreeBytes(size)
			}
			if err != nil {
				free, floor = -1, 0
			}
			s.free.Store(free)
			s.floor.Store(floor)
			s.readAt.Store(now.UnixNano())
		}
		s.mu.Unlock()
	}
	return s.free.Load(), s.floor.Load()
}

// belowFloor reports why Produce is refused now, or nil.
func (s *logDirSpace) belowFloor(now time.Time) error {
	free, floor := s.read(now)
	if floor <= 0 || free < 0 || free >= floor {
		return nil
	}
	return fmt.Errorf("the log directory's file system has %d bytes free, below %s=%d: produce refused until space is freed",
		free, config.MinFreeBytesProperty, floor)
}

// fresh reads the file system now (a scrape), whatever the age of the last reading.
func (s *logDirSpace) fresh(now time.Time) (free int64, below bool) {
	if s.property == 0 {
		s.mu.Lock()
		free, _, err := s.statfs(s.dir)
		s.mu.Unlock()
		if err != nil {
			free = -1
		}
		return free, false
	}
	s.readAt.Store(0)
	free, floor := s.read(now)
	return free, floor > 0 && free >= 0 && free < floor
}

// setStatfs replaces how the file system is read (tests), forgetting the last reading.
func (s *logDirSpace) setStatfs(f func(dir string) (free, size int64, err error)) {
	s.mu.Lock()
	s.statfs = f
	s.readAt.Store(0)
	s.mu.Unlock()
}
