// Package rpc is the Kafka wire edge: listener, size framing, request headers, kmsg
// decoding and encoding, in-order responses per connection, the API registry that alone
// generates ApiVersions, connection limits (ConnectionQuotas), and a small client for
// broker-to-broker requests (with TLS and SASL through SecureDialer). It holds no
// business logic.
//
// # Connections
//
// Each accepted connection has two goroutines. The reader reads a 4-byte size, checks it
// against ServerConfig.MaxRequestBytes before allocating, reads the frame into a fresh
// buffer, decodes header and body (decodeRequest) and runs the registered Handler, one
// request at a time, in order. The handler's Result becomes a slot in a queue; the
// writer takes slots in order, waits for RespondLater channels in turn, and writes
// each response. So responses leave in request order while many requests are in
// flight, and the reader stops reading once ServerConfig.MaxInflight responses are owed.
//
// A Deferred (Request.Defer, RespondDeferred) is a delayed response that the goroutine
// completing it writes itself, with one non-blocking write, when every earlier
// response is written: the writer waits at its slot, or the reader, finding nothing
// owed, registered it without queuing it, so that neither goroutine is woken for it.
// What that write cannot take (a full socket, TLS, a large fetch answer for sendfile)
// the writer writes, still in order (deferred.go).
//
// A Client made by DialInline has no reader goroutine: each call reads its own
// response, one call at a time (a follower's fetcher, one fetch in flight).
//
// # Responses with file sections
//
// A response implementing PartsResponse (Fetch) encodes itself as bytes interleaved
// with FileSections; the frame's size is known before the first byte is written.
// writeParts alone decides how sections travel: sendfile at an explicit offset on a
// plain *net.TCPConn on Linux, a copy through a pooled buffer otherwise (TLS, pipes)
// and for sections below 32 KiB. A section found shorter than announced closes the
// connection. The writer releases the response once written or failed.
//
// # Wire rules (kafka-protocol.md §1.4, §2, §7)
//
//   - client_id is always an int16-length nullable string; flexible requests (header
//     v2) then carry a tag buffer, which is skipped.
//   - An unknown or unregistered key, a version outside the registered range, an
//     undecodable header or body, or a bad size closes the connection, as Kafka does.
//   - ApiVersions (key 18, versions 0-4) is built in. Above version 4 the body is not
//     decoded and the reply is the v0 layout with UNSUPPORTED_VERSION and only {18, 0,
//     4} (KIP-511). ApiVersions responses always use response header v0.
//   - Every other flexible response gets the one-byte empty tag buffer of response
//     header v1 after the correlation id.
//   - Produce with acks=0 returns NoResponse: nothing is written, and the other
//     responses keep their order.
//
// # Closing
//
// On a SASL listener, until the connection's first authentication completes, a frame
// is read only if its size prefix is at most ListenerConfig.SASLMaxReceiveSize (Kafka's
// sasl.server.max.receive.size), and a request other than ApiVersions, SaslHandshake
// and SaslAuthenticate closes the connection from its api key, before its body is
// decoded. A ListenerConfig.Limiter admits each accepted connection before anything is
// read (the broker's connection quotas); it may hold the accept loop back.
//
// A connection closes when the client closes it, on a protocol violation, when idle
// for ServerConfig.IdleTimeout with nothing owed, on CloseConnection (after the
// responses owed before it), or when a RespondLater channel is closed without a value.
// Server.Shutdown stops reading everywhere, waits for owed responses, then closes;
// Server.Close closes at once. Handler contexts end when their connection closes.
package rpc
