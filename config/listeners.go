package config

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// Kafka's security protocols (SecurityProtocol), the values of
// listener.security.protocol.map, security.inter.broker.protocol and a client's
// security.protocol.
const (
	SecurityProtocolPlaintext     = "PLAINTEXT"
	SecurityProtocolSSL           = "SSL"
	SecurityProtocolSASLPlaintext = "SASL_PLAINTEXT"
	SecurityProtocolSASLSSL       = "SASL_SSL"
)

// securityProtocolIDs are Kafka's SecurityProtocol ids, as BrokerRegistration carries them.
var securityProtocolIDs = map[string]int16{SecurityProtocolPlaintext: 0, SecurityProtocolSSL: 1, SecurityProtocolSASLPlaintext: 2, SecurityProtocolSASLSSL: 3}

// SecurityProtocolID is Kafka's id of a security protocol (upper case); ok is false
// for a protocol Kafka does not have.
func SecurityProtocolID(protocol string) (id int16, ok bool) {
	id, ok = securityProtocolIDs[protocol]
	return id, ok
}

// SecurityProtocolTLS reports whether a security protocol runs over TLS (SSL, SASL_SSL).
func SecurityProtocolTLS(protocol string) bool {
	return protocol == SecurityProtocolSSL || protocol == SecurityProtocolSASLSSL
}

// SecurityProtocolSASL reports whether a security protocol authenticates with SASL
// (SASL_PLAINTEXT, SASL_SSL).
func SecurityProtocolSASL(protocol string) bool {
	return protocol == SecurityProtocolSASLPlaintext || protocol == SecurityProtocolSASLSSL
}

// ListenerSpec is one configured client listener.
type ListenerSpec struct {
	Name       string // the listener name, upper case (PLAINTEXT, SASL_SSL, INTERNAL...)
	Protocol   string // its security protocol
	Bind       string // host:port to bind
	Advertised string // host:port put in metadata; "" until bound (then the bound address)
}

// TLS reports whether the listener runs over TLS.
func (s ListenerSpec) TLS() bool { return SecurityProtocolTLS(s.Protocol) }

// SASL reports whether the listener authenticates with SASL.
func (s ListenerSpec) SASL() bool { return SecurityProtocolSASL(s.Protocol) }

// ListenerAddr is one NAME://host:port entry of listeners or advertised.listeners.
type ListenerAddr struct {
	Name string // upper case
	Addr string // host:port
}

// ParseListenerList parses prop's value NAME://host:port,...: names upper-cased, each
// named once, blanks ignored.
func ParseListenerList(prop, s string) ([]ListenerAddr, error) {
	var out []ListenerAddr
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, addr, ok := strings.Cut(part, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: %s entry %q is not NAME://host:port", ErrInvalidBrokerConfig, prop, part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%w: %s entry %q: %v", ErrInvalidBrokerConfig, prop, part, err)
		}
		name = strings.ToUpper(name)
		if slices.ContainsFunc(out, func(e ListenerAddr) bool { return e.Name == name }) {
			return nil, fmt.Errorf("%w: %s names listener %s twice", ErrInvalidBrokerConfig, prop, name)
		}
		out = append(out, ListenerAddr{name, addr})
	}
	return out, nil
}

// ProtocolMap parses listener.security.protocol.map (its value in props, else Kafka's
// default): listener name to security protocol, both upper case.
func ProtocolMap(props map[string]string) (map[string]string, error) {
	v, _ := BrokerValue(props, "listener.security.protocol.map")
	m := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, proto, ok := strings.Cut(part, ":")
		proto = strings.ToUpper(strings.TrimSpace(proto))
		if _, known := securityProtocolIDs[proto]; !ok || !known {
			return nil, fmt.Errorf("%w: listener.security.protocol.map entry %q is not NAME:PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL", ErrInvalidBrokerConfig, part)
		}
		m[strings.ToUpper(strings.TrimSpace(name))] = proto
	}
	return m, nil
}

// InterBrokerListenerName is inter.broker.listener.name, else the listener named by
// security.inter.broker.protocol, upper case.
func InterBrokerListenerName(props map[string]string) string {
	if v, _ := BrokerValue(props, "inter.broker.listener.name"); v != "" {
		return strings.ToUpper(v)
	}
	v, _ := BrokerValue(props, "security.inter.broker.protocol")
	return strings.ToUpper(v)
}

// ListenerProperty is listener.name.<listener>.<prop> when set, else prop's value.
func ListenerProperty(props map[string]string, listener, prop string) string {
	if v, ok := props["listener.name."+strings.ToLower(listener)+"."+prop]; ok {
		return v
	}
	v, _ := BrokerValue(props, prop)
	return v
}

// ControllerListenerNames are controller.listener.names, upper case.
func ControllerListenerNames(props map[string]string) []string {
	var out []string
	for _, n := range strings.Split(props["controller.listener.names"], ",") {
		if n = strings.ToUpper(strings.TrimSpace(n)); n != "" {
			out = append(out, n)
		}
	}
	return out
}
