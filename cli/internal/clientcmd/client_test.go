package clientcmd

import (
	"slices"
	"testing"
)

func TestParseBootstrap(t *testing.T) {
	got, err := parseBootstrap(" a:1 ,b:2,,[::1]:3")
	if err != nil || !slices.Equal(got, []string{"a:1", "b:2", "[::1]:3"}) {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, bad := range []string{"", ",", "a", "a:1,b"} {
		if _, err := parseBootstrap(bad); err == nil {
			t.Fatalf("%q: no error", bad)
		}
	}
}
