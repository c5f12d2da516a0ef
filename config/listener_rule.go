package config

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
	"slices"
	"strings"
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

// Listeners is what the listener rule reads: a node's properties and its listener
// addresses from the command line.
type Listeners struct {
	// Properties are the broker properties; Sources where each came from (a property
	// missing there counts as --set).
	Properties map[string]string
	Sources    map[string]string
	// Listen, Advertised and RaftListen are --listen, --advertised and --raft-listen
	// (after ApplyFlags).
	Listen, Advertised, RaftListen string
	// RaftBound is a Raft listener bound before start (a test hook): RaftListen is
	// then not its address and is not held to the controller listener's.
	RaftBound bool
	// Hostname returns the machine's host name, advertised for an address with an empty
	// host; nil advertises such an address as it is.
	Hostname func() (string, error)
}

// ApplyFlags puts the command line's listener flags into l by the one listener rule: a
// flag and the property it is the shorthand of may not disagree, and a controller
// listener (controller.listener.names) supplies the Raft listener when --raft-listen is
// not given.
func (l *Listeners) ApplyFlags(f ListenerFlags) error {
	if v, ok := l.Properties["listeners"]; ok && f.Listen != "" && !sameListenerList(v, SecurityProtocolPlaintext+"://"+f.Listen) {
		return fmt.Errorf("%w: --listen %s conflicts with listeners=%s (%s): --listen is the shorthand for listeners=PLAINTEXT://%s; give one of them",
			ErrInvalidBrokerConfig, f.Listen, v, l.source("listeners"), f.Listen)
	}
	l.Listen = cmp.Or(f.Listen, DefaultListen)
	if v, ok := l.Properties["advertised.listeners"]; ok && f.Advertised != "" {
		first := SecurityProtocolPlaintext
		if entries, err := l.Entries(); err == nil && len(entries) > 0 {
			first = entries[0].Name
		}
		if !sameListenerList(v, first+"://"+f.Advertised) {
			return fmt.Errorf("%w: --advertised %s conflicts with advertised.listeners=%s (%s): --advertised is the shorthand for advertised.listeners=%s://%s; give one of them",
				ErrInvalidBrokerConfig, f.Advertised, v, l.source("advertised.listeners"), first, f.Advertised)
		}
	}
	l.Advertised = f.Advertised
	ctrl, ok, err := l.ControllerListener()
	switch {
	case err != nil:
		return err
	case !ok:
		l.RaftListen = cmp.Or(f.RaftListen, DefaultRaftListen)
	case f.RaftListen != "" && f.RaftListen != ctrl.Addr:
		return fmt.Errorf("%w: --raft-listen %s conflicts with listener %s://%s, which controller.listener.names makes the Raft listener; give one of them",
			ErrInvalidBrokerConfig, f.RaftListen, ctrl.Name, ctrl.Addr)
	default:
		l.RaftListen = ctrl.Addr
	}
	return nil
}

// source is where a property came from.
func (l *Listeners) source(name string) string {
	if s, ok := l.Sources[name]; ok {
		return s
	}
	return SourceSet
}

// sameListenerList reports whether two NAME://host:port lists name the same listeners
// at the same addresses, in the same order.
func sameListenerList(a, b string) bool {
	la, errA := ParseListenerList("listeners", a)
	lb, errB := ParseListenerList("listeners", b)
	return errA == nil && errB == nil && slices.Equal(la, lb)
}

// Entries are the configured listeners, controller listeners included: the listeners
// property, or PLAINTEXT://--listen.
func (l *Listeners) Entries() ([]ListenerAddr, error) {
	v, ok := l.Properties["listeners"]
	if !ok {
		return []ListenerAddr{{SecurityProtocolPlaintext, l.Listen}}, nil
	}
	entries, err := ParseListenerList("listeners", v)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: listeners is empty", ErrInvalidBrokerConfig)
	}
	return entries, nil
}

// ControllerListener is the first listener that controller.listener.names names: the
// Raft listener. ok is false when no listener is a controller listener.
func (l *Listeners) ControllerListener() (entry ListenerAddr, ok bool, err error) {
	names := ControllerListenerNames(l.Properties)
	if len(names) == 0 {
		return entry, false, nil
	}
	entries, err := l.Entries()
	if err != nil {
		return entry, false, err
	}
	for _, e := range entries {
		if slices.Contains(names, e.Name) {
			return e, true, nil
		}
	}
	return entry, false, nil
}

