package config

import (
	"math"
	"strconv"
)

// Type is Kafka's config type, as DescribeConfigs v3+ reports it.
type Type int8

// Kafka's config types.
const (
	TypeBoolean Type = 1
	TypeString  Type = 2
	TypeInt     Type = 3
	TypeLong    Type = 5
	TypeDouble  Type = 6
	TypeList    Type = 7
	// TypePassword is Kafka's PASSWORD: a secret. Its value never leaves the broker:
	// DescribeConfigs answers it as sensitive with a null value, and logs, errors,
	// --print-config and the CLI show "[hidden]" (sensitive.go).
	TypePassword Type = 9
)

// Def is one Kafka property with its default and documentation. The fields after
// ReadOnly are optional: their zero values mean "Kafka's type check only", "Petrel
// implements every valid value", "no note" and "set by the property itself".
type Def struct {
	Name    string
	Type    Type
	Default string // "" is Kafka's null (no default)
	Doc     string
	// BrokerSynonym, on a topic config, is the broker property that supplies its default;
	// "" for a topic-only config.
	BrokerSynonym string
	// ReadOnly marks broker properties that cannot change while running.
	ReadOnly bool
	// validator is Kafka's validator for the value (atLeast, between, oneOf, listOf).
	Validator Validator
	// Limit narrows the valid values to those Petrel implements.
	Limit *Limit
	// Note says how Petrel uses the property, where that differs from Kafka's Doc; it
	// goes into docs/configuration.md.
	Note string
	// Flag is the command-line flag that supplies this property's value instead; a value
	// given as a property is ignored with a warning.
	Flag string
}

var maxLong = strconv.FormatInt(math.MaxInt64, 10)

