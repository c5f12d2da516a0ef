package integration

// The CLI against a secured listener: --command-config (Kafka client properties) on
// every subcommand, and `petrel users scram` / `petrel configs --entity-type users`
// managing SCRAM credentials that clients then log in with.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecurity_CLICommandConfigAndScramUsers(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	addr := s.addr("SASL_SSL")
	cfgFile := filepath.Join(t.TempDir(), "client.properties")
	writePEM(t, cfgFile, []byte("security.protocol=SASL_SSL\n"+
		"sasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="`+scramUser+`" password="`+scramPassword+`";`+"\n"+
		"ssl.truststore.type=PEM\nssl.truststore.location="+s.ca.truststore+"\n"))
	sec := []string{"--bootstrap-server", addr, "--command-config", cfgFile, "--timeout", "10s"}
	mustPetrel := func(args ...string) string {
		t.Helper()
		code, out, errOut := petrel(args...)
		if code != 0 {
			t.Fatalf("petrel %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	// Without the command config the listener refuses the CLI.
	if code, _, _ := petrel("topics", "list", "--bootstrap-server", addr, "--timeout", "2s"); code == 0 {
		t.Fatal("topics list succeeded on SASL_SSL without --command-config")
	}
	mustPetrel(append([]string{"topics", "create", "cli-secure", "--partitions", "1"}, sec...)...)
	if out := mustPetrel(append([]string{"topics", "list"}, sec...)...); !strings.Contains(out, "cli-secure") {
		t.Fatalf("topics list: %q", out)
	}
	mustPetrel(append([]string{"users", "scram", "set", "carol", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192", "--password", "carol-secret"}, sec...)...)
	mustPetrel(append([]string{"configs", "alter", "--entity-type", "users", "--entity-name", "dave",
		"--add-config", "SCRAM-SHA-256=[iterations=4096,password=dave-secret]"}, sec...)...)
	out := mustPetrel(append([]string{"users", "scram", "list"}, sec...)...)
	for _, want := range []string{
		"SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=8192",
		"SCRAM credential configs for user-principal 'dave' are SCRAM-SHA-256=iterations=4096",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("users scram list:\n%s\nexpected a line %q", out, want)
		}
	}
	// The new users log in.
	for _, u := range []struct{ mech, user, pass string }{{"SCRAM-SHA-512", "carol", "carol-secret"}, {"SCRAM-SHA-256", "dave", "dave-secret"}} {
		cl := newClient(t, []string{addr}, dialTLS(s.ca.clientTLS(nil)), saslOpt(u.mech, u.user, u.pass))
		if err := roundTrip(t, cl, "cli-secure", u.user); err != nil {
			t.Fatalf("%s: %v", u.user, err)
		}
	}
	mustPetrel(append([]string{"users", "scram", "delete", "carol", "--mechanism", "SCRAM-SHA-512"}, sec...)...)
	if code, _, errOut := petrel(append([]string{"users", "scram", "list", "carol"}, sec...)...); code == 0 || !strings.Contains(errOut, "carol") {
		t.Fatalf("listing a deleted user: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(cfgFile); err != nil {
		t.Fatal(err)
	}
}
