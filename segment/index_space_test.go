//go:build linux

package segment

// Index files and disk space (P17): recovery writes no zeros over the space an index
// may grow into, and a full file system is an error of the append or the open, never a
// SIGBUS. The full-disk tests run on a small tmpfs the test mounts itself (skipped where
// mounting is not allowed: it needs root or CAP_SYS_ADMIN), and in a child process, so
// that a SIGBUS fails the test instead of killing the test binary.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// allocatedBytes sums the bytes allocated to every file under root (st_blocks × 512, not
// the apparent size: a sparse preallocated index costs nothing until written).
func allocatedBytes(tb testing.TB, root string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// crashAbandon leaves l's files as a kill -9 would: closed and unmapped, neither flushed
// nor trimmed.
func crashAbandon(l *Log) {
	l.release()
	for _, s := range l.segments {
		s.c.forget(s)
		s.detach()
	}
	l.closed = true
}

// TestRecovery_WritesNoZerosOverIndexSpace: 20 logs with Kafka's default 10 MiB indexes
// are left as a crash leaves them, then opened (every active segment recovered). The
// allocated size of their directories may grow by the rebuilt entries, not by the 20 MiB
// per log that writing zeros over the indexes' unused space costs.
func TestRecovery_WritesNoZerosOverIndexSpace(t *testing.T) {
	cfg := DefaultConfig() // segment.index.bytes 10 MiB, as in production
	cfg.IndexIntervalBytes = 256
	root := t.TempDir()
	const logs = 20
	want := make([][][]byte, logs)
	for p := range logs {
		dir := filepath.Join(root, fmt.Sprintf("topic-%d", p))
		l, _, err := Open(dir, cfg, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[p] = appendN(t, l, 40, batchSpec{records: 3, valueSize: 100, baseTimestamp: 1000, tsStep: 1}, 0)
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		crashAbandon(l)
	}
	before := allocatedBytes(t, root)
	for p := range logs {
		dir := filepath.Join(root, fmt.Sprintf("topic-%d", p))
		l, rep, err := Open(dir, cfg, OpenOptions{}) // after a crash: the active segment is recovered
		if err != nil {
			t.Fatal(err)
		}
		if rep.SegmentsRecovered != 1 || rep.Cut != nil {
			t.Fatalf("log %d: report %+v", p, rep)
		}
		crashCheckBatches(t, dir, readAll(t, l), want[p])
		defer l.Close()
	}
	after := allocatedBytes(t, root)
	t.Logf("allocated before recovery %d bytes, after %d bytes", before, after)
	if after-before > 256<<10 {
		t.Fatalf("recovery of %d logs grew their directories from %d to %d allocated bytes", logs, before, after)
	}
}

// fullDiskDirEnv names the tmpfs a child process of a full-disk test works in.
const fullDiskDirEnv = "PETREL_SEGMENT_FULL_DISK_DIR"

// inChild runs the calling test again in a child process with dir in fullDiskDirEnv and
// fails unless the child passes (a signal such as SIGBUS fails it). It returns true in
// the child, which then runs the test's body.
func inChild(t *testing.T, dir string) (child bool) {
	t.Helper()
	if os.Getenv(fullDiskDirEnv) != "" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v", "-test.timeout", "60s")
	cmd.Env = append(os.Environ(), fullDiskDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	t.Logf("child process:\n%s", out)
	return false
}

// mountSmallFS mounts a tmpfs of size bytes in a new temporary directory, or skips the
// test where this process may not mount. The mount is detached at cleanup.
func mountSmallFS(t *testing.T, size int) string {
	t.Helper()
	if dir := os.Getenv(fullDiskDirEnv); dir != "" {
		return dir // the child works in its parent's mount
	}
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillFS fills the file system of dir with a file until exactly leave bytes (whole
// pages) are free, and returns the file's path.
func fillFS(t *testing.T, dir string, leave int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for len(chunk) >= 4096 {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			chunk = chunk[:len(chunk)/2]
		}
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size() &^ 4095
	if err := f.Truncate(size - leave); err != nil {
		t.Fatal(err)
	}
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	if free := int64(sfs.Bavail) * sfs.Bsize; free != leave {
		t.Logf("free after filling: %d bytes, wanted %d", free, leave)
	}
	return path
}

// TestIndex_FullDiskAppendFailsTheLog: with two pages left on the file system, appends
// (an offset and a time index entry per batch) run out of space on the .log or an index.
// The append that does returns ENOSPC as the log's sticky failure (ErrLogFailed): no
// SIGBUS from a page fault in an index mapping. Every batch appended before it is read
// back, and, once space is freed, found again after a crash and recovery.
func TestIndex_FullDiskAppendFailsTheLog(t *testing.T) {
	mnt := mountSmallFS(t, 1<<20)
	if !inChild(t, mnt) {
		return
	}
	cfg := DefaultConfig()     // 10 MiB indexes
	cfg.IndexIntervalBytes = 0 // an entry for every batch after the first
	dir := filepath.Join(mnt, "topic-0")
	l, _, err := Open(dir, cfg, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil { // creates the files (unborn without a cache)
		t.Fatal(err)
	}
	filler := fillFS(t, mnt, 2*4096)
	var acked [][]byte
	var appendErr error
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; appendErr == nil; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d appends on a full file system without an error", i)
		}
		b := makeBatch(t, batchSpec{records: 1, valueSize: 60, baseTimestamp: int64(1000 + i), seed: byte(i)})
		if _, appendErr = l.AppendAsLeader(b, 0); appendErr == nil {
			acked = append(acked, b)
		}
	}
	if !errors.Is(appendErr, ErrLogFailed) || !errors.Is(appendErr, syscall.ENOSPC) {
		t.Fatalf("append on a full file system: %v, want ErrLogFailed wrapping ENOSPC", appendErr)
	}
	t.Logf("%d batches appended before: %v", len(acked), appendErr)
	if _, err := l.AppendAsLeader(makeBatch(t, batchSpec{records: 1, valueSize: 10}), 0); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("append after the failure: %v, want the sticky ErrLogFailed", err)
	}
	crashCheckBatches(t, "before the crash", readAll(t, l), acked)
	crashAbandon(l)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	l2, _, err := Open(dir, cfg, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	got := readAll(t, l2)
	if len(got) < len(acked) {
		t.Fatalf("after recovery %d batches, %d were appended", len(got), len(acked))
	}
	crashCheckBatches(t, "after recovery", got[:len(acked)], acked)
}

// TestRecovery_FullDiskIsAnError: a log left as a crash leaves it is opened on a file
// system with no free byte. The open recovers it or fails with ENOSPC; it never dies of
// a SIGBUS (every start did, when recovery wrote zeros through the index mapping). With
// space freed, the next open finds every batch.
func TestRecovery_FullDiskIsAnError(t *testing.T) {
	mnt := mountSmallFS(t, 1<<20)
	if !inChild(t, mnt) {
		return
	}
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 256
	dir := filepath.Join(mnt, "topic-0")
	l, _, err := Open(dir, cfg, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := appendN(t, l, 30, batchSpec{records: 2, valueSize: 100, baseTimestamp: 1000, tsStep: 1}, 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashAbandon(l)
	filler := fillFS(t, mnt, 0)
	l2, rep, err := Open(dir, cfg, OpenOptions{})
	switch {
	case err == nil:
		t.Logf("recovered on a full file system: %+v", rep)
		crashCheckBatches(t, "on a full file system", readAll(t, l2), want)
		crashAbandon(l2)
	case errors.Is(err, syscall.ENOSPC):
		t.Logf("open on a full file system: %v", err)
	default:
		t.Fatalf("open on a full file system: %v, want success or ENOSPC", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	l3, _, err := Open(dir, cfg, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	crashCheckBatches(t, "after freeing space", readAll(t, l3), want)
}