// CompressionTypes are Kafka's codecs for compression.type (BrokerCompressionType), in
// its order.
var CompressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// TopicDefs are the topic-level configs Petrel honours, with Kafka's types,
// defaults, validators and broker synonyms (Kafka 3.9 LogConfig). flush.messages
// defaults to 1 — every acknowledged append is fsynced first (see docs/durability.md) —
// where Kafka leaves flushing to the page cache; set
// log.flush.interval.messages=9223372036854775807 for Kafka's behaviour.
var TopicDefs = []Def{
	{Name: "cleanup.policy", Type: TypeList, Default: "delete", BrokerSynonym: "log.cleanup.policy", Validator: listOf("compact", "delete"),
		Doc:  "The retention policy for old log segments: delete discards segments past the retention time or size; compact keeps the latest value of each key.",
		Note: "compact runs the log cleaner (docs/compaction.md); compact,delete does both. Records without a key are refused on a compacted topic (INVALID_RECORD)."},
	{Name: "delete.retention.ms", Type: TypeLong, Default: "86400000", BrokerSynonym: "log.cleaner.delete.retention.ms", Validator: atLeast(0),
		Doc: "How long a tombstone (a record with a null value) of a compacted topic is kept after the cleaning pass that first reached its batch, in milliseconds."},
	{Name: "min.compaction.lag.ms", Type: TypeLong, Default: "0", BrokerSynonym: "log.cleaner.min.compaction.lag.ms", Validator: atLeast(0),
		Doc: "The least time a record stays uncompacted, in milliseconds."},
	{Name: "max.compaction.lag.ms", Type: TypeLong, Default: maxLong, BrokerSynonym: "log.cleaner.max.compaction.lag.ms", Validator: atLeast(1),
		Doc:  "The longest time a record may stay uncompacted, in milliseconds: a log whose oldest dirty segment is older is cleaned whatever its dirty ratio.",
		Note: "A segment's age is that of its newest record."},
	{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: "0.5", BrokerSynonym: "log.cleaner.min.cleanable.ratio", Validator: betweenDouble(0, 1),
		Doc: "The dirty share of a compacted log (bytes not yet cleaned over all bytes) above which the cleaner cleans it."},
	{Name: "compression.type", Type: TypeString, Default: "producer", BrokerSynonym: "compression.type", Validator: oneOf(CompressionTypes...),
		Doc: "The final compression codec of a topic's batches; producer keeps the codec the producer chose.",
		Note: "As Kafka: the leader recompresses a produced batch whose codec differs from the topic's (uncompressed stores it uncompressed), decompressing it as a stream while its records are checked (petrel.max.decompressed.batch.bytes) and refusing with MESSAGE_TOO_LARGE a result larger than max.message.bytes; " +
			"snappy is written in the xerial framing Java's producer writes (32 KiB blocks), lz4 as Kafka's LZ4 frames of 64 KiB blocks. " +
			"Records, offsets, timestamps and producer fields are kept; followers store the leader's batch. Batches already in the log keep their codec (docs/storage.md)."},
	{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", BrokerSynonym: "compression.gzip.level", Validator: betweenOr(1, 9, -1),
		Doc:  "The compression level to use if compression.type is set to gzip.",
		Note: "Used when the leader recompresses to gzip; klauspost/compress's gzip levels, -1 being its default (level 5; zlib's is 6)."},
	{Name: "compression.zstd.level", Type: TypeInt, Default: "3", BrokerSynonym: "compression.zstd.level", Validator: between(-131072, 22),
		Doc:  "The compression level to use if compression.type is set to zstd.",
		Note: "Used when the leader recompresses to zstd. klauspost/compress's encoder has four speeds, chosen from the level as its EncoderLevelFromZstd does: below 3 fastest, 3-5 default, 6-9 better, 10 and above best. Each batch being rewritten holds an encoder with a 1 MiB window: about 4 MB at the default speed, 7 MB at better, 38 MB at best."},
	{Name: "file.delete.delay.ms", Type: TypeLong, Default: "60000", BrokerSynonym: "log.segment.delete.delay.ms", Validator: atLeast(0),
		Doc:  "The time to wait before deleting a file from the filesystem.",
		Note: "The broker property sets how long a deleted topic's renamed partition directories are kept; a per-topic value is accepted and reported, not used."},
	{Name: "flush.messages", Type: TypeLong, Default: "1", BrokerSynonym: "log.flush.interval.messages", Validator: atLeast(1),
		Doc:  "Fsync the log after this many messages.",
		Note: "Petrel's default is 1 (Kafka's is 9223372036854775807): every append is fsynced before it is acknowledged; see docs/durability.md."},
	{Name: "flush.ms", Type: TypeLong, Default: maxLong, BrokerSynonym: "log.flush.interval.ms", Validator: atLeast(0),
		Doc: "Fsync the log when the last flush is this old, in milliseconds."},
	{Name: "index.interval.bytes", Type: TypeInt, Default: "4096", BrokerSynonym: "log.index.interval.bytes", Validator: atLeast(0),
		Doc: "The bytes of batches between two entries of the offset index."},
	{Name: "max.message.bytes", Type: TypeInt, Default: "1048588", BrokerSynonym: "message.max.bytes", Validator: atLeast(0),
		Doc: "The largest record batch size allowed."},
	{Name: "message.timestamp.type", Type: TypeString, Default: "CreateTime", BrokerSynonym: "log.message.timestamp.type", Validator: oneOf("CreateTime", "LogAppendTime"),
		Doc: "Whether a record's timestamp is the producer's (CreateTime) or the broker's append time (LogAppendTime).",
		Note: "LogAppendTime: the leader stamps each appended batch with its clock at the append (the timestamp-type bit and maxTimestamp, the CRC recomputed, the records untouched), transactional and idempotent batches and markers alike; " +
			"Produce answers log_append_time, consumers take it as every record's timestamp, the time index and ListOffsets by time and max timestamp use it, and followers store the stamped batch. Batches already in the log keep their timestamps."},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", BrokerSynonym: "min.insync.replicas", Validator: atLeast(1),
		Doc: "The fewest in-sync replicas with which an acks=all produce request succeeds; fewer is NOT_ENOUGH_REPLICAS."},
	{Name: "retention.bytes", Type: TypeLong, Default: "-1", BrokerSynonym: "log.retention.bytes",
		Doc: "The largest size a partition's log may grow to before old segments are deleted; -1 is unlimited."},
	{Name: "retention.ms", Type: TypeLong, Default: "604800000", BrokerSynonym: "log.retention.ms", Validator: atLeast(-1),
		Doc: "How long a segment is kept after its newest record, in milliseconds; -1 keeps segments forever."},
	{Name: "segment.bytes", Type: TypeInt, Default: "1073741824", BrokerSynonym: "log.segment.bytes", Validator: atLeast(14),
		Doc:  "The size at which the active segment rolls.",
		Note: "The minimum is Kafka 3.9's (14); Kafka 4.1 raised it to 1048576 (KIP-1030)."},
	{Name: "segment.index.bytes", Type: TypeInt, Default: "10485760", BrokerSynonym: "log.index.size.max.bytes", Validator: atLeast(4),
		Doc: "The size of the offset and time index files preallocated for the active segment."},
	{Name: "segment.ms", Type: TypeLong, Default: "604800000", BrokerSynonym: "log.roll.ms", Validator: atLeast(1),
		Doc: "The age after which the active segment rolls, even if not full, in milliseconds."},
	{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: "", Validator: throttledReplicaList{},
		Doc: "The replicas whose log replication the leader throttles (to leader.replication.throttled.rate), as partitionId:brokerId,... or * for every replica; only replicas outside the ISR are throttled (KIP-73)."},
	{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: "", Validator: throttledReplicaList{},
		Doc: "The replicas whose log replication the follower throttles (to follower.replication.throttled.rate), as partitionId:brokerId,... or * for every replica; only replicas outside the ISR are throttled (KIP-73)."},
	{Name: "remote.storage.enable", Type: TypeBoolean, Default: "false",
		Doc:  "To enable tiered storage for a topic, set this configuration to true.",
		Note: "Accepted when the controller's remote.log.storage.system.enable is true, refused with INVALID_CONFIG otherwise and on a compacted topic, as Kafka does. The leaders copy closed segments to remote storage and apply two-tier retention (docs/tiered-storage.md); reading them back comes with the rest of P23. Turning it off from true is refused without remote.log.delete.on.disable=true (KIP-950)."},
	{Name: "local.retention.ms", Type: TypeLong, Default: "-2", BrokerSynonym: "log.local.retention.ms", Validator: atLeast(-2),
		Doc:  "The number of milliseconds to keep the local log segment before it gets deleted. Default value is -2, it represents `retention.ms` value is to be used. The effective value should always be less than or equal to `retention.ms` value.",
		Note: "Acted on with remote.storage.enable=true: a local segment goes once copied and past it (a value above retention.ms counts as retention.ms)."},
	{Name: "local.retention.bytes", Type: TypeLong, Default: "-2", BrokerSynonym: "log.local.retention.bytes", Validator: atLeast(-2),
		Doc:  "The maximum size of local log segments that can grow for a partition before it deletes the old segments. Default value is -2, it represents `retention.bytes` value to be used. The effective value should always be less than or equal to `retention.bytes` value.",
		Note: "Acted on with remote.storage.enable=true: copied local segments go while the local log is larger (a value above retention.bytes counts as retention.bytes)."},
	{Name: "remote.log.copy.disable", Type: TypeBoolean, Default: "false",
		Doc:  "Determines whether tiered data for a topic should become read only, and no more data uploading on a topic.",
		Note: "Acted on: true stops the copies of the topic's segments, and local retention falls back to retention.* without waiting for copies (Kafka's rule)."},
	{Name: "remote.log.delete.on.disable", Type: TypeBoolean, Default: "false",
		Doc:  "Determines whether tiered data for a topic should be deleted after tiered storage is disabled on a topic.",
		Note: "Acted on: remote.storage.enable may go from true to false only with it (KIP-950); the leaders then delete the topic's remote segments."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", BrokerSynonym: "unclean.leader.election.enable",
		Doc: "Whether a replica outside the ISR may become leader when no ISR member can, at the risk of losing acknowledged data."},
}

