package config

import (
	"strings"
)

// securityConfigDefs are the listener and authentication properties (Kafka 3.9
// KafkaConfig and its SSL/SASL configs). The ssl.*, sasl.enabled.mechanisms and
// connections.max.reauth.ms rows may also be given per listener as
// listener.name.<listener>.<property> (ListenerPropertyDef), and the JAAS configuration
// per listener and mechanism as listener.name.<listener>.<mechanism>.sasl.jaas.config.
var securityConfigDefs = []Def{
	{Name: "listener.security.protocol.map", Type: TypeString, Default: "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", ReadOnly: true,
		Doc: "Maps listener names to security protocols (NAME:PROTOCOL,...); a listener named after a protocol needs no entry."},
	{Name: "inter.broker.listener.name", Type: TypeString, Default: "", ReadOnly: true,
		Doc:  "The listener brokers use to talk to each other (replica fetches, controller calls, forwarding); unset, the listener named by security.inter.broker.protocol.",
		Note: "It must be one of listeners."},
	{Name: "security.inter.broker.protocol", Type: TypeString, Default: "PLAINTEXT", ReadOnly: true, Validator: oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
		Doc: "The security protocol between brokers, when inter.broker.listener.name is unset: the listener of that name is used."},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: TypeString, Default: "GSSAPI", ReadOnly: true,
		Doc:  "The SASL mechanism brokers authenticate with on a SASL inter-broker listener.",
		Note: "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (GSSAPI is not implemented): credentials are the username and password of listener.name.<inter-broker listener>.<mechanism>.sasl.jaas.config."},
	{Name: "sasl.enabled.mechanisms", Type: TypeList, Default: "GSSAPI", ReadOnly: true,
		Doc:  "The SASL mechanisms a SASL listener offers.",
		Note: "PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are implemented; a SASL listener offering none of them (the default GSSAPI) refuses to start."},
	{Name: "sasl.jaas.config", Type: TypePassword, Default: "", ReadOnly: true,
		Doc:  "JAAS login module configuration, in Kafka's JAAS syntax.",
		Note: "Per listener and mechanism as listener.name.<listener>.<mechanism>.sasl.jaas.config (e.g. listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"broker\" password=\"b\" user_broker=\"b\" user_alice=\"a\";): user_<name> options are the PLAIN users, username and password the broker's own credentials."},
	{Name: "connections.max.reauth.ms", Type: TypeLong, Default: "0", ReadOnly: true,
		Doc: "When positive, the longest a SASL session lasts before the client must re-authenticate (KIP-368); 0 means sessions do not expire."},
	{Name: "connection.failed.authentication.delay.ms", Type: TypeInt, Default: "100", ReadOnly: true, Validator: atLeast(0),
		Doc:  "How long the answer to a failed authentication is held back before the connection is closed, in milliseconds.",
		Note: "Counted per remote address: failures from one address are answered at most once per delay."},
	{Name: "sasl.server.max.receive.size", Type: TypeInt, Default: "524288", ReadOnly: true,
		Doc:  "The largest request a SASL listener reads before authentication has completed, in bytes; a larger one closes the connection.",
		Note: "Per listener too. It bounds ApiVersions, SaslHandshake and SaslAuthenticate before the connection's first authentication (nothing else is served then, and another api key closes the connection before its body is decoded); afterwards socket.request.max.bytes applies. The size prefix is checked before any of the body is read. A value below 1 means the default."},
	{Name: "ssl.keystore.type", Type: TypeString, Default: "JKS", ReadOnly: true,
		Doc:  "The file format of the keystore.",
		Note: "Only PEM is implemented (KIP-651): a TLS listener with another type refuses to start; left unset, the keystore is read as PEM."},
	{Name: "ssl.keystore.location", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "The keystore file: with ssl.keystore.type=PEM, the private key and the certificate chain in PEM."},
	{Name: "ssl.keystore.key", Type: TypePassword, Default: "", ReadOnly: true,
		Doc: "The private key in PEM, given inline instead of ssl.keystore.location."},
	{Name: "ssl.keystore.certificate.chain", Type: TypePassword, Default: "", ReadOnly: true,
		Doc: "The certificate chain in PEM, given inline instead of ssl.keystore.location."},
	{Name: "ssl.keystore.password", Type: TypePassword, Default: "", ReadOnly: true,
		Doc:  "The keystore password.",
		Note: "Not used by PEM keystores; see ssl.key.password."},
	{Name: "ssl.key.password", Type: TypePassword, Default: "", ReadOnly: true,
		Doc:  "The password of the private key.",
		Note: "Decrypts an ENCRYPTED PRIVATE KEY (PKCS#8 with PBES2, PBKDF2 and AES-CBC, as openssl pkcs8 -topk8 -v2 aes256 writes it)."},
	{Name: "ssl.truststore.type", Type: TypeString, Default: "JKS", ReadOnly: true,
		Doc:  "The file format of the truststore.",
		Note: "Only PEM is implemented (KIP-651): a TLS listener with another type refuses to start; left unset, the truststore is read as PEM."},
	{Name: "ssl.truststore.location", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "The truststore file: with ssl.truststore.type=PEM, the trusted certificates in PEM."},
	{Name: "ssl.truststore.certificates", Type: TypePassword, Default: "", ReadOnly: true,
		Doc: "The trusted certificates in PEM, given inline instead of ssl.truststore.location."},
	{Name: "ssl.truststore.password", Type: TypePassword, Default: "", ReadOnly: true,
		Doc:  "The truststore password.",
		Note: "Not used by PEM truststores."},
	{Name: "ssl.client.auth", Type: TypeString, Default: "none", ReadOnly: true, Validator: oneOf("required", "requested", "none"),
		Doc:  "Whether an SSL listener asks clients for a certificate: required, requested or none.",
		Note: "The principal of a verified client certificate on an SSL listener is User:<subject distinguished name>, RFC 2253 form (CN=alice,O=Example), as Kafka's default principal builder names it."},
	{Name: "ssl.endpoint.identification.algorithm", Type: TypeString, Default: "https", ReadOnly: true,
		Doc: "Broker-to-broker TLS: https checks the other broker's certificate names its address; empty does not."},
	// The Raft transport (broker/raft_security.go, raft_tls.go).
	{Name: RaftSecurityProtocolProperty, Type: TypeString, Default: "", ReadOnly: true, Validator: oneOf("", "PLAINTEXT", "SSL"),
		Doc: "Petrel's own: the security of the Raft transport (--raft-listen), which carries the metadata log (ACLs, SCRAM credentials) and elects the controller. " +
			"SSL is mutual TLS with the inter-broker listener's certificates (listener.name.<inter-broker listener>.ssl.*, else ssl.*): each node presents its keystore certificate, " +
			"and on both ends of a connection the other's certificate must be signed by a CA of the truststore and carry a principal of petrel.raft.allowed.principals. " +
			"PLAINTEXT is neither authenticated nor encrypted: anyone who reaches the port can force elections and write metadata.",
		Note: "Unset: SSL when the inter-broker listener uses TLS (SSL or SASL_SSL); else PLAINTEXT when no listener uses SASL or SSL; else the node refuses to start " +
			"(its clients are authenticated, so its quorum must be): set SSL, or PLAINTEXT to accept an unauthenticated quorum, which every start then logs at WARN. " +
			"This default keeps what clusters had (TLS clusters their mutual TLS, plaintext clusters a plaintext quorum) and stops only the clusters " +
			"that authenticate clients but not their quorum, until they choose."},
	{Name: RaftAllowedPrincipalsProperty, Type: TypeString, Default: "", ReadOnly: true,
		Doc: "Petrel's own: the principals allowed to be Raft peers (voters, non-voters, the controller), semicolon-separated in Kafka's User:<name> form " +
			"(User:CN=broker0,O=Example;User:CN=broker1,O=Example), matched against the principal of the peer's certificate as an SSL listener names it " +
			"(User: and the subject's distinguished name, RFC 2253). A certificate the CA signed but whose principal is not listed is refused, in both directions.",
		Note: "Unset: the node's own inter-broker principals (its keystore certificate's, and User:<username> of a SASL inter-broker listener) and super.users; " +
			"list every broker's certificate principal when brokers have certificates of their own. Only with petrel.raft.security.protocol SSL: set with a plaintext Raft transport, the node refuses to start."},
}

