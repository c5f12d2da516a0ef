package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/rpc"
)

func TestFromBroker(t *testing.T) {
	id := func(s string) *string { return &s }
	for _, tc := range []struct {
		clientID *string
		want     bool
	}{
		{nil, false},
		{id(""), false},
		{id("rdkafka"), false},
		{id(forwardedClientPrefix + "2"), true},
	} {
		if got := fromBroker(&rpc.Request{ClientID: tc.clientID}); got != tc.want {
			t.Errorf("client id %v: %v, want %v", tc.clientID, got, tc.want)
		}
	}
}

// "Is this request from a broker" has one answer: no handler tests the client id itself.
func TestFromBrokerIsTheOneRule(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if c := strings.Count(string(src), "HasPrefix(*req.ClientID, forwardedClientPrefix)"); c > 0 {
			n += c
			if f != "forwarding.go" {
				t.Errorf("%s tests the client id itself; use fromBroker", f)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d client-id tests, want 1 (fromBroker)", n)
	}
}
