package config

// Unimplemented is a Kafka property Petrel knows of but does not implement yet,
// with what stands in for it. Supplying one as a broker property logs a warning that
// says so (an error with --strict-config); a topic config of this kind in CreateTopics
// is refused with INVALID_CONFIG. When an issue implements one, move it into the
// property table (defs.go): the table wins over this list.
type Unimplemented struct {
	Name string // the property, or a prefix in the prefix lists
	Note string // why, or what Petrel does instead
}

const (
	noteKRaft      = "Petrel's Raft quorum is configured by --voters, --raft-listen and --join"
	noteListener   = "Petrel has one PLAINTEXT listener, set by --listen and --advertised"
	noteSecurity   = "this TLS or SASL setting is not implemented (docs/security.md lists those that are)"
	noteThreads    = "Petrel runs one goroutine per connection and sizes its own work"
	noteCompaction = "the log cleaner sizes its own read and write buffers"
	noteQuotas     = "quotas and throttling are not implemented yet"
	noteTiered     = "this tiered storage property is not implemented; those Petrel acts on are in the table (docs/tiered-storage.md)"
	noteZooKeeper  = "Petrel has no ZooKeeper; Raft holds the metadata"
	noteMetrics    = "metrics reporters are not implemented yet"
	noteSocket     = "Petrel uses the operating system's socket buffer sizes"
	noteTimestamp  = "timestamp bounds are not checked yet"
	// noteLz4Level: Kafka's levels 1-17 are lz4-java's (9, the default, its fast
	// compressor; the others its HC levels); pierrec/lz4 offers Fast and nine HC search
	// depths of its own, which do not map onto them.
	noteLz4Level = "lz4 recompression uses pierrec/lz4's fast compressor (Kafka's default, 9); its levels do not map onto lz4-java's 1-17"
)

