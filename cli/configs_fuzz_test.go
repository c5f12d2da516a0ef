package cli

import (
	"strings"
	"testing"
)

// FuzzParseAddConfig feeds arbitrary --add-config and --replica-assignment values to
// their parsers: an error or pairs with non-empty keys, never a panic or a hang.
func FuzzParseAddConfig(f *testing.F) {
	for _, s := range []string{"a=1", "a=1,b=[x,y],c=", "a=[x", " , ", "=1", "1:2,2:0", "a=[]b=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pairs, err := parseAddConfig(s)
		if err == nil {
			for _, kv := range pairs {
				if kv[0] == "" || strings.ContainsAny(kv[0], "=") {
					t.Fatalf("parseAddConfig(%q): bad key %q", s, kv[0])
				}
			}
		}
		if a, err := parseReplicaAssignment(s); err == nil {
			for _, replicas := range a {
				if len(replicas) == 0 {
					t.Fatalf("parseReplicaAssignment(%q): empty replica list", s)
				}
			}
		}
	})
}

func TestParseAddConfig(t *testing.T) {
	got, err := parseAddConfig("retention.ms=1000, cleanup.policy=[compact,delete],x=")
	if err != nil || len(got) != 3 || got[0] != [2]string{"retention.ms", "1000"} ||
		got[1] != [2]string{"cleanup.policy", "compact,delete"} || got[2] != [2]string{"x", ""} {
		t.Fatalf("parseAddConfig: %v %v", got, err)
	}
	for _, bad := range []string{"noequals", "a=[open", "=1"} {
		if _, err := parseAddConfig(bad); err == nil {
			t.Errorf("parseAddConfig(%q) accepted", bad)
		}
	}
}
