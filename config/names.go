package config

// Petrel's own broker properties whose names the broker and the CLI use in code.
const (
	// MetricsListenerProperty is the metrics listener's address as DescribeConfigs
	// reports it (--metrics-listen; the bound address on a running broker): petrel top
	// reads every broker's from the broker itself.
	MetricsListenerProperty = "petrel.metrics.listener"
	// MinFreeBytesProperty is the free-space floor's property; -1 (the default) is the
	// rule of the broker's defaultMinFreeBytes, 0 turns the floor off.
	MinFreeBytesProperty = "petrel.log.dir.min.free.bytes"
	// RaftSecurityProtocolProperty chooses the Raft transport's security: SSL (mutual
	// TLS) or PLAINTEXT; unset, SSL when the inter-broker listener uses TLS.
	RaftSecurityProtocolProperty = "petrel.raft.security.protocol"
	// RaftAllowedPrincipalsProperty lists the principals a Raft peer's certificate may
	// carry; unset, the node's inter-broker principals and super.users.
	RaftAllowedPrincipalsProperty = "petrel.raft.allowed.principals"
)
