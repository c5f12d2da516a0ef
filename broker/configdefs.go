package broker

import (
	"math"
	"strconv"
)

// ConfigType is Kafka's config type, as DescribeConfigs v3+ reports it.
type ConfigType int8

// Kafka's config types.
const (
	TypeBoolean ConfigType = 1
	TypeString  ConfigType = 2
	TypeInt     ConfigType = 3
	TypeLong    ConfigType = 5
	TypeList    ConfigType = 7
)

// configDef is one Kafka property with its default and documentation.
type configDef struct {
	Name    string
	Type    ConfigType
	Default string
	Doc     string
	// BrokerSynonym, on a topic config, is the broker property that supplies its default.
	BrokerSynonym string
	// ReadOnly marks broker properties that cannot change while running.
	ReadOnly bool
}

var maxLong = strconv.FormatInt(math.MaxInt64, 10)

// topicConfigDefs are the topic-level configs Petrel honours, with Kafka's defaults and
// broker synonyms. flush.messages defaults to 1 — every acknowledged append is fsynced
// first (see docs/durability.md) — where Kafka leaves flushing to the page cache; set
// log.flush.interval.messages=9223372036854775807 for Kafka's behaviour.
var topicConfigDefs = []configDef{
	{Name: "cleanup.policy", Type: TypeList, Default: "delete", BrokerSynonym: "log.cleanup.policy", Doc: "Retention policy for old segments: delete (compaction is not supported)."},
	{Name: "compression.type", Type: TypeString, Default: "producer", BrokerSynonym: "compression.type", Doc: "Final compression codec; producer keeps the producer's codec."},
	{Name: "file.delete.delay.ms", Type: TypeLong, Default: "60000", BrokerSynonym: "log.segment.delete.delay.ms", Doc: "Time to wait before deleting a file from the filesystem."},
	{Name: "flush.messages", Type: TypeLong, Default: "1", BrokerSynonym: "log.flush.interval.messages", Doc: "Fsync after this many messages. 1 (Petrel's default) fsyncs every append before it is acknowledged."},
	{Name: "flush.ms", Type: TypeLong, Default: maxLong, BrokerSynonym: "log.flush.interval.ms", Doc: "Fsync when the last flush is this old."},
	{Name: "index.interval.bytes", Type: TypeInt, Default: "4096", BrokerSynonym: "log.index.interval.bytes", Doc: "Bytes between offset index entries."},
	{Name: "max.message.bytes", Type: TypeInt, Default: "1048588", BrokerSynonym: "message.max.bytes", Doc: "Largest record batch size allowed."},
	{Name: "message.timestamp.type", Type: TypeString, Default: "CreateTime", BrokerSynonym: "log.message.timestamp.type", Doc: "CreateTime or LogAppendTime (only CreateTime is supported)."},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", BrokerSynonym: "min.insync.replicas", Doc: "Minimum ISR size for acks=all produce requests."},
	{Name: "retention.bytes", Type: TypeLong, Default: "-1", BrokerSynonym: "log.retention.bytes", Doc: "Largest log size before old segments are deleted; -1 is unlimited."},
	{Name: "retention.ms", Type: TypeLong, Default: "604800000", BrokerSynonym: "log.retention.ms", Doc: "Age after which old segments are deleted; -1 keeps them."},
	{Name: "segment.bytes", Type: TypeInt, Default: "1073741824", BrokerSynonym: "log.segment.bytes", Doc: "Segment file size."},
	{Name: "segment.index.bytes", Type: TypeInt, Default: "10485760", BrokerSynonym: "log.index.size.max.bytes", Doc: "Size of the offset and time index files."},
	{Name: "segment.ms", Type: TypeLong, Default: "604800000", BrokerSynonym: "log.roll.ms", Doc: "Time after which a segment rolls."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", BrokerSynonym: "unclean.leader.election.enable", Doc: "Allow replicas outside the ISR to become leader (data loss)."},
}

// brokerConfigDefs are the broker properties Petrel reads. The topic synonyms above are
// broker properties too.
var brokerConfigDefs = []configDef{
	{Name: "node.id", Type: TypeInt, Default: "0", ReadOnly: true, Doc: "This node's id (--node-id)."},
	{Name: "log.dirs", Type: TypeString, Default: "", ReadOnly: true, Doc: "Partition data directory (--data-dir/logs)."},
	{Name: "listeners", Type: TypeString, Default: "PLAINTEXT://127.0.0.1:9092", ReadOnly: true, Doc: "The Kafka listener (--listen)."},
	{Name: "advertised.listeners", Type: TypeString, Default: "", ReadOnly: true, Doc: "The address put in metadata responses (--advertised)."},
	{Name: "auto.create.topics.enable", Type: TypeBoolean, Default: "true", Doc: "Create unknown topics on metadata requests that allow it."},
	{Name: "num.partitions", Type: TypeInt, Default: "1", Doc: "Default partition count for new topics."},
	{Name: "default.replication.factor", Type: TypeShortOrInt, Default: "1", Doc: "Default replication factor for new topics."},
	{Name: "delete.topic.enable", Type: TypeBoolean, Default: "true", Doc: "Allow topic deletion."},
	{Name: "socket.request.max.bytes", Type: TypeInt, Default: "104857600", ReadOnly: true, Doc: "Largest request a connection may send."},
	{Name: "queued.max.request.bytes", Type: TypeLong, Default: "-1", ReadOnly: true, Doc: "Bytes of complete requests being decoded and handled at once across connections; -1 means socket.request.max.bytes."},
	{Name: "connections.max.idle.ms", Type: TypeLong, Default: "600000", ReadOnly: true, Doc: "Idle connections are closed after this long."},
	{Name: "log.retention.check.interval.ms", Type: TypeLong, Default: "300000", ReadOnly: true, Doc: "How often retention runs."},
	{Name: "log.flush.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Doc: "How often recovery points are checkpointed."},
	{Name: "log.flush.start.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", ReadOnly: true, Doc: "How often log start offsets are checkpointed."},
	{Name: "replica.high.watermark.checkpoint.interval.ms", Type: TypeLong, Default: "5000", ReadOnly: true, Doc: "How often high watermarks are checkpointed."},
	{Name: "replica.lag.time.max.ms", Type: TypeLong, Default: "30000", Doc: "A follower behind for this long leaves the ISR."},
	{Name: "replica.fetch.wait.max.ms", Type: TypeInt, Default: "500", Doc: "Follower fetch long-poll time."},
	{Name: "replica.fetch.max.bytes", Type: TypeInt, Default: "1048576", Doc: "Follower fetch bytes per partition."},
	{Name: "broker.heartbeat.interval.ms", Type: TypeInt, Default: "2000", ReadOnly: true, Doc: "Broker heartbeat interval."},
	{Name: "broker.session.timeout.ms", Type: TypeInt, Default: "9000", ReadOnly: true, Doc: "A broker without heartbeats for this long is fenced."},
	{Name: "log.retention.hours", Type: TypeInt, Default: "168", Doc: "Retention in hours, used when log.retention.ms and log.retention.minutes are unset."},
	{Name: "log.retention.minutes", Type: TypeInt, Default: "", Doc: "Retention in minutes, used when log.retention.ms is unset."},
	{Name: "petrel.max.decompressed.batch.bytes", Type: TypeInt, Default: "67108864", ReadOnly: true, Doc: "Petrel's own: the most a produced compressed batch may decompress to while its records are validated; a batch past it is refused with MESSAGE_TOO_LARGE without decompressing the rest."},
	{Name: "log.roll.hours", Type: TypeInt, Default: "168", Doc: "Segment roll time in hours, used when log.roll.ms is unset."},
}

// TypeShortOrInt reports replication factors as INT, as Kafka does.
const TypeShortOrInt = TypeInt

var (
	topicConfigByName  = indexConfigDefs(topicConfigDefs)
	brokerConfigByName = indexConfigDefs(append(append([]configDef{}, brokerConfigDefs...), brokerSynonymDefs()...))
)

func indexConfigDefs(defs []configDef) map[string]configDef {
	m := make(map[string]configDef, len(defs))
	for _, d := range defs {
		m[d.Name] = d
	}
	return m
}

// brokerSynonymDefs turns each topic config into its broker property.
func brokerSynonymDefs() []configDef {
	out := make([]configDef, 0, len(topicConfigDefs))
	for _, d := range topicConfigDefs {
		b := d
		b.Name, b.BrokerSynonym = d.BrokerSynonym, ""
		out = append(out, b)
	}
	return out
}
