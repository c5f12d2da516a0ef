package config

import (
	"strings"
	"testing"
)

// TestEverySecretPropertyIsPassword: a property whose name says it holds a secret is of
// Kafka's PASSWORD type, so a new secret cannot join the table as a plain string; and
// the ones Kafka types PASSWORD are.
func TestEverySecretPropertyIsPassword(t *testing.T) {
	for _, def := range append(append([]Def{}, BrokerDefs...), TopicDefs...) {
		if secretLikeName(def.Name) && def.Type != TypePassword {
			t.Errorf("%s looks like a secret but is not TypePassword", def.Name)
		}
	}
	for _, name := range []string{"sasl.jaas.config", "ssl.key.password", "ssl.keystore.password", "ssl.keystore.key",
		"ssl.keystore.certificate.chain", "ssl.truststore.password", "ssl.truststore.certificates",
		"listener.name.sasl_ssl.plain.sasl.jaas.config", "listener.name.ssl.ssl.key.password",
		"delegation.token.secret.key", "password.encoder.secret"} {
		if !Sensitive(name) {
			t.Errorf("%s is not treated as sensitive", name)
		}
	}
}

// TestConfigExceptionHidesSecrets: a refused secret's error message shows "[hidden]",
// not the value (TestDescribeConfigsHidesSecrets in broker covers DescribeConfigs and
// --print-config).
func TestConfigExceptionHidesSecrets(t *testing.T) {
	const secret = "s3cr3t-pw"
	if err := configException("ssl.key.password", secret, "bad"); strings.Contains(err.Error(), secret) {
		t.Errorf("a configuration error shows the secret: %v", err)
	}
}
