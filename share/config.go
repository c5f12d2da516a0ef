package share

// Config holds the broker and group settings a share partition reads. Zero fields take
// Kafka's defaults (see withDefaults).
type Config struct {
	// RecordLockDurationMs is how long an acquisition lock lasts:
	// group.share.record.lock.duration.ms (30000), overridden per group by
	// share.record.lock.duration.ms.
	RecordLockDurationMs int64
	// DeliveryCountLimit is group.share.delivery.count.limit (5): a record delivered
	// that many times that is released or whose lock expires is Archived.
	DeliveryCountLimit int16
	// MaxRecordLocks is group.share.partition.max.record.locks (2000): no new records
	// are acquired while the in-flight window (SPEO - SPSO + 1) holds that many.
	MaxRecordLocks int64
}

// Kafka's defaults (GroupCoordinatorConfig / ShareGroupConfig).
const (
	DefaultRecordLockDurationMs = 30000
	DefaultDeliveryCountLimit   = 5
	DefaultMaxRecordLocks       = 2000
)

func (c Config) withDefaults() Config {
	if c.RecordLockDurationMs <= 0 {
		c.RecordLockDurationMs = DefaultRecordLockDurationMs
	}
	if c.DeliveryCountLimit <= 0 {
		c.DeliveryCountLimit = DefaultDeliveryCountLimit
	}
	if c.MaxRecordLocks <= 0 {
		c.MaxRecordLocks = DefaultMaxRecordLocks
	}
	return c
}

// AcquireMode is share.acquire.mode (KIP-1206), sent in ShareFetch v2.
type AcquireMode int8

const (
	// BatchOptimized (batch_optimized, the default) acquires whole fetched batches:
	// maxRecords is a soft limit checked before each batch.
	BatchOptimized AcquireMode = 0
	// RecordLimit (record_limit) acquires at most maxRecords records, splitting a
	// batch; the rest of the batch stays Available.
	RecordLimit AcquireMode = 1
)

// AcknowledgeType is one entry of ShareAcknowledge's AcknowledgeTypes
// (org.apache.kafka.clients.consumer.AcknowledgeType); 0 marks a gap (an offset with
// no record, archived).
type AcknowledgeType int8

const (
	AckGap     AcknowledgeType = 0
	AckAccept  AcknowledgeType = 1
	AckRelease AcknowledgeType = 2
	AckReject  AcknowledgeType = 3
	// AckRenew (KIP-1222) extends the acquisition lock; the record stays Acquired.
	AckRenew AcknowledgeType = 4
)
