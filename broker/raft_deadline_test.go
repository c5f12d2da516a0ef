package broker

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestRaftDeadlineStretchesWithTheBytesSent: an outgoing Raft RPC that writes 4 MiB
// waits for its answer up to 4 more timeouts, so a follower that takes three timeouts
// to store a large entry answers in time (hashicorp/raft's fixed deadline failed it, and
// the entry was sent again); a small RPC keeps the plain timeout.
func TestRaftDeadlineStretchesWithTheBytesSent(t *testing.T) {
	const unit = 300 * time.Millisecond
	rpc := func(size int) error {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		c := &sizedDeadlineConn{Conn: a, unit: unit}
		go func() { // the follower: reads the request, stores it slowly, answers
			if _, err := io.CopyN(io.Discard, b, int64(size)); err != nil {
				return
			}
			time.Sleep(3 * unit) // the slow store, not a synchronisation
			b.Write([]byte{1})
		}()
		if err := c.SetDeadline(time.Now().Add(unit)); err != nil {
			return err
		}
		if _, err := c.Write(make([]byte, size)); err != nil {
			return err
		}
		var answer [1]byte
		_, err := io.ReadFull(c, answer[:])
		return err
	}
	if err := rpc(4 * raftDeadlineBytes); err != nil {
		t.Fatalf("an RPC of 4 MiB whose follower answered after 3 timeouts: %v", err)
	}
	if err := rpc(100); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a small RPC whose follower answered after 3 timeouts: %v, want the deadline exceeded", err)
	}
}
