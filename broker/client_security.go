package broker

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
)

// ClientSecurity is a Kafka client's security as its properties describe it
// (security.protocol, sasl.mechanism, sasl.jaas.config or sasl.username and
// sasl.password, ssl.*): what the CLI's --command-config reads.
type ClientSecurity struct {
	// Protocol is security.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	Protocol string
	// TLS is the client TLS configuration of SSL and SASL_SSL; nil otherwise.
	TLS *tls.Config
	// Mechanism, Username and Password are the SASL credentials of SASL_PLAINTEXT and
	// SASL_SSL.
	Mechanism, Username, Password string
}

// ParseClientSecurity reads Kafka client properties. A truststore-less TLS client
// trusts the system roots; ssl.endpoint.identification.algorithm defaults to https
// (the server certificate must name the host dialed), empty turns the check off.
func ParseClientSecurity(props map[string]string) (ClientSecurity, error) {
	get := func(k, def string) string {
		if v, ok := props[k]; ok {
			return strings.TrimSpace(v)
		}
		return def
	}
	cs := ClientSecurity{Protocol: strings.ToUpper(get("security.protocol", config.SecurityProtocolPlaintext))}
	if _, ok := config.SecurityProtocolID(cs.Protocol); !ok {
		return cs, fmt.Errorf("security.protocol %q is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", cs.Protocol)
	}
	if config.SecurityProtocolTLS(cs.Protocol) {
		defaults := map[string]string{"ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM", "ssl.endpoint.identification.algorithm": "https"}
		st := sslSettingsOf(func(name string) string { return get(name, defaults[name]) })
		tc, err := auth.ClientTLSConfig(st, "")
		if err != nil {
			return cs, err
		}
		cs.TLS = tc
	}
	if config.SecurityProtocolSASL(cs.Protocol) {
		cs.Mechanism = get("sasl.mechanism", "GSSAPI")
		if !slices.Contains(auth.SupportedMechanisms, cs.Mechanism) {
			return cs, fmt.Errorf("sasl.mechanism %q: the client supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", cs.Mechanism)
		}
		if jaas := get("sasl.jaas.config", ""); jaas != "" {
			modules, err := auth.ParseJAAS(jaas)
			if err != nil {
				return cs, fmt.Errorf("sasl.jaas.config: %w", err)
			}
			user, pass, ok := auth.ClientCredentials(modules)
			if !ok {
				return cs, fmt.Errorf("sasl.jaas.config needs username and password options")
			}
			cs.Username, cs.Password = user, pass
		} else {
			cs.Username, cs.Password = get("sasl.username", ""), get("sasl.password", "")
		}
		if cs.Username == "" {
			return cs, fmt.Errorf("%s needs sasl.jaas.config (or sasl.username and sasl.password)", cs.Protocol)
		}
	}
	return cs, nil
}
