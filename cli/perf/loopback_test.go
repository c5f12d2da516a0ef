package perf

import (
	"bytes"
	"strings"
	"testing"
)

func TestPerfLoopback(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runWithIO([]string{"petrel", "perf", "loopback", "--duration", "200ms", "--write-size", "65536"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "loopback TCP: ") || !strings.Contains(out.String(), "MB/s") {
		t.Fatalf("output %q", out.String())
	}
}

func TestPerfLoopback_RequestResponse(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runWithIO([]string{"petrel", "perf", "loopback", "--duration", "200ms", "--response-size", "1048576"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "1048576-byte responses, one request in flight") || !strings.Contains(out.String(), "MB/s") {
		t.Fatalf("output %q", out.String())
	}
	errOut.Reset()
	if code := runWithIO([]string{"petrel", "perf", "loopback", "--response-size", "-1"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "bad --response-size -1") {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}
