package config

// Tiered storage (KIP-405, issue P23). The broker properties are Kafka 4.x's
// RemoteLogManagerConfig; the S3 ones are those of Aiven's tiered-storage-for-apache-kafka
// plugin (rsm.config.*), so that a server.properties written for it carries over. The
// topic configs are in TopicDefs (defs.go). The remote log manager copies closed
// segments, applies two-tier retention and reads them back.

// The S3 properties, as the broker hands them to the tiered package's S3Config.
const (
	RemoteS3EndpointURLProperty      = "rsm.config.storage.s3.endpoint.url"
	RemoteS3BucketProperty           = "rsm.config.storage.s3.bucket.name"
	RemoteS3RegionProperty           = "rsm.config.storage.s3.region"
	RemoteS3PathStyleProperty        = "rsm.config.storage.s3.path.style.access.enabled"
	RemoteAWSAccessKeyIDProperty     = "rsm.config.storage.aws.access.key.id"
	RemoteAWSSecretAccessKeyProperty = "rsm.config.storage.aws.secret.access.key"
	RemoteKeyPrefixProperty          = "rsm.config.key.prefix"
	RemoteChunkSizeProperty          = "rsm.config.chunk.size"
	RemoteChunkCacheSizeProperty     = "rsm.config.fetch.chunk.cache.size"
	RemoteChunkPrefetchProperty      = "rsm.config.fetch.chunk.cache.prefetch.max.size"
)

// noteTieredS3 marks the S3 properties the remote log manager uses.
const noteTieredS3 = "Used by the remote log manager (remote.log.storage.system.enable=true)."

var tieredConfigDefs = []Def{
	{Name: "remote.log.storage.system.enable", Type: TypeBoolean, Default: "false", ReadOnly: true,
		Doc:  "Whether to enable tiered storage functionality in a broker or not. When it is true, the broker starts all the services required for tiered storage.",
		Note: "true starts the remote log manager, which copies the closed segments of the partitions this broker leads whose topic has remote.storage.enable=true, over the rsm.config.* S3 settings: the broker refuses to start when they are incomplete. It also applies remote retention (retention.*, DeleteRecords) to the remote segments of the partitions it leads, and serves fetches below the local log start from remote storage. On the controller it allows remote.storage.enable on topics."},
	{Name: "remote.log.manager.task.interval.ms", Type: TypeLong, Default: "30000", ReadOnly: true, Validator: atLeast(1),
		Doc:  "Interval at which the remote log manager runs the scheduled tasks like copy segments and clean up remote log segments, in milliseconds.",
		Note: "Acted on: how often each leader copies its partitions' closed segments and applies remote retention; a failed copy is retried after a backoff from 500 ms doubling to 30 s (Kafka's remote.log.manager.task.retry.backoff defaults)."},
	{Name: "remote.log.manager.copy.max.bytes.per.second", Type: TypeLong, Default: maxLong, ReadOnly: true, Validator: atLeast(1),
		Doc:  "The maximum number of bytes that can be copied from local storage to remote storage per second.",
		Note: "Acted on: the broker's copies are paced to this rate, one segment at a time."},
	{Name: "remote.log.reader.threads", Type: TypeInt, Default: "10", ReadOnly: true, Validator: atLeast(1),
		Doc:  "Size of the thread pool that is allocated for handling remote log reads.",
		Note: "Acted on: the goroutines that read consumers' fetches below the local log start from remote storage (100 reads may wait for one, Kafka's remote.log.reader.max.pending.tasks default), and the object store downloads of chunks and indexes that may run at once (read-ahead takes at most half)."},
	{Name: "remote.fetch.max.wait.ms", Type: TypeInt, Default: "500", ReadOnly: true, Validator: atLeast(1),
		Doc:  "The maximum amount of time the server will wait before answering the remote fetch request.",
		Note: "Acted on: a remote read slower than this answers its partition with no records; the object store downloads it started run to their end into the chunk and index caches, where the next fetch finds them; read at start."},
	{Name: "remote.log.index.file.cache.total.size.bytes", Type: TypeLong, Default: "1073741824", ReadOnly: true, Validator: atLeast(1),
		Doc:  "The total size of the space allocated to store index files fetched from remote storage in the local storage.",
		Note: "Acted on: remote segments' indexes are cached in memory within this bound, least recently used out; read at start."},
	{Name: RemoteChunkSizeProperty, Type: TypeInt, Default: "4194304", ReadOnly: true, Validator: atLeast(1),
		Doc:  "Aiven's plugin: the size of the chunks remote segments' logs are read and cached in.",
		Note: "Acted on: each remote log read fetches whole chunks of this size with ranged GETs (Petrel's objects are not chunked: only the reads are)."},
	{Name: RemoteChunkCacheSizeProperty, Type: TypeLong, Default: "268435456", ReadOnly: true, Validator: atLeast(0),
		Doc:  "Aiven's plugin: the bytes of remote log chunks the disk cache keeps.",
		Note: "Acted on: chunks are kept in <data-dir>/remote-cache, least recently used out, emptied at start; 0 caches nothing."},
	{Name: RemoteChunkPrefetchProperty, Type: TypeLong, Default: "4194304", ReadOnly: true, Validator: atLeast(0),
		Doc:  "Aiven's plugin: how many bytes after a remote read to read ahead into the chunk cache.",
		Note: "Acted on: after a remote read the next chunks of the segment, this many bytes' worth, are fetched in the background; 0: no read-ahead."},
	{Name: RemoteS3EndpointURLProperty, Type: TypeString, Default: "", ReadOnly: true,
		Doc: "Aiven's plugin: the S3 endpoint, an http or https URL (an S3-compatible server); unset, AWS S3 in rsm.config.storage.s3.region.", Note: noteTieredS3},
	{Name: RemoteS3BucketProperty, Type: TypeString, Default: "", ReadOnly: true,
		Doc: "Aiven's plugin: the bucket that holds the remote segments.", Note: noteTieredS3},
	{Name: RemoteS3RegionProperty, Type: TypeString, Default: "", ReadOnly: true,
		Doc: "Aiven's plugin: the bucket's region, part of every request's signature (us-east-1 for most S3-compatible servers).", Note: noteTieredS3},
	{Name: RemoteS3PathStyleProperty, Type: TypeBoolean, Default: "false", ReadOnly: true,
		Doc: "Aiven's plugin: address the bucket in the URL path instead of the host name, as most S3-compatible servers need.", Note: noteTieredS3},
	{Name: RemoteAWSAccessKeyIDProperty, Type: TypePassword, Default: "", ReadOnly: true,
		Doc:  "Aiven's plugin: the access key id of the S3 credentials.",
		Note: "Unset together with the secret, the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables are used. " + noteTieredS3},
	{Name: RemoteAWSSecretAccessKeyProperty, Type: TypePassword, Default: "", ReadOnly: true,
		Doc: "Aiven's plugin: the secret access key of the S3 credentials.", Note: noteTieredS3},
	{Name: RemoteKeyPrefixProperty, Type: TypeString, Default: "", ReadOnly: true,
		Doc:  "Aiven's plugin: the prefix of every object key.",
		Note: "Objects are <prefix><topic>-<topicId>/<partition>/<20-digit start offset>-<segmentId>.<log|index|timeindex|snapshot|txnindex|leader-epoch-checkpoint>, Aiven's layout; the bytes are the segment files unchanged (no Aiven chunking, compression or manifest). " + noteTieredS3},
}

func init() {
	BrokerDefs = append(BrokerDefs, tieredConfigDefs...)
	for _, d := range tieredConfigDefs {
		brokerByName[d.Name] = d
	}
}
