package broker

// The one listener rule (docs/configuration.md, "Listeners"):
//
//   - The Kafka listeners are the listeners property, or --listen host:port as its
//     shorthand (PLAINTEXT://host:port). Both given and different: the node refuses to
//     start.
//   - Each listener is advertised at advertised.listeners' entry for it, or (the first
//     listener) at --advertised, else at its own address. Both --advertised and
//     advertised.listeners given and different: refused. An advertised address on
//     0.0.0.0 or :: is refused with Kafka's message; an empty host advertises the
//     machine's host name, as Kafka does.
//   - Every listener name needs a protocol in listener.security.protocol.map (Kafka's
//     "No security protocol defined for listener X").
//   - A listener named in controller.listener.names (a Kafka KRaft properties file's
//     CONTROLLER://:9093) is the Raft listener, never a client port: its address is
//     --raft-listen's (both given and different: refused), it is not served to clients
//     and not advertised.

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/petrel-broker/petrel/config"
)

// Defaults of the command line's listener flags.
const (
	DefaultListen     = "127.0.0.1:9092"
	DefaultRaftListen = "127.0.0.1:9093"
)

// ListenerFlags are the command line's listener flags as given: "" is a flag not given.
type ListenerFlags struct {
	Listen     string // --listen host:port
	Advertised string // --advertised host:port
	RaftListen string // --raft-listen host:port
}

// ApplyListenerFlags puts the command line's listener flags into c by the one listener
// rule: a flag and the property it is the shorthand of may not disagree, and a
// controller listener (controller.listener.names) supplies the Raft listener when
// --raft-listen is not given. Call it after c.Properties is set.
func (c *Config) ApplyListenerFlags(f ListenerFlags) error {
	if v, ok := c.Properties["listeners"]; ok && f.Listen != "" && !sameListenerList(v, protocolPlaintext+"://"+f.Listen) {
		return fmt.Errorf("%w: --listen %s conflicts with listeners=%s (%s): --listen is the shorthand for listeners=PLAINTEXT://%s; give one of them",
			config.ErrInvalidBrokerConfig, f.Listen, v, c.propertySource("listeners"), f.Listen)
	}
	c.Listen = cmp.Or(f.Listen, DefaultListen)
	if v, ok := c.Properties["advertised.listeners"]; ok && f.Advertised != "" {
		first := protocolPlaintext
		if entries, err := c.listenerEntries(); err == nil && len(entries) > 0 {
			first = entries[0][0]
		}
		if !sameListenerList(v, first+"://"+f.Advertised) {
			return fmt.Errorf("%w: --advertised %s conflicts with advertised.listeners=%s (%s): --advertised is the shorthand for advertised.listeners=%s://%s; give one of them",
				config.ErrInvalidBrokerConfig, f.Advertised, v, c.propertySource("advertised.listeners"), first, f.Advertised)
		}
	}
	c.Advertised = f.Advertised
	ctrl, ok, err := c.controllerListener()
	switch {
	case err != nil:
		return err
	case !ok:
		c.RaftListen = cmp.Or(f.RaftListen, DefaultRaftListen)
	case f.RaftListen != "" && f.RaftListen != ctrl[1]:
		return fmt.Errorf("%w: --raft-listen %s conflicts with listener %s://%s, which controller.listener.names makes the Raft listener; give one of them",
			config.ErrInvalidBrokerConfig, f.RaftListen, ctrl[0], ctrl[1])
	default:
		c.RaftListen = ctrl[1]
	}
	return nil
}

// sameListenerList reports whether two NAME://host:port lists name the same listeners
// at the same addresses, in the same order.
func sameListenerList(a, b string) bool {
	la, errA := parseListenerList("listeners", a)
	lb, errB := parseListenerList("listeners", b)
	return errA == nil && errB == nil && slices.Equal(la, lb)
}

// listenerEntries are the configured listeners, controller listeners included: the
// listeners property, or PLAINTEXT://--listen.
func (c *Config) listenerEntries() ([][2]string, error) {
	v, ok := c.Properties["listeners"]
	if !ok {
		return [][2]string{{protocolPlaintext, c.Listen}}, nil
	}
	entries, err := parseListenerList("listeners", v)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: listeners is empty", config.ErrInvalidBrokerConfig)
	}
	return entries, nil
}

