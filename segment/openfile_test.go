package segment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// OpenFile and ReadFile behave as os.OpenFile and os.ReadFile: a missing file is
// os.ErrNotExist with its path, O_CREATE makes it, what is written reads back whole
// at every size around ReadFile's one read, and the descriptor is closed on exec.
func TestOpenFileAndReadFileAsOs(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	if _, err := OpenFile(missing, os.O_RDONLY, 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("open of a missing file: %v", err)
	} else if pe, ok := err.(*os.PathError); !ok || pe.Path != missing {
		t.Fatalf("open of a missing file: %#v, want a PathError naming it", err)
	}
	if _, err := ReadFile(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read of a missing file: %v", err)
	}
	for _, size := range []int{0, 1, 511, 512, 513, 4096, 70_000} {
		path := filepath.Join(dir, "f")
		f, err := OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Repeat([]byte{byte(size)}, size)
		if _, err := f.Write(want); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("size %d: read %d bytes, %v", size, len(got), err)
		}
	}
	f, err := OpenFile(filepath.Join(dir, "f"), os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFD, 0); errno != 0 || flags&syscall.FD_CLOEXEC == 0 {
		t.Fatalf("descriptor flags %#x, %v: want FD_CLOEXEC", flags, errno)
	}
}

// BenchmarkOpenFile compares an open and close, and a small file's read, with the os
// package's and with OpenFile and ReadFile (machine A, 2026-12-06: 4.75 against 3.32
// µs per open and close, 7.1 against 4.3 µs per read of a checkpoint).
func BenchmarkOpenFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "leader-epoch-checkpoint")
	if err := os.WriteFile(path, []byte("0\n1\n0 0\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	opens := map[string]func(string, int, os.FileMode) (*os.File, error){"os": os.OpenFile, "segment": OpenFile}
	reads := map[string]func(string) ([]byte, error){"os": os.ReadFile, "segment": ReadFile}
	for _, via := range []string{"os", "segment"} {
		b.Run("open-close/"+via, func(b *testing.B) {
			for b.Loop() {
				f, err := opens[via](path, os.O_RDWR, 0)
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
		b.Run("read/"+via, func(b *testing.B) {
			for b.Loop() {
				if _, err := reads[via](path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenCleanLog is what a start does in this package for each replica written
// since its last roll: open its log after a clean shutdown, replay its batch headers
// (the producer state), and close it (machine A, 2026-12-06: 51.4 µs with os.OpenFile,
// 42.9 µs with OpenFile).
//
// With the description its last clean close gave (shutdown_state.go), the open reads
// nothing and the replica's producer state comes with the description: the same steps
// are an open from it, with nothing to replay, and a close.
func BenchmarkOpenCleanLog(b *testing.B) {
	cfg := DefaultConfig()
	fc := NewFileCache(64)
	l, dir := openTestLog(b, cfg, OpenOptions{Files: fc})
	appendN(b, l, 1, batchSpec{records: 1, valueSize: 100}, 0)
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	st, ok := l.ShutdownState()
	if !ok {
		b.Fatal("no shutdown state")
	}
	for _, bc := range []struct {
		name  string
		state *ShutdownState
	}{{"files", nil}, {"description", &st}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				l, _, err := Open(dir, cfg, OpenOptions{Files: fc, CleanShutdown: true, RecoveryPoint: st.LogEndOffset(), ShutdownState: bc.state})
				if err != nil {
					b.Fatal(err)
				}
				from := int64(0)
				if bc.state != nil {
					from = l.LogEndOffset()
				}
				if err := l.ScanBatchHeaders(from, func(BatchHeader) error { return nil }); err != nil {
					b.Fatal(err)
				}
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
