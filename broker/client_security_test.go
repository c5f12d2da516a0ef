package broker

import (
	"strings"
	"testing"
)

// A client's security.protocol, ssl.* and SASL properties (--command-config), with
// Kafka's client defaults: PLAINTEXT, PEM stores, host name verification on.
func TestParseClientSecurity(t *testing.T) {
	cs, err := ParseClientSecurity(nil)
	if err != nil || cs.Protocol != "PLAINTEXT" || cs.TLS != nil || cs.Mechanism != "" {
		t.Fatalf("defaults: %+v %v", cs, err)
	}
	ca := newRaftTestCA(t)
	cert := ca.issue("client")
	ssl := map[string]string{"security.protocol": "ssl", "ssl.truststore.location": ca.truststore, "ssl.keystore.location": cert.keystore}
	cs, err = ParseClientSecurity(ssl)
	if err != nil || cs.Protocol != "SSL" || cs.TLS == nil || cs.TLS.RootCAs == nil || len(cs.TLS.Certificates) != 1 || cs.TLS.InsecureSkipVerify {
		t.Fatalf("SSL with PEM stores: %+v %v", cs, err)
	}
	ssl["ssl.endpoint.identification.algorithm"] = ""
	if cs, err = ParseClientSecurity(ssl); err != nil || !cs.TLS.InsecureSkipVerify || cs.TLS.VerifyPeerCertificate == nil {
		t.Fatalf("no host name verification: %+v %v", cs, err)
	}
	cs, err = ParseClientSecurity(map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`})
	if err != nil || cs.TLS == nil || cs.Mechanism != "SCRAM-SHA-256" || cs.Username != "alice" || cs.Password != "alice-secret" {
		t.Fatalf("SASL_SSL: %+v %v", cs, err)
	}
	cs, err = ParseClientSecurity(map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "bob", "sasl.password": "pw"})
	if err != nil || cs.TLS != nil || cs.Username != "bob" || cs.Password != "pw" {
		t.Fatalf("SASL_PLAINTEXT: %+v %v", cs, err)
	}
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"security.protocol": "TLS"}, `security.protocol "TLS" is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL`},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.username": "bob"}, `sasl.mechanism "GSSAPI": the client supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512`},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "SASL_PLAINTEXT needs sasl.jaas.config (or sasl.username and sasl.password)"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"},
	} {
		if _, err := ParseClientSecurity(tc.props); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.props, err, tc.want)
		}
	}
}
