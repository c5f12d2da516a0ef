// Package rpc is the Kafka wire edge: listener, size framing, request headers, kmsg
// decoding and encoding, in-order responses per connection, the API registry that alone
// generates ApiVersions, and a small client for broker-to-broker requests. It holds no
// business logic.
package rpc
