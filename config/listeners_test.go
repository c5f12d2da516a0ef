package config

import (
	"testing"
)

// Kafka's SecurityProtocol ids, as BrokerRegistration carries them.
func TestSecurityProtocols(t *testing.T) {
	for p, want := range map[string]struct {
		id       int16
		tls, sas bool
	}{"PLAINTEXT": {0, false, false}, "SSL": {1, true, false}, "SASL_PLAINTEXT": {2, false, true}, "SASL_SSL": {3, true, true}} {
		id, ok := SecurityProtocolID(p)
		if !ok || id != want.id || SecurityProtocolTLS(p) != want.tls || SecurityProtocolSASL(p) != want.sas {
			t.Errorf("%s: id %d %v tls %v sasl %v, want %+v", p, id, ok, SecurityProtocolTLS(p), SecurityProtocolSASL(p), want)
		}
		if s := (ListenerSpec{Protocol: p}); s.TLS() != want.tls || s.SASL() != want.sas {
			t.Errorf("%s listener: tls %v sasl %v", p, s.TLS(), s.SASL())
		}
	}
	for _, p := range []string{"TLS", "plaintext", ""} {
		if _, ok := SecurityProtocolID(p); ok {
			t.Errorf("%q is a security protocol", p)
		}
	}
}

// The inter-broker listener, the protocol map and per-listener properties, with
// Kafka's defaults.
func TestListenerProperties(t *testing.T) {
	if got := InterBrokerListenerName(nil); got != "PLAINTEXT" {
		t.Errorf("default inter-broker listener %q", got)
	}
	if got := InterBrokerListenerName(map[string]string{"security.inter.broker.protocol": "sasl_ssl"}); got != "SASL_SSL" {
		t.Errorf("by protocol %q", got)
	}
	if got := InterBrokerListenerName(map[string]string{"security.inter.broker.protocol": "SSL", "inter.broker.listener.name": "internal"}); got != "INTERNAL" {
		t.Errorf("by name %q", got)
	}
	m, err := ProtocolMap(nil)
	if err != nil || len(m) != 4 || m["SASL_SSL"] != "SASL_SSL" || m["PLAINTEXT"] != "PLAINTEXT" {
		t.Errorf("default protocol map %v %v", m, err)
	}
	props := map[string]string{"ssl.client.auth": "requested", "listener.name.internal.ssl.client.auth": "required"}
	if got := ListenerProperty(props, "INTERNAL", "ssl.client.auth"); got != "required" {
		t.Errorf("listener override %q", got)
	}
	if got := ListenerProperty(props, "EXTERNAL", "ssl.client.auth"); got != "requested" {
		t.Errorf("broker value %q", got)
	}
	if got := ListenerProperty(nil, "EXTERNAL", "ssl.client.auth"); got != "none" {
		t.Errorf("Kafka's default %q", got)
	}
	if got := ControllerListenerNames(map[string]string{"controller.listener.names": " controller, ,c2"}); len(got) != 2 || got[0] != "CONTROLLER" || got[1] != "C2" {
		t.Errorf("controller listener names %v", got)
	}
}
