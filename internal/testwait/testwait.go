// Package testwait is the tests' one way to wait for a condition: poll it with a
// deadline, never sleep a fixed time to synchronise. Every package's tests use it;
// no production code may import it (deps_test.go).
package testwait

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// interval is how often a condition is polled.
const interval = 20 * time.Millisecond

// For polls f until it returns nil, failing t with f's last error once timeout passes,
// or at once when f returns a Permanent error.
func For(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	if err := poll(timeout, f); err != nil {
		t.Fatalf("condition not met within %s: %v", timeout, err)
	}
}

// ForWhat is For naming what is waited for in the failure.
func ForWhat(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	if err := poll(timeout, f); err != nil {
		t.Fatalf("%s: not within %s: %v", what, timeout, err)
	}
}

// Until polls cond until it holds, failing t once timeout passes.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := poll(timeout, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting until %s", timeout, what)
	}
}

// permanent marks an error that ends the wait at once.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so that For and ForWhat fail at once instead of polling again.
func Permanent(err error) error { return permanent{err} }

// poll runs f every interval until it returns nil (nil), a Permanent error, or the
// timeout passes (its last error).
func poll(timeout time.Duration, f func() error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return fmt.Errorf("gave up: %w", p.err)
		}
		select {
		case <-deadline.C:
			return err
		case <-tick.C:
		}
	}
}
