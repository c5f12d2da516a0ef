package testwait

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	if err := poll(time.Minute, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("poll: %v after %d calls", err, n)
	}
}

func TestPollGivesUpAtOnceOnAPermanentError(t *testing.T) {
	n := 0
	err := poll(time.Minute, func() error { n++; return Permanent(errors.New("broken")) })
	if err == nil || n != 1 || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("poll: %v after %d calls", err, n)
	}
}

func TestPollReturnsTheLastErrorAtTheDeadline(t *testing.T) {
	n := 0
	err := poll(50*time.Millisecond, func() error { n++; return errors.New("still not") })
	if err == nil || err.Error() != "still not" || n < 2 {
		t.Fatalf("poll: %v after %d calls", err, n)
	}
}

func TestBufferLine(t *testing.T) {
	var b Buffer
	b.Write([]byte("[INFO] a broker=1\n[WARN] b broker=1\n"))
	if got := b.Line("[WARN]", "broker=1"); got != "[WARN] b broker=1" {
		t.Fatalf("Line: %q", got)
	}
	if got := b.Line("[ERROR]"); got != "" {
		t.Fatalf("Line of nothing written: %q", got)
	}
}
