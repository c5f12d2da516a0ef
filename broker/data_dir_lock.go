package broker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// dataDirLockFile is Kafka's lock file of a log directory, here for the whole data
// directory (raft/ and logs/): the first thing a node does is take an exclusive flock(2)
// on it, held until Shutdown or Kill returns (or the process ends), so that a second
// process on the same directory stops at once instead of opening its ports and waiting
// for raft.db's lock forever. It holds the holder's pid, for the second one's message.
// The file is never removed: removing it would let two processes lock two files of the
// same name.
const dataDirLockFile = ".lock"

// DataDirInUseError is Start's error when another process, or another Broker of this
// one, holds the data directory's lock.
type DataDirInUseError struct {
	Dir string // the data directory, as configured
	PID int    // the holder's process id; 0 when it could not be read
}

// Error is "data directory D is in use by process N".
func (e *DataDirInUseError) Error() string {
	if e.PID <= 0 {
		return fmt.Sprintf("data directory %s is in use by another process", e.Dir)
	}
	return fmt.Sprintf("data directory %s is in use by process %d", e.Dir, e.PID)
}

// dataDirLock is a held lock of a data directory.
type dataDirLock struct {
	f *os.File // its descriptor holds the flock; closing it releases the lock
}

// lockDataDir creates dir if needed and takes its lock without waiting: a
// *DataDirInUseError when it is held (by another process, or by another open
// descriptor of this one: flock locks belong to the open file).
func lockDataDir(dir string) (*dataDirLock, error) {
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, dataDirLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &DataDirInUseError{Dir: dir, PID: lockHolder(path)}
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(pid, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return &dataDirLock{f: f}, nil
}

// lockHolderWait bounds how long lockHolder waits for a holder that has just taken the
// lock to write its pid.
const lockHolderWait = 500 * time.Millisecond

// lockHolder reads the pid the lock's holder wrote into path; 0 when none appears
// within lockHolderWait.
func lockHolder(path string) int {
	deadline := time.Now().Add(lockHolderWait)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			return 0
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// release releases the lock (nil-safe, idempotent).
func (l *dataDirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	l.f.Close()
	l.f = nil
}