// unimplementedBrokerConfigs are Kafka broker properties Petrel does not implement yet.
var unimplementedBrokerConfigs = []Unimplemented{
	// KRaft and cluster identity.
	{Name: "process.roles", Note: noteKRaft},
	{Name: "controller.quorum.voters", Note: noteKRaft},
	{Name: "controller.quorum.bootstrap.servers", Note: noteKRaft},
	{Name: "controller.quorum.election.backoff.max.ms", Note: "hashicorp/raft restarts a failed election after a random 1-2 times controller.quorum.election.timeout.ms"},
	{Name: "controller.quorum.append.linger.ms", Note: "hashicorp/raft batches proposals that wait while an append is in flight"},
	{Name: "controller.quorum.retry.backoff.ms", Note: "hashicorp/raft backs off failed requests to a voter on its own"},
	{Name: "metadata.log.dir", Note: "Raft's log lives in --data-dir/raft"},
	{Name: "metadata.log.segment.bytes", Note: noteKRaft},
	{Name: "metadata.max.retention.ms", Note: noteKRaft},
	{Name: "broker.id", Note: "Petrel takes the node id from --node-id"},
	{Name: "log.dir", Note: "Petrel keeps partitions in --data-dir/logs"},
	{Name: "initial.broker.registration.timeout.ms", Note: noteKRaft},
	// Listeners.
	{Name: "listener.security.protocol.map", Note: noteListener},
	{Name: "inter.broker.listener.name", Note: noteListener},
	{Name: "security.inter.broker.protocol", Note: noteListener},
	// Security.
	{Name: "principal.builder.class", Note: noteSecurity},
	{Name: "connections.max.reauth.ms", Note: noteSecurity},
	{Name: "delegation.token.secret.key", Note: noteSecurity},
	{Name: "delegation.token.max.lifetime.ms", Note: noteSecurity},
	{Name: "delegation.token.expiry.time.ms", Note: noteSecurity},
	// Threads and sockets.
	{Name: "num.network.threads", Note: noteThreads},
	{Name: "num.io.threads", Note: noteThreads},
	{Name: "num.replica.fetchers", Note: "Petrel runs one fetcher per source broker"},
	{Name: "num.recovery.threads.per.data.dir", Note: noteThreads},
	{Name: "background.threads", Note: noteThreads},
	{Name: "queued.max.requests", Note: "Petrel bounds queued requests by queued.max.request.bytes"},
	{Name: "socket.send.buffer.bytes", Note: noteSocket},
	{Name: "socket.receive.buffer.bytes", Note: noteSocket},
	{Name: "socket.listen.backlog.size", Note: noteSocket},
	{Name: "replica.socket.timeout.ms", Note: "follower fetches time out after replica.fetch.wait.max.ms plus a margin"},
	{Name: "replica.socket.receive.buffer.bytes", Note: noteSocket},
	{Name: "replica.fetch.min.bytes", Note: "followers fetch with min bytes 1"},
	{Name: "request.timeout.ms", Note: "broker-to-broker requests use their own timeouts"},
	// Log and retention.
	{Name: "log.roll.jitter.ms", Note: "segments roll without jitter"},
	{Name: "log.roll.jitter.hours", Note: "segments roll without jitter"},
	{Name: "log.preallocate", Note: "segment files grow as written"},
	{Name: "log.flush.scheduler.interval.ms", Note: "flush.ms is checked on append"},
	{Name: "log.message.timestamp.before.max.ms", Note: noteTimestamp},
	{Name: "log.message.timestamp.after.max.ms", Note: noteTimestamp},
	{Name: "log.message.timestamp.difference.max.ms", Note: noteTimestamp},
	{Name: "log.message.downconversion.enable", Note: "Petrel never down-converts"},
	{Name: "log.message.format.version", Note: "Petrel writes and accepts only record batch format v2"},
	{Name: "log.dir.failure.timeout.ms", Note: "a storage error fails the partition"},
	{Name: "compression.lz4.level", Note: noteLz4Level},
	{Name: "create.topic.policy.class.name", Note: "topic policies are not implemented"},
	{Name: "alter.config.policy.class.name", Note: "config policies are not implemented"},
	// Compaction.
	{Name: "log.cleaner.io.buffer.size", Note: noteCompaction},
	{Name: "log.cleaner.io.buffer.load.factor", Note: noteCompaction},
	// Replication and leadership.
	{Name: "inter.broker.protocol.version", Note: "Petrel speaks one protocol version between its brokers"},
	{Name: "controlled.shutdown.enable", Note: "Petrel always shuts down in a controlled way"},
	// Producers and transactions.
	// Quotas.
	{Name: "replication.quota.window.num", Note: noteQuotas},
	{Name: "replication.quota.window.size.seconds", Note: noteQuotas},
	{Name: "client.quota.callback.class", Note: noteQuotas},
	// Metrics.
	{Name: "metric.reporters", Note: noteMetrics},
	{Name: "metrics.num.samples", Note: noteMetrics},
	{Name: "metrics.sample.window.ms", Note: noteMetrics},
	{Name: "metrics.recording.level", Note: noteMetrics},
	{Name: "kafka.metrics.reporters", Note: noteMetrics},
	{Name: "kafka.metrics.polling.interval.secs", Note: noteMetrics},
	{Name: "auto.include.jmx.reporter", Note: noteMetrics},
	// ZooKeeper (Kafka's old metadata store).
	{Name: "zookeeper.connect", Note: noteZooKeeper},
	{Name: "zookeeper.connection.timeout.ms", Note: noteZooKeeper},
	{Name: "zookeeper.session.timeout.ms", Note: noteZooKeeper},
	{Name: "zookeeper.metadata.migration.enable", Note: noteZooKeeper},
}

// unimplementedBrokerConfigPrefixes are families of Kafka broker properties Petrel does
// not implement yet, matched by prefix.
var unimplementedBrokerConfigPrefixes = []Unimplemented{
	{Name: "listener.name.", Note: noteSecurity + "; per-listener settings too"},
	{Name: "ssl.", Note: noteSecurity},
	{Name: "sasl.", Note: noteSecurity},
	{Name: "remote.log.", Note: noteTiered},
	{Name: "zookeeper.", Note: noteZooKeeper},
	{Name: "config.providers", Note: "config providers (${provider:path:key}) are not implemented"},
}

// unimplementedTopicConfigs are Kafka topic configs Petrel does not implement yet;
// CreateTopics refuses them with INVALID_CONFIG rather than ignore them.
var unimplementedTopicConfigs = []Unimplemented{
	{Name: "segment.jitter.ms", Note: "segments roll without jitter"},
	{Name: "preallocate", Note: "segment files grow as written"},
	{Name: "compression.lz4.level", Note: noteLz4Level},
	{Name: "message.timestamp.before.max.ms", Note: noteTimestamp},
	{Name: "message.timestamp.after.max.ms", Note: noteTimestamp},
	{Name: "message.timestamp.difference.max.ms", Note: noteTimestamp},
	{Name: "message.downconversion.enable", Note: "Petrel never down-converts"},
	{Name: "message.format.version", Note: "Petrel writes and accepts only record batch format v2"},
}
