package auth

import (
	"errors"
	"slices"
	"testing"
)

// SASLServer: PLAIN checks the JAAS users, SCRAM asks the lookup for the mechanism's
// credential type, and the enabled mechanisms are listed as given.
func TestSASLServer(t *testing.T) {
	cred, err := NewScramCredential(MechanismScramSHA512, "s3cret", 4096, []byte("salt"))
	if err != nil {
		t.Fatal(err)
	}
	var asked []int8
	srv := NewSASLServer([]string{MechanismPlain, MechanismScramSHA512}, map[string]string{"alice": "pw"},
		func(user string, typ int8) (ScramCredential, bool) {
			asked = append(asked, typ)
			return cred, user == "bob"
		})
	if got := srv.Mechanisms(); !slices.Equal(got, []string{MechanismPlain, MechanismScramSHA512}) {
		t.Fatalf("mechanisms %v", got)
	}
	for _, c := range []struct {
		mech, user, pass string
		ok               bool
	}{
		{MechanismPlain, "alice", "pw", true},
		{MechanismPlain, "alice", "wrong", false},
		{MechanismPlain, "bob", "s3cret", false},
		{MechanismScramSHA512, "bob", "s3cret", true},
		{MechanismScramSHA512, "bob", "wrong", false},
		{MechanismScramSHA512, "alice", "pw", false},
	} {
		s, err := srv.Start(c.mech)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := NewClientSession(c.mech, c.user, c.pass)
		if err != nil {
			t.Fatal(err)
		}
		err = exchange(t, cl, s)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrAuthenticationFailed)) {
			t.Errorf("%s %s/%s: %v", c.mech, c.user, c.pass, err)
		}
		if err == nil && s.Username() != c.user {
			t.Errorf("%s: authenticated as %q", c.mech, s.Username())
		}
	}
	if len(asked) == 0 || asked[0] != ScramMechanismType(MechanismScramSHA512) {
		t.Errorf("SCRAM looked up credential types %v", asked)
	}
}
