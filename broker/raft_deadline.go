package broker

import (
	"net"
	"sync"
	"time"
)

// raftDeadlineBytes is how many bytes of one outgoing Raft RPC earn it another
// controller.quorum.request.timeout.ms. hashicorp/raft gives every synchronous RPC the
// same deadline whatever it carries (only InstallSnapshot is stretched, per 256 KiB), so
// an AppendEntries of one large entry (a whole-cluster restart's registration fences
// 100,000 partitions in one entry of about 9 MB) failed whenever the follower took
// longer than 2 s to read and store it, and was sent again from the start, each failure
// adding Raft's doubling backoff. A heartbeat or a small entry keeps the plain timeout.
const raftDeadlineBytes = 1 << 20

// sizedDeadlineConn stretches the deadline hashicorp/raft sets on an outgoing Raft
// connection (SetDeadline before each synchronous RPC) by unit
// (controller.quorum.request.timeout.ms) once per raftDeadlineBytes the RPC writes, for
// both its write and the wait for the answer: still a bound, in proportion to what was
// sent. Read and write deadlines set on their own are passed through unchanged.
type sizedDeadlineConn struct {
	net.Conn
	unit     time.Duration
	mu       sync.Mutex
	deadline time.Time // of the last SetDeadline; zero: none, nothing to stretch
	sent     int       // bytes written since that SetDeadline
}

// SetDeadline records t as the deadline to stretch.
func (c *sizedDeadlineConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline, c.sent = t, 0
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

// SetReadDeadline passes t through; the next writes stretch nothing.
func (c *sizedDeadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = time.Time{}
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline passes t through; the next writes stretch nothing.
func (c *sizedDeadlineConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = time.Time{}
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// Write moves the deadline out by unit for every raftDeadlineBytes written since it was
// set, then writes.
func (c *sizedDeadlineConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.deadline.IsZero() && c.unit > 0 {
		before := c.sent / raftDeadlineBytes
		c.sent += len(p)
		if after := c.sent / raftDeadlineBytes; after > before {
			if err := c.Conn.SetDeadline(c.deadline.Add(time.Duration(after) * c.unit)); err != nil {
				c.mu.Unlock()
				return 0, err
			}
		}
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}
