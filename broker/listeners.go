package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
)

// boundListener is a listener with its socket and rpc configuration.
type boundListener struct {
	spec config.ListenerSpec
	ln   net.Listener
	cfg  rpc.ListenerConfig
}

// listenerRule is c's listeners as the one listener rule (config/listener_rule.go)
// reads them, the machine's host name advertised for an empty host.
func (c *Config) listenerRule() config.Listeners {
	return config.Listeners{Properties: c.Properties, Sources: c.PropertySources, Listen: c.Listen, Advertised: c.Advertised,
		RaftListen: c.RaftListen, RaftBound: c.RaftListener != nil, Hostname: os.Hostname}
}

// listenerSpecs resolves the client listeners by the one listener rule.
func (c *Config) listenerSpecs() ([]config.ListenerSpec, error) {
	l := c.listenerRule()
	return l.Specs()
}

// ApplyListenerFlags puts the command line's listener flags into c by the one listener
// rule (config.Listeners.ApplyFlags). Call it after c.Properties is set.
func (c *Config) ApplyListenerFlags(f config.ListenerFlags) error {
	l := c.listenerRule()
	if err := l.ApplyFlags(f); err != nil {
		return err
	}
	c.Listen, c.Advertised, c.RaftListen = l.Listen, l.Advertised, l.RaftListen
	return nil
}

// interBrokerListenerName is inter.broker.listener.name, else the listener named by
// security.inter.broker.protocol.
func (c *Config) interBrokerListenerName() string {
	return config.InterBrokerListenerName(c.Properties)
}

// listenerProperty is listener.name.<listener>.<prop> when set, else prop's value.
func (c *Config) listenerProperty(listener, prop string) string {
	return config.ListenerProperty(c.Properties, listener, prop)
}

// sslSettings are a listener's ssl.* properties.
func (c *Config) sslSettings(listener string) auth.SSLSettings {
	return sslSettingsOf(func(name string) string {
		if name == "ssl.keystore.type" || name == "ssl.truststore.type" {
			if _, set := c.Properties[name]; !set {
				if _, set := c.Properties["listener.name."+strings.ToLower(listener)+"."+name]; !set {
					return "PEM" // unset: read as PEM rather than Kafka's JKS
				}
			}
		}
		return c.listenerProperty(listener, name)
	})
}

// sslSettingsOf reads the ssl.* properties into SSLSettings, each by its name: a
// listener's (sslSettings) or a client's (ParseClientSecurity).
func sslSettingsOf(p func(name string) string) auth.SSLSettings {
	return auth.SSLSettings{
		KeystoreType: p("ssl.keystore.type"), KeystoreLocation: p("ssl.keystore.location"),
		KeystoreKey: p("ssl.keystore.key"), KeystoreChain: p("ssl.keystore.certificate.chain"),
		KeyPassword: p("ssl.key.password"), TruststoreType: p("ssl.truststore.type"),
		TruststoreLoc: p("ssl.truststore.location"), TruststoreCerts: p("ssl.truststore.certificates"),
		ClientAuth: p("ssl.client.auth"), EndpointIdentification: p("ssl.endpoint.identification.algorithm"),
	}
}

// jaasConfig is listener.name.<listener>.<mechanism>.sasl.jaas.config, else
// sasl.jaas.config, parsed; nil when neither is set.
func (c *Config) jaasConfig(listener, mechanism string) ([]auth.LoginModule, error) {
	name := "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + ".sasl.jaas.config"
	v, ok := c.Properties[name]
	if !ok {
		name = "sasl.jaas.config"
		v = c.Properties[name]
	}
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	m, err := auth.ParseJAAS(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", config.ErrInvalidBrokerConfig, name, err)
	}
	return m, nil
}

