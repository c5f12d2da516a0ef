package integration

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestOneWayCutHoldsBytesUntilTheHeal checks the harness's one-way cut itself: what
// the cut side writes arrives only after the heal, in order and whole; the other
// direction flows; a dial across the cut hangs until its context ends.
func TestOneWayCutHoldsBytesUntilTheHeal(t *testing.T) {
	n := newNetwork()
	defer n.closeAll()
	ln0, err := n.listen(0, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer ln0.Close()
	ln1, err := n.listen(1, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer ln1.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c1, err := n.dialer(1)(ctx, "tcp", ln0.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c0, err := ln0.Accept()
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, c1, "hello") // node 0 learns the connection is node 1's
	readExactly(t, c0, "hello")

	n.cutOneWay(1, 0)
	writeAll(t, c1, "held-")
	writeAll(t, c1, "back")
	_ = c0.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) // a bounded look for bytes that must not come
	if k, err := c0.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("node 0 read %d bytes (%v) across the cut", k, err)
	}
	writeAll(t, c0, "answer") // the other way flows
	readExactly(t, c1, "answer")
	dialCtx, dialCancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer dialCancel()
	if _, err := n.dialer(0)(dialCtx, "tcp", ln1.Addr().String()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a dial across the cut: %v, want it to hang until its context ends", err)
	}

	n.heal()
	writeAll(t, c1, "-after")
	readExactly(t, c0, "held-back-after")
}

// writeAll writes s to c whole, or fails the test.
func writeAll(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if k, err := c.Write([]byte(s)); err != nil || k != len(s) {
		t.Fatalf("write %q: %d, %v", s, k, err)
	}
}

// readExactly reads len(want) bytes from c within 10 s and fails the test unless they
// are want.
func readExactly(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("read %q (%v), want %q", got, err, want)
	}
}