// BrokerDefs are the broker properties Petrel reads (Kafka 3.9 KafkaConfig). The
// topic synonyms above are broker properties too.
var BrokerDefs = []Def{
	{Name: "node.id", Type: TypeInt, Default: "0", ReadOnly: true, Flag: "--node-id", Doc: "This node's id."},
	{Name: "log.dirs", Type: TypeString, Default: "", ReadOnly: true, Flag: "--data-dir", Doc: "The directories of partition data.",
		Note: "Partitions live in --data-dir/logs."},
	{Name: "listeners", Type: TypeString, Default: "PLAINTEXT://127.0.0.1:9092", ReadOnly: true, Flag: "--listen", Doc: "The Kafka listeners, NAME://host:port,...",
		Note: "--listen host:port is the shorthand for PLAINTEXT://host:port: give one or the other (both, different, refuse to start). The protocol of each listener comes from listener.security.protocol.map (docs/security.md); a listener named in controller.listener.names is the Raft listener, not a client listener. See Listeners above."},
	{Name: "advertised.listeners", Type: TypeString, Default: "", ReadOnly: true, Flag: "--advertised", Doc: "The listeners put in metadata responses, NAME://host:port,...",
		Note: "A listener left out is advertised at its own address, which must then be routable (not 0.0.0.0 or ::); --advertised host:port is the shorthand for the first listener's entry (both, different, refuse to start). An empty host advertises the machine's host name. Clients get the endpoints of the listener their request arrived on."},
	{Name: "controller.listener.names", Type: TypeString, Default: "", ReadOnly: true, Doc: "The listeners of the KRaft controller, comma-separated.",
		Note: "The listener of listeners it names (a Kafka KRaft properties file's CONTROLLER://:9093) is the Raft listener: its address is --raft-listen's (both, different, refuse to start); it is never served to clients nor advertised, and its protocol is PLAINTEXT unless petrel.raft.security.protocol is set."},
	{Name: MetricsListenerProperty, Type: TypeString, Default: "", ReadOnly: true, Flag: "--metrics-listen", Doc: "Petrel's own: the address of the node's HTTP listener of /metrics, /healthz and /readyz, host:port; empty when it serves none.",
		Note: "Unset, --metrics-listen is 127.0.0.1 on port 9644 + node id. DescribeConfigs on the broker reports the bound address, which is how petrel top finds every broker's metrics endpoint."},
	{Name: "broker.rack", Type: TypeString, Default: "", ReadOnly: true, Doc: "The rack of this broker.",
		Note: "Sent in the broker's registration and shown by Metadata and cluster describe; replica placement spreads a partition's replicas over racks (Kafka's rack-aware rule), and replica.selector.class uses it to send consumers to a replica in their rack."},
	{Name: "cordoned.log.dirs", Type: TypeList, Default: "", Flag: "petrel cluster cordon",
		Doc:  "The log directories of this broker that get no new replicas (KIP-1066); * cordons every one. Replicas already on them stay.",
		Note: "Petrel has one log directory per broker, so any value cordons the whole broker. The controller reads it from the metadata log: set it per broker with petrel cluster cordon N, or IncrementalAlterConfigs on broker N (dynamic, per broker). Topic creation, added partitions and auto-created topics place no replica on a cordoned broker (docs/operations.md)."},
	{Name: "max.request.partition.size.limit", Type: TypeInt, Default: "2000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The maximum number of partitions can be served in one request (DescribeTopicPartitions' ResponsePartitionLimit is capped at it)."},
	{Name: "auto.create.topics.enable", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "Create an unknown topic when a Metadata request that allows it names it, with num.partitions and default.replication.factor."},
	{Name: "num.partitions", Type: TypeInt, Default: "1", ReadOnly: true, Validator: atLeast(1), Doc: "The partitions of a topic created with -1 partitions or auto-created."},
	{Name: "default.replication.factor", Type: TypeShortOrInt, Default: "1", ReadOnly: true, Doc: "The replication factor of a topic created with -1 or auto-created."},
	{Name: "delete.topic.enable", Type: TypeBoolean, Default: "true", ReadOnly: true, Doc: "Whether DeleteTopics may delete topics; false refuses it with TOPIC_DELETION_DISABLED."},
	{Name: "socket.request.max.bytes", Type: TypeInt, Default: "104857600", ReadOnly: true, Validator: atLeast(1), Doc: "The largest request a connection may send."},
	{Name: "queued.max.request.bytes", Type: TypeLong, Default: "-1", ReadOnly: true,
		Doc:  "The bytes of requests queued before the broker stops reading more; -1 is no limit.",
		Note: "Bytes of complete requests being decoded and handled at once across connections (kmsg can allocate ~32x a hostile frame while decoding); -1 means socket.request.max.bytes; a connection still receiving its request holds none."},
	{Name: "connections.max.idle.ms", Type: TypeLong, Default: "600000", ReadOnly: true, Doc: "Idle connections are closed after this long, in milliseconds.",
		Note: "A connection that has read no request and owes no response for this long is closed, on every listener, authenticated or not; the same time bounds a TLS handshake, a request stalled half-read and a response write that makes no progress."},
	{Name: "max.connections", Type: TypeInt, Default: "2147483647", Validator: atLeast(0),
		Doc:  "The most connections the broker holds at once, over all listeners (listener.name.<listener>.max.connections limits one listener); at the limit, new connections wait until one closes. The inter-broker listener is exempt when there are other listeners.",
		Note: "As Kafka, accepting stops at the limit (later clients wait in the accept queue) and resumes when a connection closes; inter-broker connections count but are never held back. Unlike Kafka, no connection of another listener is closed to make room for one. Dynamic (per broker or as the cluster default); the per-listener limit is read at start."},
	{Name: "max.connections.per.ip", Type: TypeInt, Default: "2147483647", Validator: atLeast(0),
		Doc:  "The most connections from one IP address, over all listeners; a connection past it is closed as soon as it is accepted.",
		Note: "0 needs max.connections.per.ip.overrides (as Kafka). Dynamic; a change applies to new connections."},
	{Name: "max.connections.per.ip.overrides", Type: TypeString, Default: "", Validator: connectionOverridesValidator{},
		Doc:  "Per-address limits that override max.connections.per.ip, as host:count,... with an IP address or a host name.",
		Note: "A host name is resolved (all its addresses) when the value is first used; one that does not resolve is ignored with a warning. Dynamic."},
	{Name: "log.cleaner.enable", Type: TypeBoolean, Default: "true", ReadOnly: true, Doc: "Whether the log cleaner runs (compacted topics)."},
	{Name: "log.cleaner.threads", Type: TypeInt, Default: "1", Validator: atLeast(0), Doc: "The cleaner threads: each cleans one partition at a time.",
		Note: "Dynamic (cluster-wide, as Kafka): more threads start at once; a surplus thread stops after its pass."},
	{Name: "log.cleaner.dedupe.buffer.size", Type: TypeLong, Default: "134217728",
		Doc:  "The memory of the cleaners' offset maps, shared by the threads; a dirty section with more keys is cleaned in several passes.",
		Note: "Counted as Kafka does, 24 bytes a key at load factor 0.9; Go's map costs more per key than that. Dynamic: read at each pass."},
	{Name: "log.cleaner.io.max.bytes.per.second", Type: TypeDouble, Default: "1.7976931348623157E308",
		Doc: "The cleaners' I/O throttle: bytes read plus written per second, all threads together.", Note: "Dynamic: read at each pass."},
	{Name: "log.cleaner.backoff.ms", Type: TypeLong, Default: "15000", Validator: atLeast(0), Doc: "How long a cleaner thread sleeps when no log needs cleaning, in milliseconds.", Note: "Dynamic: read at each sleep."},
	{Name: "log.retention.check.interval.ms", Type: TypeLong, Default: "300000", ReadOnly: true, Validator: atLeast(1), Doc: "How often retention runs, in milliseconds."},
	{Name: "log.flush.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Validator: atLeast(0), Doc: "How often recovery points are checkpointed, in milliseconds.",
		Note: "Accepted and reported, not used: replica.high.watermark.checkpoint.interval.ms paces all three offset checkpoints."},
	{Name: "log.flush.start.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Validator: atLeast(0), Doc: "How often log start offsets are checkpointed, in milliseconds.",
		Note: "Accepted and reported, not used: replica.high.watermark.checkpoint.interval.ms paces all three offset checkpoints."},
	{Name: "replica.high.watermark.checkpoint.interval.ms", Type: TypeLong, Default: "5000", ReadOnly: true, Doc: "How often high watermarks are checkpointed, in milliseconds.",
		Note: "Petrel writes all three offset checkpoints (high watermarks, recovery points, log start offsets) at this interval, each only when one of its offsets moved since the last write."},
	{Name: ReplicaSelectorClassProperty, Type: TypeString, Default: "", ReadOnly: true, Validator: oneOf("", RackAwareReplicaSelector),
		Doc:  "The replica selector that tells consumers which replica to fetch from (KIP-392); empty: the leader only.",
		Note: "org.apache.kafka.common.replica.RackAwareReplicaSelector sends a consumer with client.rack to an in-sync replica in its rack (the leader when it is there); no other selector is built in."},
	{Name: "replica.lag.time.max.ms", Type: TypeLong, Default: "30000", ReadOnly: true,
		Doc: "A follower whose log end has not caught up with the leader's for this long leaves the ISR, in milliseconds (the leader checks every half of it)."},
	{Name: "replica.fetch.wait.max.ms", Type: TypeInt, Default: "500", ReadOnly: true, Doc: "The longest a follower's fetch waits for data at the leader, in milliseconds."},
	{Name: "replica.fetch.max.bytes", Type: TypeInt, Default: "1048576", ReadOnly: true, Validator: atLeast(0), Doc: "The bytes a follower fetches per partition."},
	{Name: "replica.fetch.response.max.bytes", Type: TypeInt, Default: "10485760", ReadOnly: true, Validator: atLeast(0),
		Doc: "The bytes a follower's fetch asks for, all its partitions together; a first record batch larger than this is still answered, so that the follower makes progress."},
	{Name: "replica.fetch.backoff.ms", Type: TypeInt, Default: "1000", ReadOnly: true, Validator: atLeast(0),
		Doc:  "How long a follower leaves a partition out of its fetches after the leader answered it with an error, in milliseconds.",
		Note: "The partition joins the fetch again at once when its leader epoch moves (new metadata); the other partitions keep fetching. 0 is taken as 1 ms. An error of a leader behind the follower's metadata (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_LEADER_EPOCH: a topic just created, a replica not opened yet) is retried after 25 ms, doubling at each error in a row up to this backoff, so that the first acks=all writes to a new topic do not wait a second."},
	{Name: "max.incremental.fetch.session.cache.slots", Type: TypeInt, Default: "1000", ReadOnly: true, Validator: atLeast(0),
		Doc:  "The most incremental fetch sessions (KIP-227) the broker keeps.",
		Note: "The sessions together also hold at most 2,097,152 partitions (Petrel's bound): a session that would pass it is not created, or is closed with FETCH_SESSION_ID_NOT_FOUND."},
	{Name: "min.incremental.fetch.session.eviction.ms", Type: TypeInt, Default: "120000", ReadOnly: true, Validator: atLeast(0),
		Doc: "The minimum time a fetch session is unused (or, for eviction by a larger session, has existed) before another may evict it, in milliseconds."},
	{Name: "auto.leader.rebalance.enable", Type: TypeBoolean, Default: "true", ReadOnly: true,
		Doc: "Whether the controller moves leadership back to preferred replicas on its own, every leader.imbalance.check.interval.seconds."},
	{Name: "leader.imbalance.check.interval.seconds", Type: TypeLong, Default: "300", ReadOnly: true, Validator: atLeast(1),
		Doc: "How often the controller checks the leader balance, in seconds."},
	{Name: "leader.imbalance.per.broker.percentage", Type: TypeInt, Default: "10", ReadOnly: true,
		Doc:  "The share of a broker's preferred partitions that it may not lead before the controller rebalances them, in percent.",
		Note: "Honoured per broker, as the ZooKeeper-era controller did; Kafka's KRaft controller ignores it and rebalances any imbalance."},
	{Name: "broker.heartbeat.interval.ms", Type: TypeInt, Default: "2000", ReadOnly: true,
		Doc: "How often a registered, unfenced broker heartbeats to the controller, in milliseconds (every 200 ms while unregistered or fenced, and at once when a fenced broker has caught up with its registration)."},
	{Name: "broker.session.timeout.ms", Type: TypeInt, Default: "9000", ReadOnly: true,
		Doc: "The controller fences a broker whose last heartbeat is older than this, in milliseconds."},
	{Name: "controller.quorum.fetch.timeout.ms", Type: TypeInt, Default: "500", ReadOnly: true, Validator: atLeast(5),
		Doc: "A voter that has heard nothing from the controller (the Raft leader) for this long starts an election; a controller that has heard from no majority for this long steps down, in milliseconds.",
		Note: "hashicorp/raft's HeartbeatTimeout (a follower waits a random 1-2 times it) and LeaderLeaseTimeout. Kafka's default is 2000; Petrel's 500 is tuned for loopback and LAN so that a crashed controller is replaced in about a second. " +
			"On machines where processes wait for CPU (Raft heartbeat round trips near 500 ms) the controller steps down and is re-elected repeatedly; " +
			"2000 rides that out at the price of slower controller failover (a voter waits 2-4 s before an election): docs/benchmarks.md."},
	{Name: "controller.quorum.election.timeout.ms", Type: TypeInt, Default: "500", ReadOnly: true, Validator: atLeast(5),
		Doc:  "How long a candidate waits for the votes of a majority before it starts a new election, in milliseconds.",
		Note: "hashicorp/raft's ElectionTimeout (a random 1-2 times it; never below controller.quorum.fetch.timeout.ms, which hashicorp/raft requires). Kafka's default is 1000."},
	{Name: "controller.quorum.request.timeout.ms", Type: TypeInt, Default: "2000", ReadOnly: true, Validator: atLeast(1),
		Doc:  "How long a Raft request to another voter may take before it fails, in milliseconds.",
		Note: "hashicorp/raft's network transport timeout (snapshot installs get it per 256 KiB); replication is never pipelined, so every Raft wait is bounded by it. A stopping node closes its Raft connections at once."},
	{Name: "metadata.log.max.record.bytes.between.snapshots", Type: TypeLong, Default: "20971520", ReadOnly: true, Validator: atLeast(1),
		Doc:  "A metadata snapshot is taken once this many bytes of metadata records were applied since the last one, so that a restarted node replays at most about this much of the metadata log.",
		Note: "Besides hashicorp/raft's own trigger (8192 entries, checked every 2 minutes)."},
	{Name: "metadata.log.max.snapshot.interval.ms", Type: TypeLong, Default: "3600000", ReadOnly: true, Validator: atLeast(0),
		Doc: "A metadata snapshot is taken when this long has passed since the last one and records were applied since, in milliseconds; 0 disables the time-based snapshots."},
	{Name: "log.retention.hours", Type: TypeInt, Default: "168", ReadOnly: true, Doc: "Retention in hours, used when log.retention.ms and log.retention.minutes are unset."},
	{Name: "log.retention.minutes", Type: TypeInt, Default: "", ReadOnly: true, Doc: "Retention in minutes, used when log.retention.ms is unset."},
	{Name: "log.roll.hours", Type: TypeInt, Default: "168", ReadOnly: true, Validator: atLeast(1), Doc: "Segment roll time in hours, used when log.roll.ms is unset."},
	{Name: "producer.id.expiration.ms", Type: TypeInt, Default: "86400000", Validator: atLeast(1), Doc: "A partition forgets an idempotent producer whose last batch is this old (KIP-854)."},
	{Name: "offsets.topic.num.partitions", Type: TypeInt, Default: "50", Validator: atLeast(1), ReadOnly: true, Doc: "Partitions of __consumer_offsets, fixed when it is created."},
	{Name: "offsets.topic.replication.factor", Type: TypeShortOrInt, Default: "3", Validator: atLeast(1), ReadOnly: true, Doc: "Replication factor of __consumer_offsets; it is not created while fewer brokers are unfenced. Unset, it is min(3, number of --voters), 1 without --voters."},
	{Name: "offsets.topic.segment.bytes", Type: TypeInt, Default: "104857600", Validator: atLeast(1), ReadOnly: true, Doc: "Segment size of __consumer_offsets."},
	{Name: "offsets.load.buffer.size", Type: TypeInt, Default: "5242880", Validator: atLeast(1), ReadOnly: true, Doc: "Bytes read at a time while loading a __consumer_offsets partition."},
	{Name: "offsets.commit.timeout.ms", Type: TypeInt, Default: "5000", Validator: atLeast(1), ReadOnly: true, Doc: "A coordinator write not replicated by then gets COORDINATOR_NOT_AVAILABLE."},
	{Name: "offsets.retention.minutes", Type: TypeInt, Default: "10080", Validator: atLeast(1), ReadOnly: true, Doc: "Committed offsets of an empty group expire this long after it became empty."},
	{Name: "offsets.retention.check.interval.ms", Type: TypeLong, Default: "600000", Validator: atLeast(1), ReadOnly: true, Doc: "How often expired offsets are removed."},
	{Name: "offset.metadata.max.bytes", Type: TypeInt, Default: "4096", ReadOnly: true, Doc: "Longest metadata string of a committed offset."},
	{Name: "group.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000", ReadOnly: true, Doc: "Wait for more members before the first rebalance of an empty group."},
	{Name: "group.min.session.timeout.ms", Type: TypeInt, Default: "6000", ReadOnly: true, Doc: "Smallest session timeout a member may ask for."},
	{Name: "group.max.session.timeout.ms", Type: TypeInt, Default: "1800000", ReadOnly: true, Doc: "Largest session timeout a member may ask for."},
	{Name: "group.max.size", Type: TypeInt, Default: "2147483647", Validator: atLeast(1), ReadOnly: true, Doc: "Largest number of members of a group."},
	{Name: "group.coordinator.rebalance.protocols", Type: TypeList, Default: "classic,consumer", ReadOnly: true, Validator: listOf("classic", "consumer", "share", "streams"),
		Limit: &Limit{values: []string{"classic", "consumer", "share"}, why: "streams groups are not implemented", warnOnly: true},
		Doc:   "The list of enabled rebalance protocols; classic cannot be disabled.",
		Note:  "Without consumer, ConsumerGroupHeartbeat and ConsumerGroupDescribe are not advertised in ApiVersions and are answered UNSUPPORTED_VERSION. Kafka 4.2's default also lists streams (KIP-1071), which Petrel does not implement: it is accepted with a warning and not acted on. Share groups (KIP-932) are served whether or not share is listed, as Kafka 4.2 enables them with the share.version feature."},
	{Name: "group.consumer.session.timeout.ms", Type: TypeInt, Default: "45000", ReadOnly: true, Validator: atLeast(1),
		Doc:  "The timeout to detect client failures when using the consumer group protocol, in milliseconds.",
		Note: "A group's consumer.session.timeout.ms (GROUP config resource) overrides it; see Group configs below."},
	{Name: "group.consumer.min.session.timeout.ms", Type: TypeInt, Default: "45000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The minimum allowed session timeout for registered consumers: the smallest consumer.session.timeout.ms a group may be given."},
	{Name: "group.consumer.max.session.timeout.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The maximum allowed session timeout for registered consumers: the largest consumer.session.timeout.ms a group may be given."},
	{Name: "group.consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", ReadOnly: true, Validator: atLeast(1),
		Doc:  "The heartbeat interval given to the members of a consumer group, in milliseconds.",
		Note: "A group's consumer.heartbeat.interval.ms (GROUP config resource) overrides it; see Group configs below."},
	{Name: "group.consumer.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The minimum heartbeat interval for registered consumers: the smallest consumer.heartbeat.interval.ms a group may be given."},
	{Name: "group.consumer.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", ReadOnly: true, Validator: atLeast(1),
		Doc: "The maximum heartbeat interval for registered consumers: the largest consumer.heartbeat.interval.ms a group may be given."},
	{Name: "group.consumer.max.size", Type: TypeInt, Default: "2147483647", ReadOnly: true, Validator: atLeast(1),
		Doc: "The maximum number of consumers that a single consumer group can accommodate. This value will only impact groups under the CONSUMER group protocol; group.max.size bounds CLASSIC groups. A member joining past it gets GROUP_MAX_SIZE_REACHED."},
	{Name: "group.consumer.assignors", Type: TypeList, Default: "uniform,range", ReadOnly: true, Validator: assignorList{},
		Doc:  "The server side assignors as a list of either names for builtin assignors or full class names for customer assignors. The first one in the list is considered as the default assignor to be used in the case where the consumer does not specify an assignor. The supported builtin assignors are: uniform, range.",
		Note: "Only the built-in assignors: uniform and range, by name or by Kafka's class names org.apache.kafka.coordinator.group.assignor.UniformAssignor and RangeAssignor; any other class name is refused at start."},
	{Name: "group.consumer.migration.policy", Type: TypeString, Default: "bidirectional", ReadOnly: true, Validator: oneOfFold("disabled", "downgrade", "upgrade", "bidirectional"),
		Doc:  "The config that enables converting the non-empty classic group using the consumer embedded protocol to the non-empty consumer group using the consumer group protocol and vice versa; conversions of empty groups in both directions are always enabled regardless of this policy.",
		Note: "As Kafka; see [groups.md](groups.md#migrating-a-classic-group)."},
	{Name: "leader.replication.throttled.rate", Type: TypeLong, Default: maxLong, Validator: atLeast(0),
		Doc:  "The bytes per second a leader sends to the throttled replicas (leader.replication.throttled.replicas) that are outside the ISR (KIP-73).",
		Note: "Read from the metadata image (per-broker, then cluster-default dynamic config) at every fetch, then this property."},
	{Name: "follower.replication.throttled.rate", Type: TypeLong, Default: maxLong, Validator: atLeast(0),
		Doc:  "The bytes per second a follower fetches for its throttled replicas (follower.replication.throttled.replicas) that are outside the ISR (KIP-73).",
		Note: "Read from the metadata image (per-broker, then cluster-default dynamic config) at every fetch, then this property."},
	{Name: "transaction.state.log.num.partitions", Type: TypeInt, Default: "50", Validator: atLeast(1), ReadOnly: true, Doc: "Partitions of __transaction_state, fixed when it is created."},
	{Name: "transaction.state.log.replication.factor", Type: TypeShortOrInt, Default: "3", Validator: atLeast(1), ReadOnly: true, Doc: "Replication factor of __transaction_state; it is not created while fewer brokers are unfenced. Unset, it is min(3, number of --voters), 1 without --voters."},
	{Name: "transaction.state.log.min.isr", Type: TypeInt, Default: "2", Validator: atLeast(1), ReadOnly: true, Doc: "min.insync.replicas of __transaction_state (capped at its replication factor)."},
	{Name: "transaction.state.log.segment.bytes", Type: TypeInt, Default: "104857600", Validator: atLeast(1), ReadOnly: true, Doc: "Segment size of __transaction_state."},
	{Name: "transaction.max.timeout.ms", Type: TypeInt, Default: "900000", Validator: atLeast(1), ReadOnly: true, Doc: "Longest transaction.timeout.ms a producer may ask for; longer gets INVALID_TRANSACTION_TIMEOUT."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: TypeInt, Default: "10000", Validator: atLeast(1), ReadOnly: true, Doc: "How often the transaction coordinator aborts transactions open past their timeout."},
	{Name: "transactional.id.expiration.ms", Type: TypeInt, Default: "604800000", Validator: atLeast(1), ReadOnly: true, Doc: "A transactional id with no transaction activity for this long (in Empty, CompleteCommit or CompleteAbort) is removed: a tombstone in __transaction_state."},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: TypeInt, Default: "3600000", Validator: atLeast(1), ReadOnly: true, Doc: "How often the transaction coordinator removes expired transactional ids."},
	{Name: "transaction.partition.verification.enable", Type: TypeBoolean, Default: "true", Doc: "KIP-890: a partition leader verifies with the transaction coordinator that the first transactional batch of a transaction in the partition belongs to an ongoing transaction that added it (INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from produce v11, when not)."},
	{Name: "petrel.max.decompressed.batch.bytes", Type: TypeInt, Default: "67108864", Validator: atLeast(1), ReadOnly: true, Doc: "Petrel's own: the most a produced compressed batch may decompress to while its records are validated; a batch past it is refused with MESSAGE_TOO_LARGE without decompressing the rest."},
	{Name: "petrel.log.open.segment.files.max", Type: TypeInt, Default: "-1", Validator: atLeast(-1), ReadOnly: true, Doc: "Petrel's own: the most segment files (.log, .index and .timeindex descriptors, three per segment, with up to two memory maps) kept open across all replicas; segments are opened on use and the least recently used closed beyond it, never one a read is using. -1 takes half of the process's open-file limit (RLIMIT_NOFILE), with no more segments than a quarter of vm.max_map_count (two index maps each); below 3 keeps one segment open."},
	{Name: "petrel.replica.verification.enable", Type: TypeBoolean, Default: "true", ReadOnly: true, Doc: "Petrel's own: each follower compares, in the background, the digests of its committed log (batch CRCs computed over the bytes on disk, base offsets, leader epochs) with its leader's over the ReplicaDigests API; a divergence counts in petrel_replica_divergence_total, is logged at ERROR and listed by /readyz (docs/verify.md). Compacted topics are skipped."},
	{Name: "petrel.replica.verification.interval.ms", Type: TypeLong, Default: "300000", ReadOnly: true, Validator: atLeast(1), Doc: "Petrel's own: the pause between two replica verification passes, in milliseconds; each pass compares every followed partition from its log start offset to its high watermark."},
	{Name: "petrel.replica.verification.bytes.per.second", Type: TypeLong, Default: "4194304", ReadOnly: true, Validator: atLeast(1), Doc: "Petrel's own: the rate at which replica verification reads committed log on this follower and asks its leaders to read theirs, in bytes per second (each side reads as much)."},
	{Name: "petrel.metrics.per.partition.enable", Type: TypeBoolean, Default: "true", ReadOnly: true, Doc: "Petrel's own: serve per-topic and per-partition series on /metrics (topic labels of BrokerTopicMetrics, the Log metrics, kafka_consumergroup_lag per partition); false keeps only broker-wide series, for clusters with many partitions."},
	{Name: MinFreeBytesProperty, Type: TypeLong, Default: "-1", Validator: atLeast(-1), ReadOnly: true, Doc: "Petrel's own: the free-space floor of the log directory's file system. While the bytes available to the broker (statfs f_bavail × f_bsize, read at most every 100 ms) are below it, Produce is refused with the retriable NOT_ENOUGH_REPLICAS (nothing written; every client retries it, unlike KAFKA_STORAGE_ERROR; the error message names this property), before the disk is actually full and the log directory goes offline. Replication, coordinator writes and transaction markers still append. -1: min(256 MiB, 1 % of the file system's size, f_blocks × f_bsize); 0: off; otherwise a number of bytes."},
	{Name: "authorizer.class.name", Type: TypeString, Default: "", ReadOnly: true,
		Validator: oneOf("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer"),
		Doc:       "The authorizer: empty allows every request; set, every request is checked against the ACLs (docs/security.md).",
		Note:      "Both of Kafka's class names select Petrel's one authorizer, KRaft's StandardAuthorizer rules over ACLs in the metadata log."},
	{Name: "super.users", Type: TypeString, Default: "", ReadOnly: true,
		Doc: "Principals allowed every operation on every resource, semicolon-separated (User:admin;User:broker)."},
	{Name: "allow.everyone.if.no.acl.found", Type: TypeBoolean, Default: "false", ReadOnly: true,
		Doc: "Whether a request on a resource that no ACL matches is allowed."},
	{Name: "quota.window.num", Type: TypeInt, Default: "11", ReadOnly: true, Validator: atLeast(1),
		Doc: "The number of samples kept to measure client quota rates."},
	{Name: "quota.window.size.seconds", Type: TypeInt, Default: "1", ReadOnly: true, Validator: atLeast(1),
		Doc: "The length of each client quota sample, in seconds (and the longest throttle)."},
}

