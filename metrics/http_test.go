package metrics

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestStart: with no listener nor address nothing is served; an address is bound and
// serves /healthz; an address that cannot be bound is an error naming it.
func TestStart(t *testing.T) {
	reg := New(Options{})
	if s, err := Start(nil, "", reg, nil); s != nil || err != nil {
		t.Fatalf("nothing configured: %v, %v", s, err)
	}
	s, err := Start(nil, "127.0.0.1:0", reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if code, body := get(t, "http://"+s.Addr().String()+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := Start(nil, busy.Addr().String(), reg, nil); err == nil || !strings.Contains(err.Error(), "metrics listener "+busy.Addr().String()) {
		t.Errorf("a bound address: %v", err)
	}
}
