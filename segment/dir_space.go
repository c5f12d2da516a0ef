package segment

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DirSpaceInterval is how long a free-space reading is used before the file system is
// asked again: a produce costs an atomic load, not a statfs per request.
const DirSpaceInterval = 100 * time.Millisecond

// DefaultMinFreeBytes is the free-space floor when petrel.log.dir.min.free.bytes is -1:
// 1 % of the file system's size, at most 256 MiB.
func DefaultMinFreeBytes(fsSize int64) int64 { return min(256<<20, fsSize/100) }

// DirSpace reads the free space of a log directory's file system and compares it with
// a floor (petrel.log.dir.min.free.bytes: bytes, -1 for DefaultMinFreeBytes, 0 off).
// Safe for concurrent use; mu is a leaf, held only around a statfs.
type DirSpace struct {
	dir     string
	minFree int64 // the floor as configured
	mu      sync.Mutex
	// statfs reads the file system (statfsBytes; tests replace it). Guarded by mu.
	statfs func(dir string) (free, size int64, err error)
	// readAt is when free and floor were read (UnixNano; 0 never).
	readAt atomic.Int64
	// free is the bytes available at readAt, -1 when unknown; floor is the floor in
	// bytes then (0: off).
	free, floor atomic.Int64
}

// NewDirSpace returns the free space of dir's file system against minFree.
func NewDirSpace(dir string, minFree int64) *DirSpace {
	s := &DirSpace{dir: dir, minFree: minFree, statfs: statfsBytes}
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

// Read returns the free bytes and the floor, reading the file system again when the
// last reading is older than DirSpaceInterval. A statfs that fails leaves the free
// space unknown (-1) and the floor unenforced: the writes themselves then tell.
func (s *DirSpace) Read(now time.Time) (free, floor int64) {
	if s.minFree == 0 {
		return s.free.Load(), 0
	}
	if now.UnixNano()-s.readAt.Load() >= int64(DirSpaceInterval) && s.mu.TryLock() {
		if now.UnixNano()-s.readAt.Load() >= int64(DirSpaceInterval) {
			free, size, err := s.statfs(s.dir)
			floor := s.minFree
			if floor < 0 {
				floor = DefaultMinFreeBytes(size)
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

// BelowFloor reports whether the free space is known and below the floor now, with
// both.
func (s *DirSpace) BelowFloor(now time.Time) (free, floor int64, below bool) {
	free, floor = s.Read(now)
	return free, floor, floor > 0 && free >= 0 && free < floor
}

// Fresh reads the file system now (a scrape), whatever the age of the last reading.
func (s *DirSpace) Fresh(now time.Time) (free int64, below bool) {
	if s.minFree == 0 {
		s.mu.Lock()
		free, _, err := s.statfs(s.dir)
		s.mu.Unlock()
		if err != nil {
			free = -1
		}
		return free, false
	}
	s.readAt.Store(0)
	free, _, below = s.BelowFloor(now)
	return free, below
}

// SetStatfs replaces how the file system is read (tests), forgetting the last reading.
func (s *DirSpace) SetStatfs(f func(dir string) (free, size int64, err error)) {
	s.mu.Lock()
	s.statfs = f
	s.readAt.Store(0)
	s.mu.Unlock()
}
