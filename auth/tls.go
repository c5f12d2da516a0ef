package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
)

// SSLSettings are one listener's (or one client's) ssl.* properties, already resolved
// (listener.name.<name>.ssl.* over ssl.*). Only PEM stores are supported (KIP-651).
type SSLSettings struct {
	KeystoreType     string // ssl.keystore.type: PEM
	KeystoreLocation string // ssl.keystore.location: a PEM file with the private key and the certificate chain
	KeystoreKey      string // ssl.keystore.key: the private key in PEM, inline
	KeystoreChain    string // ssl.keystore.certificate.chain: the certificate chain in PEM, inline
	KeyPassword      string // ssl.key.password: the password of an encrypted PKCS#8 key
	TruststoreType   string // ssl.truststore.type: PEM
	TruststoreLoc    string // ssl.truststore.location: a PEM file of trusted certificates
	TruststoreCerts  string // ssl.truststore.certificates: trusted certificates in PEM, inline
	ClientAuth       string // ssl.client.auth: none, requested or required (server side)
	// EndpointIdentification is ssl.endpoint.identification.algorithm (client side):
	// "https" checks the server's host name, "" does not.
	EndpointIdentification string
}

// ServerTLSConfig builds the server TLS configuration of a listener: its certificate
// from the keystore, and, when ssl.client.auth asks for client certificates, the
// truststore to verify them.
func ServerTLSConfig(s SSLSettings) (*tls.Config, error) {
	cert, err := loadKeystore(s)
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, fmt.Errorf("%w: ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain) is required", ErrInvalidTLSConfig)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	pool, err := loadTruststore(s)
	if err != nil {
		return nil, err
	}
	cfg.ClientCAs = pool
	switch strings.ToLower(s.ClientAuth) {
	case "", "none":
		cfg.ClientAuth = tls.NoClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("%w: ssl.client.auth %q is not one of required, requested, none", ErrInvalidTLSConfig, s.ClientAuth)
	}
	if cfg.ClientAuth != tls.NoClientCert && pool == nil {
		return nil, fmt.Errorf("%w: ssl.client.auth=%s needs ssl.truststore.location", ErrInvalidTLSConfig, s.ClientAuth)
	}
	return cfg, nil
}

// ClientTLSConfig builds a client TLS configuration: the truststore to verify the
// server (the system roots without one), and the keystore as the client certificate.
func ClientTLSConfig(s SSLSettings, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	pool, err := loadTruststore(s)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	cert, err := loadKeystore(s)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	if s.EndpointIdentification == "" {
		// Kafka's empty ssl.endpoint.identification.algorithm: verify the chain, not the
		// host name.
		cfg.InsecureSkipVerify = true
		roots := pool
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, roots)
		}
	}
	return cfg, nil
}

// verifyChain verifies a peer chain against roots without checking its host name.
func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return fmt.Errorf("%w: no server certificate", ErrInvalidTLSConfig)
	}
	certs := make([]*x509.Certificate, 0, len(raw))
	for _, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return err
		}
		certs = append(certs, c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// CertificatePrincipal is Kafka's default principal of a client certificate:
// "User:" + the subject's distinguished name in RFC 2253 form ("CN=alice,O=Example").
func CertificatePrincipal(cert *x509.Certificate) string {
	return "User:" + cert.Subject.String()
}

func checkStoreType(prop, t string) error {
	if t != "" && !strings.EqualFold(t, "PEM") {
		return fmt.Errorf("%w: %s=%s: only PEM is supported (KIP-651)", ErrInvalidTLSConfig, prop, t)
	}
	return nil
}

// loadKeystore returns the certificate and key, or nil when no keystore is configured.
func loadKeystore(s SSLSettings) (*tls.Certificate, error) {
	if err := checkStoreType("ssl.keystore.type", s.KeystoreType); err != nil {
		return nil, err
	}
	var data []byte
	switch {
	case s.KeystoreLocation != "":
		b, err := os.ReadFile(s.KeystoreLocation)
		if err != nil {
			return nil, fmt.Errorf("%w: ssl.keystore.location: %v", ErrInvalidTLSConfig, err)
		}
		data = b
	case s.KeystoreKey != "" || s.KeystoreChain != "":
		data = []byte(s.KeystoreKey + "\n" + s.KeystoreChain)
	default:
		return nil, nil
	}
	return parseKeystorePEM(data, s.KeyPassword)
}

// parseKeystorePEM reads the private key (PKCS#8, plain or encrypted with PBES2; or
// PKCS#1/SEC 1) and the certificate chain from PEM blocks in any order.
func parseKeystorePEM(data []byte, password string) (*tls.Certificate, error) {
	var cert tls.Certificate
	var keyDER []byte
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		switch block.Type {
		case "CERTIFICATE":
			cert.Certificate = append(cert.Certificate, block.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, fmt.Errorf("%w: the keystore's key is encrypted and ssl.key.password is not set", ErrInvalidTLSConfig)
			}
			der, err := DecryptPKCS8(block.Bytes, []byte(password))
			if err != nil {
				return nil, err
			}
			keyDER = der
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			keyDER = block.Bytes
		}
	}
	if len(cert.Certificate) == 0 {
		return nil, fmt.Errorf("%w: the keystore holds no CERTIFICATE block", ErrInvalidTLSConfig)
	}
	if keyDER == nil {
		return nil, fmt.Errorf("%w: the keystore holds no private key", ErrInvalidTLSConfig)
	}
	key, err := parsePrivateKey(keyDER)
	if err != nil {
		return nil, err
	}
	cert.PrivateKey = key
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%w: keystore certificate: %v", ErrInvalidTLSConfig, err)
	}
	cert.Leaf = leaf
	return &cert, nil
}

func parsePrivateKey(der []byte) (any, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("%w: the keystore's private key is not PKCS#8, PKCS#1 or SEC 1 (wrong ssl.key.password?)", ErrInvalidTLSConfig)
}

// loadTruststore returns the trusted certificates, or nil when none are configured.
func loadTruststore(s SSLSettings) (*x509.CertPool, error) {
	if err := checkStoreType("ssl.truststore.type", s.TruststoreType); err != nil {
		return nil, err
	}
	var data []byte
	switch {
	case s.TruststoreLoc != "":
		b, err := os.ReadFile(s.TruststoreLoc)
		if err != nil {
			return nil, fmt.Errorf("%w: ssl.truststore.location: %v", ErrInvalidTLSConfig, err)
		}
		data = b
	case s.TruststoreCerts != "":
		data = []byte(s.TruststoreCerts)
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%w: the truststore holds no PEM certificate", ErrInvalidTLSConfig)
	}
	return pool, nil
}
