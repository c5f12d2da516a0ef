package auth

import (
	"encoding/base64"
	"errors"
	"testing"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// FuzzParsePlain: any bytes are parsed or refused with a sentinel, never a panic.
func FuzzParsePlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00secret"))
	f.Add([]byte("alice\x00alice\x00secret"))
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := ParsePlain(msg)
		if err != nil {
			if !errors.Is(err, ErrMalformedMessage) && !errors.Is(err, ErrAuthenticationFailed) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if m.Username == "" || m.Password == "" {
			t.Fatalf("accepted %+v", m)
		}
	})
}

// FuzzScramServer: hostile client-first and client-final messages never panic and
// never authenticate.
func FuzzScramServer(f *testing.F) {
	f.Add("n,,n=user,r=abc", "c=biws,r=abcdef,p=dGVzdA==")
	f.Add("y,a=user,n=user,r=x", "c=eSxhPXVzZXIs,r=x,p=")
	f.Add("p=tls-unique,,n=u,r=1", "")
	f.Add("n,,n=us=2Cer,r=1,ext=1", "c=biws,r=1,x=y,p=AAAA")
	cred, err := NewScramCredential(MechanismScramSHA256, "pw", 4096, []byte("salt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, first, final string) {
		if _, err := ParseClientFirst(first); err != nil && !errors.Is(err, ErrMalformedMessage) && !errors.Is(err, ErrAuthenticationFailed) {
			t.Fatalf("client-first error wraps no sentinel: %v", err)
		}
		if _, err := ParseClientFinal(final); err != nil && !errors.Is(err, ErrMalformedMessage) {
			t.Fatalf("client-final error wraps no sentinel: %v", err)
		}
		srv, _ := NewScramServer(MechanismScramSHA256, func(string) (ScramCredential, bool) { return cred, true })
		if _, _, err := srv.Step([]byte(first)); err != nil {
			return
		}
		if _, done, err := srv.Step([]byte(final)); err == nil || done {
			t.Fatalf("a fuzzed client-final authenticated (%v)", err)
		}
	})
}

// FuzzParseJAAS: any configuration string is parsed or refused, never a panic.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b" user_a="b";`)
	f.Add(`x required a="\\";`)
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseJAAS(s); err != nil && !errors.Is(err, ErrInvalidJAAS) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
	})
}