// controllerListenerNames are controller.listener.names, upper case.
func (c *Config) controllerListenerNames() []string {
	var out []string
	for _, n := range strings.Split(c.Properties["controller.listener.names"], ",") {
		if n = strings.ToUpper(strings.TrimSpace(n)); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// controllerListener is the first listener that controller.listener.names names: the
// Raft listener. ok is false when no listener is a controller listener.
func (c *Config) controllerListener() (entry [2]string, ok bool, err error) {
	names := c.controllerListenerNames()
	if len(names) == 0 {
		return entry, false, nil
	}
	entries, err := c.listenerEntries()
	if err != nil {
		return entry, false, err
	}
	for _, e := range entries {
		if slices.Contains(names, e[0]) {
			return e, true, nil
		}
	}
	return entry, false, nil
}

// checkControllerListeners holds the controller listeners to the rule: the first is
// the Raft listener (its address is RaftListen's), its protocol is one the Raft
// transport's security covers, and they leave at least one client listener.
func (c *Config) checkControllerListeners(entries [][2]string, protos map[string]string) error {
	names := c.controllerListenerNames()
	var ctrl [][2]string
	for _, e := range entries {
		if slices.Contains(names, e[0]) {
			ctrl = append(ctrl, e)
		}
	}
	if len(ctrl) == 0 {
		return nil
	}
	if len(ctrl) == len(entries) {
		return fmt.Errorf("%w: There must be at least one broker listener that is not a controller listener: every listener of listeners is named in controller.listener.names", config.ErrInvalidBrokerConfig)
	}
	if len(ctrl) > 1 {
		return fmt.Errorf("%w: listeners has %d controller listeners (controller.listener.names); Petrel's Raft transport is one listener: keep one", config.ErrInvalidBrokerConfig, len(ctrl))
	}
	e := ctrl[0]
	proto, ok := protos[e[0]]
	if !ok {
		return noProtocolError(e[0])
	}
	if _, set := c.Properties[config.RaftSecurityProtocolProperty]; !set && proto != protocolPlaintext {
		return fmt.Errorf("%w: the controller listener %s (controller.listener.names) is %s: the Raft transport's security is %s, not the listener's protocol; set %s=SSL (mutual TLS) or PLAINTEXT",
			config.ErrInvalidBrokerConfig, e[0], proto, config.RaftSecurityProtocolProperty, config.RaftSecurityProtocolProperty)
	}
	if c.RaftListener == nil && e[1] != c.RaftListen {
		return fmt.Errorf("%w: the controller listener %s://%s (controller.listener.names) is the Raft listener, but --raft-listen is %s; give one of them",
			config.ErrInvalidBrokerConfig, e[0], e[1], c.RaftListen)
	}
	return nil
}

// noProtocolError is Kafka's refusal of a listener without a security protocol.
func noProtocolError(name string) error {
	return fmt.Errorf("%w: No security protocol defined for listener %s (add %s:PLAINTEXT, or SSL, SASL_PLAINTEXT, SASL_SSL, to listener.security.protocol.map)",
		config.ErrInvalidBrokerConfig, name, name)
}

// checkAdvertisable refuses an advertised address no client can reach, with Kafka's
// message; where the address comes from the listener itself, it says how to set one.
func checkAdvertisable(s listenerSpec) error {
	addr, from := s.Advertised, "advertised.listeners"
	if addr == "" {
		addr, from = s.Bind, "listeners "+s.Name+" (advertised at its own address; set --advertised or advertised.listeners)"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", config.ErrInvalidBrokerConfig, from, err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%w: advertised.listeners cannot use the nonroutable meta-address %s. Use a routable IP address. (%s)", config.ErrInvalidBrokerConfig, host, from)
	}
	return nil
}

// advertisedHost is the host a listener is advertised at when its address has an empty
// host (PLAINTEXT://:9092 binds every interface): the machine's host name, as Kafka
// advertises its canonical host name.
func advertisedHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		return addr
	}
	return net.JoinHostPort(name, port)
}
