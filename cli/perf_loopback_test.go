package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestPerfLoopback(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := RunWithIO([]string{"petrel", "perf", "loopback", "--duration", "200ms", "--write-size", "65536"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "loopback TCP: ") || !strings.Contains(out.String(), "MB/s") {
		t.Fatalf("output %q", out.String())
	}
}
