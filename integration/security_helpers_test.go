package integration

// Certificates for the security tests, made with crypto/x509 at run time (no committed
// keys): one CA per test, server certificates for 127.0.0.1, client certificates with
// a subject, and expired ones.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// testCA is a certificate authority for one test.
type testCA struct {
	t    testing.TB
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// truststore is the CA certificate in PEM, written to dir/ca.pem.
	truststore string
	serial     int64
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name, Organization: []string{"Petrel tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{t: t, dir: t.TempDir(), cert: cert, key: key, serial: 1}
	ca.truststore = filepath.Join(ca.dir, "ca.pem")
	writePEM(t, ca.truststore, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return ca
}

// issued is a key and its certificate chain.
type issued struct {
	keystore string // PEM file: private key then certificate
	tls      tls.Certificate
}

// issue makes a certificate for cn, valid for 127.0.0.1 and localhost as server and
// client, expired when expired is set.
func (ca *testCA) issue(cn string, expired bool) issued {
	t := ca.t
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.serial++
	notBefore, notAfter := time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if expired {
		notBefore, notAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"Petrel tests"}},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	path := filepath.Join(ca.dir, cn+".pem")
	writePEM(t, path, append(keyPEM, certPEM...))
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return issued{keystore: path, tls: pair}
}

// clientTLS is a client configuration trusting ca, with cert as the client
// certificate when given.
func (ca *testCA) clientTLS(cert *issued) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{cert.tls}
	}
	return cfg
}

func writePEM(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Users of the security tests.
const (
	plainUser, plainPassword = "alice", "alice-secret"
	scramUser, scramPassword = "bob", "bob-secret"
	brokerUser, brokerPass   = "broker", "broker-secret"
)

// plainJAAS is a PLAIN JAAS configuration with the broker's own credentials and the
// PLAIN users.
func plainJAAS() string {
	return `org.apache.kafka.common.security.plain.PlainLoginModule required username="` + brokerUser + `" password="` + brokerPass +
		`" user_` + brokerUser + `="` + brokerPass + `" user_` + plainUser + `="` + plainPassword + `";`
}

// saslOpt is kgo's SASL option for mechanism with user and password.
func saslOpt(mechanism, user, password string) kgo.Opt {
	var m sasl.Mechanism
	switch mechanism {
	case "PLAIN":
		m = plain.Auth{User: user, Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		m = scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	}
	return kgo.SASL(m)
}

// dialTLS is kgo's TLS dialer option.
func dialTLS(cfg *tls.Config) kgo.Opt {
	return kgo.Dialer((&tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}).DialContext)
}

var osReadFile = os.ReadFile
