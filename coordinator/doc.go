// Package coordinator is the runtime for state kept in an internal topic
// (__consumer_offsets, __transaction_state): it owns the partitions of that
// topic which this broker leads.
//
// For each loaded partition the runtime keeps one executor goroutine, so the partition's
// Shard is never called concurrently. Loading reads the partition from its log start to
// its log end and replays every record; requests meanwhile get ErrLoadInProgress, and
// serving starts only once the high watermark has reached the log end, so nothing
// uncommitted is ever served. An Op runs on the executor and returns a Result: timers
// to set, records to append (one RecordBatch v2, acks=all semantics) and a Committed
// callback, called on the executor once the high watermark passes the batch or the
// write failed, with Kafka's coordinator error translation (NOT_LEADER_OR_FOLLOWER →
// NOT_COORDINATOR; NOT_ENOUGH_REPLICAS(_AFTER_APPEND) and REQUEST_TIMED_OUT →
// COORDINATOR_NOT_AVAILABLE). A write the high watermark has not reached by its
// deadline is answered through its TimedOut but stays pending: once it lands, its
// Committed applies it in log order, so the live state is what a load would replay (a
// write whose append failed is never applied). Unloading (leadership lost) fails
// pending writes and queued ops with NOT_COORDINATOR and cancels the partition's
// timers.
//
// The runtime knows nothing of groups or transactions: those rules live in the pure
// group and txn packages. GroupCoordinator and TxnCoordinator (groups.go,
// transactions.go) adapt their shards to the runtime on a Router (router.go): Effects
// become Results, partitions load and unload by leadership, a key routes to its shard;
// the transaction coordinator's markers go to the partitions' leaders through the
// broker's MarkerNet (txn_markers.go).
package coordinator