// rpcListenerConfig builds the rpc configuration of a listener: TLS from its ssl.*
// properties, SASL with its enabled mechanisms, the failure delay and the bound on
// frames before authentication (sasl.server.max.receive.size).
func (b *Broker) rpcListenerConfig(s config.ListenerSpec) (rpc.ListenerConfig, error) {
	lc := rpc.ListenerConfig{Name: s.Name}
	if s.TLS() {
		tc, err := auth.ServerTLSConfig(b.cfg.sslSettings(s.Name))
		if err != nil {
			return lc, fmt.Errorf("%w: listener %s: %w", config.ErrInvalidBrokerConfig, s.Name, err)
		}
		lc.TLS = tc
		lc.CertificatePrincipal = auth.CertificatePrincipal
	}
	if s.SASL() {
		a, err := b.newSASLAuthenticator(s.Name)
		if err != nil {
			return lc, err
		}
		lc.SASL = a
		lc.MaxReauth = time.Duration(config.ParseInt64(b.cfg.listenerProperty(s.Name, "connections.max.reauth.ms"))) * time.Millisecond
		lc.FailureDelay = b.authFailures.Delay
		lc.SASLMaxReceiveSize = int32(config.ParseInt64(b.cfg.listenerProperty(s.Name, "sasl.server.max.receive.size")))
	}
	return lc, nil
}

// openListeners resolves and binds every listener (the first one may be the
// KafkaListener test hook) and builds its rpc configuration; the listeners share one
// rpc.ConnectionQuotas (max.connections counts over all of them).
func (b *Broker) openListeners() error {
	specs, err := b.cfg.listenerSpecs()
	if err != nil {
		return err
	}
	inter := b.cfg.interBrokerListenerName()
	if !slices.ContainsFunc(specs, func(s config.ListenerSpec) bool { return s.Name == inter }) {
		return fmt.Errorf("%w: the inter-broker listener %s (inter.broker.listener.name or security.inter.broker.protocol) is not one of listeners", config.ErrInvalidBrokerConfig, inter)
	}
	qc, err := b.connectionQuotaConfig(specs, inter) // connection_quotas.go
	if err != nil {
		return err
	}
	quotas := rpc.NewConnectionQuotas(qc)
	var out []boundListener
	fail := func(err error) error {
		for _, l := range out {
			l.ln.Close()
		}
		return err
	}
	for i, s := range specs {
		lc, err := b.rpcListenerConfig(s)
		if err != nil {
			return fail(err)
		}
		lc.Limiter = quotas
		var ln net.Listener
		if i == 0 && b.cfg.KafkaListener != nil {
			ln = b.cfg.KafkaListener
		} else if ln, err = net.Listen("tcp", s.Bind); err != nil {
			return fail(fmt.Errorf("kafka listener %s %s: %w", s.Name, s.Bind, err))
		}
		if s.Advertised == "" {
			s.Advertised = ln.Addr().String()
			if host, _, _ := net.SplitHostPort(s.Bind); host == "" { // every interface: the host name
				_, port, _ := net.SplitHostPort(s.Advertised)
				rule := b.cfg.listenerRule()
				s.Advertised = rule.AdvertisedHost(net.JoinHostPort("", port))
			}
		}
		out = append(out, boundListener{spec: s, ln: ln, cfg: lc})
	}
	if b.interBroker, err = b.newInterBrokerDialer(specs[slices.IndexFunc(specs, func(s config.ListenerSpec) bool { return s.Name == inter })]); err != nil {
		return fail(err)
	}
	b.listeners = out
	b.listener = out[0].ln
	b.cfg.Advertised = out[0].spec.Advertised
	return nil
}

// closeListeners closes every bound listener (start-up failures).
func (b *Broker) closeListeners() {
	for _, l := range b.listeners {
		l.ln.Close()
	}
}

// serveListeners serves every listener on its own goroutine.
func (b *Broker) serveListeners() {
	for _, l := range b.listeners {
		b.goLoop("kafka listener "+l.spec.Name, func() {
			if err := b.server.ServeListener(l.ln, l.cfg); err != nil {
				b.logger.Error("kafka listener stopped", "listener", l.spec.Name, "error", err)
			}
		})
	}
}

// ListenerAddr is the bound address of the named listener, or nil.
func (b *Broker) ListenerAddr(name string) net.Addr {
	for _, l := range b.listeners {
		if l.spec.Name == strings.ToUpper(name) {
			return l.ln.Addr()
		}
	}
	return nil
}

// listenersValue is the listeners (or, advertised, advertised.listeners) value in
// Kafka's form, for DescribeConfigs.
func (b *Broker) listenersValue(advertised bool) string {
	parts := make([]string, 0, len(b.listeners))
	for _, l := range b.listeners {
		addr := l.ln.Addr().String()
		if advertised {
			addr = l.spec.Advertised
		}
		parts = append(parts, l.spec.Name+"://"+addr)
	}
	return strings.Join(parts, ",")
}