func init() {
	BrokerDefs = append(BrokerDefs, securityConfigDefs...)
	for _, d := range securityConfigDefs {
		brokerByName[d.Name] = d
	}
}

// perListenerProperties are the properties that listener.name.<listener>. may prefix.
func perListenerProperty(name string) bool {
	switch name {
	case "sasl.enabled.mechanisms", "connections.max.reauth.ms", "sasl.server.max.receive.size", "max.connections":
		return true
	}
	return strings.HasPrefix(name, "ssl.")
}

// ListenerPropertyDef returns the definition of a listener-prefixed property:
// listener.name.<listener>.<ssl.* | sasl.enabled.mechanisms | connections.max.reauth.ms |
// sasl.server.max.receive.size | max.connections> or
// listener.name.<listener>.<mechanism>.sasl.jaas.config. Every one is read at start
// (read-only), even where the property itself is dynamic (max.connections).
func ListenerPropertyDef(name string) (Def, bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return Def{}, false
	}
	_, prop, ok := strings.Cut(rest, ".")
	if !ok {
		return Def{}, false
	}
	if perListenerProperty(prop) {
		def, ok := brokerByName[prop]
		if ok {
			def.Name, def.ReadOnly = name, true
		}
		return def, ok
	}
	mech, prop, ok := strings.Cut(prop, ".")
	if ok && prop == "sasl.jaas.config" && mech != "" {
		def := brokerByName["sasl.jaas.config"]
		def.Name = name
		return def, true
	}
	return Def{}, false
}