// TypeShortOrInt reports replication factors as INT, as Kafka does.
const TypeShortOrInt = TypeInt

var (
	topicByName  = indexConfigDefs(TopicDefs)
	brokerByName = indexConfigDefs(append(append([]Def{}, BrokerDefs...), BrokerSynonymDefs()...))
)

// TopicDef returns the definition of topic config name.
func TopicDef(name string) (Def, bool) {
	d, ok := topicByName[name]
	return d, ok
}

// BrokerDef returns the definition of broker property name: a row of BrokerDefs or a
// topic config's broker synonym. Listener-prefixed names are ListenerPropertyDef's.
func BrokerDef(name string) (Def, bool) {
	d, ok := brokerByName[name]
	return d, ok
}

// BrokerNames returns the names BrokerDef knows, in no particular order.
func BrokerNames() []string {
	names := make([]string, 0, len(brokerByName))
	for name := range brokerByName {
		names = append(names, name)
	}
	return names
}

// ListenerFlagProperty reports the properties that a flag is the shorthand of but that
// may be given themselves (listeners, advertised.listeners).
func ListenerFlagProperty(name string) bool {
	return name == "listeners" || name == "advertised.listeners"
}

func indexConfigDefs(defs []Def) map[string]Def {
	m := make(map[string]Def, len(defs))
	for _, d := range defs {
		m[d.Name] = d
	}
	return m
}

// BrokerSynonymDefs turns each topic config into its broker property, with the topic
// config's validator: a broker default Kafka could not turn into a topic config stops
// Kafka at start too. The exception is log.retention.ms, where Kafka reads any negative
// value as -1 (unlimited).
func BrokerSynonymDefs() []Def {
	out := make([]Def, 0, len(TopicDefs))
	for _, d := range TopicDefs {
		if d.BrokerSynonym == "" {
			continue // a topic-only config (the replication throttles)
		}
		b := d
		b.Name, b.BrokerSynonym = d.BrokerSynonym, ""
		if b.Name == "log.retention.ms" {
			b.Validator = nil
		}
		out = append(out, b)
	}
	return out
}