// endpointFor is a broker's endpoint on the named listener: Kafka answers with the
// endpoints of the listener a request arrived on. A broker registered without that
// listener (a rolling change of listeners) falls back to its first endpoint.
func endpointFor(br *metadata.Broker, listener string) (metadata.Endpoint, bool) {
	if br == nil || len(br.Listeners) == 0 {
		return metadata.Endpoint{}, false
	}
	for _, e := range br.Listeners {
		if strings.EqualFold(e.Name, listener) {
			return e, true
		}
	}
	return br.Listeners[0], true
}

// interBrokerDialer opens connections to other brokers' inter-broker listener: TLS and
// SASL as that listener's protocol needs, with this broker's own credentials.
type interBrokerDialer struct {
	listener  string
	tls       *auth.SSLSettings // nil: no TLS
	mechanism string            // "": no SASL
	username  string
	password  string
}

// newInterBrokerDialer reads the client side of the inter-broker listener: its ssl.*
// properties, sasl.mechanism.inter.broker.protocol and the username and password of
// its JAAS configuration.
func (b *Broker) newInterBrokerDialer(s config.ListenerSpec) (*interBrokerDialer, error) {
	d := &interBrokerDialer{listener: s.Name}
	if s.TLS() {
		st := b.cfg.sslSettings(s.Name)
		if _, err := auth.ClientTLSConfig(st, ""); err != nil {
			return nil, fmt.Errorf("%w: inter-broker listener %s: %w", config.ErrInvalidBrokerConfig, s.Name, err)
		}
		d.tls = &st
	}
	if s.SASL() {
		var err error
		if d.mechanism, d.username, d.password, err = b.cfg.interBrokerCredentials(s.Name); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// interBrokerCredentials are the broker's own SASL credentials on the inter-broker
// listener: sasl.mechanism.inter.broker.protocol and the username and password of the
// listener's JAAS configuration for it.
func (c *Config) interBrokerCredentials(listener string) (mechanism, username, password string, err error) {
	mech, _ := c.brokerValue("sasl.mechanism.inter.broker.protocol")
	if !slices.Contains(auth.SupportedMechanisms, mech) {
		return "", "", "", fmt.Errorf("%w: sasl.mechanism.inter.broker.protocol=%s: the inter-broker listener %s needs PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", config.ErrInvalidBrokerConfig, mech, listener)
	}
	jaas, err := c.jaasConfig(listener, mech)
	if err != nil {
		return "", "", "", err
	}
	user, pass, ok := auth.ClientCredentials(jaas)
	if !ok {
		return "", "", "", fmt.Errorf("%w: listener.name.%s.%s.sasl.jaas.config needs username and password: the broker's own credentials on the inter-broker listener", config.ErrInvalidBrokerConfig, strings.ToLower(listener), strings.ToLower(mech))
	}
	return mech, user, pass, nil
}

// dialFunc wraps dial (TCP, or the tests' faulty network) with the listener's TLS
// handshake and SASL authentication (rpc.SecureDialer).
func (d *interBrokerDialer) dialFunc(dial rpc.DialFunc, clientID string) rpc.DialFunc {
	sd := rpc.SecureDialer{Mechanism: d.mechanism}
	if d.tls != nil {
		st := *d.tls
		sd.TLS = func(host string) (*tls.Config, error) { return auth.ClientTLSConfig(st, host) }
	}
	sd.NewStep = func() (rpc.SASLClientStep, error) {
		sess, err := auth.NewClientSession(d.mechanism, d.username, d.password)
		if err != nil {
			return rpc.SASLClientStep{}, err
		}
		return rpc.SASLClientStep{Step: sess.Step, Verify: func(final []byte) error { return auth.Verify(sess, final) }}, nil
	}
	return sd.Wrap(dial, clientID)
}

// dialBroker connects an rpc client to another broker's inter-broker listener.
func (b *Broker) dialBroker(ctx context.Context, addr, clientID string) (*rpc.Client, error) {
	return rpc.DialWith(ctx, b.interBroker.dialFunc(b.dial, clientID), addr, clientID)
}

// interBrokerAddr is a broker's address on the inter-broker listener.
func (b *Broker) interBrokerAddr(br *metadata.Broker) (string, bool) {
	e, ok := endpointFor(br, b.interBroker.listener)
	if !ok {
		return "", false
	}
	return net.JoinHostPort(e.Host, fmt.Sprint(e.Port)), true
}