// Specs resolves the client listeners by the rule: the listeners property, or
// PLAINTEXT://--listen, less the controller listeners (the Raft listener); each with
// its protocol and advertised address (advertised.listeners, else --advertised for the
// first listener, else its own address, which must then be routable).
func (l *Listeners) Specs() ([]ListenerSpec, error) {
	entries, err := l.Entries()
	if err != nil {
		return nil, err
	}
	protos, err := ProtocolMap(l.Properties)
	if err != nil {
		return nil, err
	}
	if err := l.checkControllerListeners(entries, protos); err != nil {
		return nil, err
	}
	controllers := ControllerListenerNames(l.Properties)
	var advertised []ListenerAddr
	if v, ok := l.Properties["advertised.listeners"]; ok {
		if advertised, err = ParseListenerList("advertised.listeners", v); err != nil {
			return nil, err
		}
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	for _, a := range advertised {
		if !slices.Contains(names, a.Name) {
			return nil, fmt.Errorf("%w: advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found %s. The valid options based on the current configuration are %s",
				ErrInvalidBrokerConfig, a.Name, strings.Join(names, ","))
		}
	}
	specs := make([]ListenerSpec, 0, len(entries))
	for _, e := range entries {
		if slices.Contains(controllers, e.Name) {
			continue // the Raft listener, never a client port
		}
		proto, ok := protos[e.Name]
		if !ok {
			return nil, noProtocolError(e.Name)
		}
		s := ListenerSpec{Name: e.Name, Protocol: proto, Bind: e.Addr}
		if len(specs) == 0 && l.Advertised != "" {
			s.Advertised = l.Advertised
		}
		for _, a := range advertised {
			if a.Name == s.Name {
				s.Advertised = a.Addr
			}
		}
		if err := checkAdvertisable(s); err != nil {
			return nil, err
		}
		if s.Advertised != "" {
			s.Advertised = l.AdvertisedHost(s.Advertised)
		}
		specs = append(specs, s)
	}
	return specs, nil
}

// checkControllerListeners holds the controller listeners to the rule: the first is
// the Raft listener (its address is RaftListen's), its protocol is one the Raft
// transport's security covers, and they leave at least one client listener.
func (l *Listeners) checkControllerListeners(entries []ListenerAddr, protos map[string]string) error {
	names := ControllerListenerNames(l.Properties)
	var ctrl []ListenerAddr
	for _, e := range entries {
		if slices.Contains(names, e.Name) {
			ctrl = append(ctrl, e)
		}
	}
	if len(ctrl) == 0 {
		return nil
	}
	if len(ctrl) == len(entries) {
		return fmt.Errorf("%w: There must be at least one broker listener that is not a controller listener: every listener of listeners is named in controller.listener.names", ErrInvalidBrokerConfig)
	}
	if len(ctrl) > 1 {
		return fmt.Errorf("%w: listeners has %d controller listeners (controller.listener.names); Petrel's Raft transport is one listener: keep one", ErrInvalidBrokerConfig, len(ctrl))
	}
	e := ctrl[0]
	proto, ok := protos[e.Name]
	if !ok {
		return noProtocolError(e.Name)
	}
	if _, set := l.Properties[RaftSecurityProtocolProperty]; !set && proto != SecurityProtocolPlaintext {
		return fmt.Errorf("%w: the controller listener %s (controller.listener.names) is %s: the Raft transport's security is %s, not the listener's protocol; set %s=SSL (mutual TLS) or PLAINTEXT",
			ErrInvalidBrokerConfig, e.Name, proto, RaftSecurityProtocolProperty, RaftSecurityProtocolProperty)
	}
	if !l.RaftBound && e.Addr != l.RaftListen {
		return fmt.Errorf("%w: the controller listener %s://%s (controller.listener.names) is the Raft listener, but --raft-listen is %s; give one of them",
			ErrInvalidBrokerConfig, e.Name, e.Addr, l.RaftListen)
	}
	return nil
}

// noProtocolError is Kafka's refusal of a listener without a security protocol.
func noProtocolError(name string) error {
	return fmt.Errorf("%w: No security protocol defined for listener %s (add %s:PLAINTEXT, or SSL, SASL_PLAINTEXT, SASL_SSL, to listener.security.protocol.map)",
		ErrInvalidBrokerConfig, name, name)
}

// checkAdvertisable refuses an advertised address no client can reach, with Kafka's
// message; where the address comes from the listener itself, it says how to set one.
func checkAdvertisable(s ListenerSpec) error {
	addr, from := s.Advertised, "advertised.listeners"
	if addr == "" {
		addr, from = s.Bind, "listeners "+s.Name+" (advertised at its own address; set --advertised or advertised.listeners)"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidBrokerConfig, from, err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%w: advertised.listeners cannot use the nonroutable meta-address %s. Use a routable IP address. (%s)", ErrInvalidBrokerConfig, host, from)
	}
	return nil
}

// AdvertisedHost is the address a listener is advertised at when its address has an
// empty host (PLAINTEXT://:9092 binds every interface): the machine's host name
// (Hostname), as Kafka advertises its canonical host name. Other addresses, and every
// address when the host name is unknown, are advertised as they are.
func (l *Listeners) AdvertisedHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" || l.Hostname == nil {
		return addr
	}
	name, err := l.Hostname()
	if err != nil || name == "" {
		return addr
	}
	return net.JoinHostPort(name, port)
}
