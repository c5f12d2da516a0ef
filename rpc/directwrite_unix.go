//go:build unix

package rpc

import (
	"errors"
	"net"
	"syscall"
)

// directWriteSupported says whether tryWrite exists on this platform.
const directWriteSupported = true

// tryWrite makes one non-blocking write of b on tc and returns how much was written:
// a full socket buffer (EAGAIN) is n < len(b) with a nil error, never a wait.
func tryWrite(tc *net.TCPConn, b []byte) (int, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0, err
	}
	n := 0
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, err := syscall.Write(int(fd), b[n:])
			if m > 0 {
				n += m
			}
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.EAGAIN):
				return true // full: the rest is the writer's
			case err != nil:
				werr = &net.OpError{Op: "write", Net: "tcp", Err: err}
				return true
			case m == 0:
				return true
			}
		}
		return true
	})
	if werr != nil {
		return n, werr
	}
	if err != nil && n == 0 {
		// The poller refused (write deadline passed, connection closing): the writer
		// tries, and reports what it finds.
		return 0, nil
	}
	return n, nil
}
