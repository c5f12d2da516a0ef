package rpc

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// sendfileSupported says whether sendFile exists on this platform.
const sendfileSupported = true

// maxSendfileChunk bounds one sendfile call (Linux moves at most 0x7ffff000 bytes).
const maxSendfileChunk = 1 << 30

// sendFile sends s on tc with sendfile(2) at an explicit file offset, so that any
// number of responses may send from the same file at once (the file's own position is
// never used or moved). Go's TCPConn.ReadFrom would do sendfile only for an
// *os.File (or a LimitedReader around one) at its current position, which concurrent
// senders of one segment cannot share. The file descriptor is held by its RawConn for
// the duration, and the write waits for the socket through the poller, honouring the
// write deadline.
func sendFile(tc *net.TCPConn, s FileSection) error {
	out, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	in, err := s.File.SyscallConn()
	if err != nil {
		return err
	}
	var sent int64
	var sendErr error
	readErr := in.Read(func(infd uintptr) bool {
		off := s.Offset
		writeErr := out.Write(func(outfd uintptr) bool {
			for sent < s.Size {
				n, err := syscall.Sendfile(int(outfd), int(infd), &off, int(min(s.Size-sent, maxSendfileChunk)))
				if n > 0 {
					sent += int64(n)
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until the socket is writable
				case errors.Is(err, syscall.EINTR):
					continue
				case err != nil:
					sendErr = &net.OpError{Op: "sendfile", Net: "tcp", Err: err}
					return true
				case n == 0:
					sendErr = fmt.Errorf("%w: %s at %d: %d of %d bytes", ErrShortSection, s.File.Name(), s.Offset, sent, s.Size)
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = writeErr
		}
		return true
	})
	if sendErr != nil {
		return sendErr
	}
	return readErr
}

// sendMore writes b on tc with sendmsg(2) and MSG_MORE: the kernel queues the bytes
// without pushing a packet, as TCP_CORK would for this one call, so that they leave
// with what the next sendfile adds. The wait for the socket goes through the poller,
// honouring the write deadline.
func sendMore(tc *net.TCPConn, b []byte) error {
	out, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	writeErr := out.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			n, err := syscall.SendmsgN(int(fd), b, nil, nil, syscall.MSG_MORE)
			if n > 0 {
				b = b[n:]
			}
			switch {
			case errors.Is(err, syscall.EAGAIN):
				return false // wait until the socket is writable
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil:
				sendErr = &net.OpError{Op: "sendmsg", Net: "tcp", Err: err}
				return true
			}
		}
		return true
	})
	if sendErr != nil {
		return sendErr
	}
	return writeErr
}
