package segment

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// OpenFile is os.OpenFile for the files of a log directory, in one system call fewer
// than five: os.OpenFile offers every descriptor to Go's poller, which refuses a regular
// file, and spends two fcntl calls making it non-blocking, an epoll_ctl and two fcntl
// calls undoing it on each open. A start opens several files of each of many replicas,
// and the file cache reopens segments, so these opens are a measurable share of both.
// The descriptor is a blocking one, as os.OpenFile's regular files end up.
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if !errors.Is(err, syscall.EINTR) {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
}

// ReadFile is os.ReadFile for the small files of a log directory (checkpoints,
// partition.metadata, producer snapshots): one open and, for a file of less than 512
// bytes, one read, without os.ReadFile's stat and its read of the end of file (a read
// of a regular file returns fewer bytes than asked only at its end).
func ReadFile(name string) ([]byte, error) {
	f, err := OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, err := f.Read(buf)
	if errors.Is(err, io.EOF) || err == nil && n < len(buf) {
		return buf[:n], nil
	}
	if err != nil {
		return nil, err
	}
	rest, err := io.ReadAll(f)
	return append(buf, rest...), err
}
