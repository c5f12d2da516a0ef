package shareleader

import "github.com/petrel-broker/petrel/share"

// GroupConfig is what the share-partition manager reads of one share group's
// settings: the group's own GROUP configs (share.*) over the broker's group.share.*
// properties, read when a share partition is loaded or a fetch starts.
type GroupConfig struct {
	// Partition is share.record.lock.duration.ms, share.delivery.count.limit and
	// share.partition.max.record.locks (group.share.* for the broker's defaults).
	Partition share.Config
	// AutoOffsetReset is share.auto.offset.reset: "latest" (Kafka's default),
	// "earliest" or "by_duration:<ISO-8601 duration>", where a share partition with
	// no durable state starts.
	AutoOffsetReset string
	// ReadCommitted is share.isolation.level read_committed (default
	// read_uncommitted): records of open or aborted transactions are not acquired.
	ReadCommitted bool
	// AcquireMode is share.acquire.mode (KIP-1206): batch_optimized (default) or
	// record_limit.
	AcquireMode share.AcquireMode
}
