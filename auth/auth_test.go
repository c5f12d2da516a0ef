package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestParseJAAS(t *testing.T) {
	m, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="a\"b" user_admin="s3cret" user_alice=plain;`)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m[0].Class != PlainLoginModule || m[0].Flag != "required" {
		t.Fatalf("%+v", m)
	}
	if u, p, ok := ClientCredentials(m); !ok || u != "admin" || p != `a"b` {
		t.Fatalf("credentials %q %q %v", u, p, ok)
	}
	users := PlainUsers(m)
	if users["admin"] != "s3cret" || users["alice"] != "plain" || len(users) != 2 {
		t.Fatalf("users %v", users)
	}
	for _, bad := range []string{"", "x", "x required", `x required a="b"`, `x sometimes a="b";`, `x required a="b;`, `x required a;`} {
		if _, err := ParseJAAS(bad); !errors.Is(err, ErrInvalidJAAS) {
			t.Errorf("%q: error %v, expected ErrInvalidJAAS", bad, err)
		}
	}
}

func TestPlainServer(t *testing.T) {
	lookup := func(u string) (string, bool) { return map[string]string{"alice": "pw"}[u], u == "alice" }
	cases := []struct {
		msg  string
		want error
	}{
		{"\x00alice\x00pw", nil},
		{"alice\x00alice\x00pw", nil},
		{"\x00alice\x00wrong", ErrAuthenticationFailed},
		{"\x00bob\x00pw", ErrAuthenticationFailed},
		{"bob\x00alice\x00pw", ErrAuthenticationFailed},
		{"\x00alice", ErrMalformedMessage},
		{"\x00\x00pw", ErrMalformedMessage},
		{"\x00alice\x00", ErrMalformedMessage},
		{"\x00a\x00b\x00c", ErrMalformedMessage},
	}
	for _, tc := range cases {
		s := NewPlainServer(lookup)
		_, done, err := s.Step([]byte(tc.msg))
		if !errors.Is(err, tc.want) || done != (tc.want == nil) {
			t.Errorf("%q: done %v error %v, expected %v", tc.msg, done, err, tc.want)
		}
		if tc.want == nil && s.Username() != "alice" {
			t.Errorf("%q: user %q", tc.msg, s.Username())
		}
	}
}

// exchange runs a client session against a server session.
func exchange(t *testing.T, cl ClientSession, srv ServerSession) error {
	t.Helper()
	var challenge []byte
	for range 4 {
		msg, done, err := cl.Step(challenge)
		if err != nil {
			return err
		}
		out, srvDone, err := srv.Step(msg)
		if err != nil {
			return err
		}
		challenge = out
		if done {
			if !srvDone {
				t.Fatal("client done, server not")
			}
			return Verify(cl, challenge)
		}
	}
	t.Fatal("exchange did not end")
	return nil
}

func TestScramRoundTrip(t *testing.T) {
	for _, mech := range []string{MechanismScramSHA256, MechanismScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			cred, err := NewScramCredential(mech, "pencil", 4096, nil)
			if err != nil {
				t.Fatal(err)
			}
			// AlterUserScramCredentials' path: a salted password gives the same keys.
			salted, err := SaltPassword(mech, "pencil", cred.Salt, cred.Iterations)
			if err != nil {
				t.Fatal(err)
			}
			stored, server, err := ScramKeysFromSaltedPassword(mech, salted)
			if err != nil || !bytes.Equal(stored, cred.StoredKey) || !bytes.Equal(server, cred.ServerKey) {
				t.Fatalf("keys from the salted password differ (%v)", err)
			}
			lookup := func(u string) (ScramCredential, bool) { return cred, u == "user,=x" }
			for _, tc := range []struct {
				user, pass string
				want       error
			}{{"user,=x", "pencil", nil}, {"user,=x", "wrong", ErrAuthenticationFailed}, {"other", "pencil", ErrAuthenticationFailed}} {
				srv, err := NewScramServer(mech, lookup)
				if err != nil {
					t.Fatal(err)
				}
				cl, err := NewClientSession(mech, tc.user, tc.pass)
				if err != nil {
					t.Fatal(err)
				}
				if err := exchange(t, cl, srv); !errors.Is(err, tc.want) {
					t.Errorf("%s/%s: %v, expected %v", tc.user, tc.pass, err, tc.want)
				}
				if tc.want == nil && srv.Username() != tc.user {
					t.Errorf("username %q", srv.Username())
				}
			}
		})
	}
	if _, err := NewScramCredential(MechanismScramSHA256, "x", 100, nil); !errors.Is(err, ErrInvalidCredential) {
		t.Errorf("100 iterations: %v", err)
	}
}

// TestScramServer_LibrdkafkaNonce: librdkafka sends its nonce before the combined one;
// Kafka accepts a client-final nonce that ends with the server's.
func TestScramServer_LibrdkafkaNonce(t *testing.T) {
	cred, _ := NewScramCredential(MechanismScramSHA256, "pw", 4096, []byte("salt"))
	srv, _ := NewScramServer(MechanismScramSHA256, func(string) (ScramCredential, bool) { return cred, true })
	first, _, err := srv.Step([]byte("n,,n=u,r=abc"))
	if err != nil {
		t.Fatal(err)
	}
	nonce := string(bytes.Split(bytes.TrimPrefix(first, []byte("r=")), []byte(","))[0])
	wop := "c=biws,r=abc" + nonce
	authMessage := "n=u,r=abc," + string(first) + "," + wop
	salted, _ := SaltPassword(MechanismScramSHA256, "pw", []byte("salt"), 4096)
	srvTmp := &ScramServer{hash: srv.hash}
	clientKey := srvTmp.hmac(salted, "Client Key")
	sig := srvTmp.hmac(cred.StoredKey, authMessage)
	proof := make([]byte, len(sig))
	for i := range sig {
		proof[i] = clientKey[i] ^ sig[i]
	}
	final := wop + ",p=" + b64(proof)
	if _, done, err := srv.Step([]byte(final)); err != nil || !done {
		t.Fatalf("librdkafka-style final: done %v, %v", done, err)
	}
}

func TestDecryptPKCS8WithOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed")
	}
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	plain := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(plain, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	enc := filepath.Join(dir, "enc.pem")
	if out, err := exec.Command(openssl, "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", plain, "-out", enc, "-passout", "pass:hunter2").CombinedOutput(); err != nil {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "alice", Organization: []string{"Example"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	certDER, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	encPEM, _ := os.ReadFile(enc)
	keystore := filepath.Join(dir, "keystore.pem")
	if err := os.WriteFile(keystore, append(encPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ServerTLSConfig(SSLSettings{KeystoreType: "PEM", KeystoreLocation: keystore, KeyPassword: "hunter2"}); err != nil {
		t.Fatalf("encrypted key with the right password: %v", err)
	}
	for _, pw := range []string{"", "wrong"} {
		if _, err := ServerTLSConfig(SSLSettings{KeystoreLocation: keystore, KeyPassword: pw}); !errors.Is(err, ErrInvalidTLSConfig) {
			t.Errorf("password %q: %v", pw, err)
		}
	}
	if _, err := ServerTLSConfig(SSLSettings{KeystoreType: "JKS", KeystoreLocation: keystore}); !errors.Is(err, ErrInvalidTLSConfig) {
		t.Errorf("JKS: %v", err)
	}
	cert, _ := x509.ParseCertificate(certDER)
	if p := CertificatePrincipal(cert); p != "User:CN=alice,O=Example" {
		t.Errorf("principal %q", p)
	}
}
