// Package auth holds the pure logic of listener security: TLS configuration from
// Kafka's PEM properties (KIP-651) and the principal of a client certificate, Kafka's
// JAAS configuration syntax, the SASL mechanisms PLAIN and SCRAM-SHA-256/512 (server and
// client side, SASLServer choosing between them), SCRAM credentials as Kafka stores
// them (salt, iterations, stored key, server key), and the pacing of failed
// authentications (FailureDelay).
//
// It performs no network I/O and starts no goroutines: the rpc package drives the SASL
// exchanges on a connection, the broker wires the mechanisms to the credentials held in
// the metadata image.
package auth
